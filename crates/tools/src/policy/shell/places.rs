//! Where a script's writes land: redirections, paths placed against the directory `cd`
//! moved to, and `~`/`$HOME` expanded to the home directory.

use tree_sitter::Node;

use super::Walker;
use crate::policy::words::Word;

impl Walker {
    pub(super) fn redirect(&mut self, node: Node<'_>, src: &str) {
        let mut cursor = node.walk();
        let operator = node
            .children(&mut cursor)
            .find(|child| !child.is_named())
            .map(|child| child.kind().to_string())
            .unwrap_or_default();
        let Some(destination) = node.child_by_field_name("destination") else {
            return;
        };
        self.walk(destination, src);
        if !matches!(
            operator.as_str(),
            ">" | ">>" | "&>" | "&>>" | ">|" | "<>" | ">&"
        ) {
            return;
        }
        if destination.kind() == "number" {
            return;
        }
        for word in self.eval_word(destination, src) {
            if operator == ">&" && (word.text == "-" || word.text.parse::<u32>().is_ok()) {
                continue;
            }
            self.write_path(&word);
        }
    }

    /// Where a written path lands, relative to the start directory (or absolute).
    pub(super) fn place(&mut self, word: &Word) -> Option<String> {
        if word.dynamic {
            self.unanalysable(format!(
                "a file is written at `{}`, a path only known at run time",
                word.text
            ));
            return None;
        }
        let path = word.text.as_str();
        if matches!(
            path,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "-"
        ) || path.starts_with("/dev/fd/")
        {
            return None;
        }
        let path = expand_home(path);
        if path.starts_with('/') {
            return Some(path);
        }
        match &self.cwd {
            Some(cwd) => Some(join(cwd, &path)),
            None => {
                self.unanalysable(format!(
                    "a file is written at `{path}` after `cd` to a directory only known at run time"
                ));
                Some(path)
            }
        }
    }

    pub(super) fn write_path(&mut self, word: &Word) {
        if let Some(path) = self.place(word)
            && !self.analysis.write_paths.contains(&path)
        {
            self.analysis.write_paths.push(path);
        }
    }

    pub(super) fn change_dir(&mut self, args: &[Word]) {
        let target = args.iter().find(|w| !w.is_option() || w.text == "-");
        self.cwd = match target {
            None => Some(expand_home("~")),
            Some(word) if word.dynamic || word.text == "-" => None,
            Some(word) => {
                let path = expand_home(&word.text);
                if path.starts_with('/') {
                    Some(path)
                } else {
                    self.cwd.as_ref().map(|cwd| join(cwd, &path))
                }
            }
        };
    }
}

/// The current user's home directory (`HOME`), without a trailing `/`.
pub fn home_dir() -> Option<String> {
    std::env::var("HOME")
        .ok()
        .filter(|home| home.starts_with('/'))
        .map(|home| {
            let trimmed = home.trim_end_matches('/');
            if trimmed.is_empty() {
                "/".to_string()
            } else {
                trimmed.to_string()
            }
        })
}

/// `~`, `~/x`, `$HOME/x` and `${HOME}/x` with the home directory put in; other text as is.
pub fn expand_home(path: &str) -> String {
    let home = || home_dir().unwrap_or_else(|| "/nonexistent-home".to_string());
    let join_home = |rest: &str| {
        let home = home();
        if home == "/" {
            format!("/{rest}")
        } else {
            format!("{home}/{rest}")
        }
    };
    if path == "~" || path == "$HOME" || path == "${HOME}" {
        return home();
    }
    for prefix in ["~/", "$HOME/", "${HOME}/"] {
        if let Some(rest) = path.strip_prefix(prefix) {
            return join_home(rest);
        }
    }
    path.to_string()
}

fn join(base: &str, path: &str) -> String {
    if base.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", base.trim_end_matches('/'))
    }
}
