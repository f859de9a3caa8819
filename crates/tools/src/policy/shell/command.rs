//! What one simple command amounts to once its words are known: its unwrapped forms (with
//! git aliases the script or its environment defines resolved), the files each form writes,
//! `cd`, and the scripts it hands to a shell, which are analysed in turn.

use super::{ParsedCommand, Walker, checks, clip, writes};
use crate::policy::unwrap::{Unwrapped, unwrap_command};
use crate::policy::words::{Word, display_words};

impl Walker {
    /// The non-recursive half of [`Self::command`]: kept out of the recursive frame, so deep
    /// nesting costs little stack per level.
    #[inline(never)]
    pub(super) fn finish_command(
        &mut self,
        words: Vec<Word>,
        mut env: Vec<(String, String)>,
        stdin: Option<String>,
    ) {
        let mut unwrapped = unwrap_command(&words);
        env.extend(unwrapped.env.iter().cloned());
        self.resolve_git_alias(&mut unwrapped, &env);
        for reason in std::mem::take(&mut unwrapped.unanalysable) {
            self.unanalysable(reason);
        }
        for (name, value) in std::mem::take(&mut unwrapped.git_alias_definitions) {
            self.git_aliases.insert(name, value);
        }
        for form in &unwrapped.forms {
            self.command_effects(form);
        }
        self.analysis.commands.push(ParsedCommand {
            display: display_words(&words),
            forms: unwrapped.forms,
            cwd: self.cwd.clone(),
        });
        for script in unwrapped.nested {
            let saved = self.cwd.clone();
            self.analyze_source(&script, Some(saved));
        }
        if unwrapped.shell_reads_stdin {
            match stdin {
                Some(script) => {
                    self.unanalysable(format!(
                        "`{}` runs a script fed through standard input (heredoc or here-string)",
                        clip(&display_words(&words))
                    ));
                    let saved = self.cwd.clone();
                    self.analyze_source(&script, Some(saved));
                }
                None => self.unanalysable(format!(
                    "`{}` reads commands from standard input, which is not analysed",
                    clip(&display_words(&words))
                )),
            }
        }
    }

    /// Files a command form writes, links it creates, and `cd`.
    fn command_effects(&mut self, form: &[Word]) {
        let Some(name) = form.first().map(|w| w.text.as_str()) else {
            return;
        };
        if matches!(name, "cd" | "pushd") {
            self.change_dir(&form[1..]);
            return;
        }
        if form[1..].iter().any(checks::subscript_word) {
            self.unanalysable(format!(
                "`{}` names an array element whose subscript bash evaluates as arithmetic",
                clip(&display_words(form))
            ));
        }
        let effects = writes::command_writes(form);
        for reason in effects.unanalysable {
            self.unanalysable(reason);
        }
        for word in &effects.paths {
            self.write_path(word);
        }
        for word in &effects.links {
            if let Some(path) = self.place(word)
                && !self.analysis.link_paths.contains(&path)
            {
                self.analysis.link_paths.push(path);
            }
        }
    }

    /// `git p` where the script (or `-c alias.p=…`, or `GIT_CONFIG_*` variables) defines `p`:
    /// the alias text is analysed as what runs.
    fn resolve_git_alias(&mut self, unwrapped: &mut Unwrapped, env: &[(String, String)]) {
        let Some((alias, rest)) = unwrapped.git_alias_use.take() else {
            return;
        };
        let from_env = env_git_aliases(env);
        let value = unwrapped
            .git_alias_inline
            .iter()
            .chain(from_env.iter())
            .find(|(name, _)| name.eq_ignore_ascii_case(&alias))
            .map(|(_, value)| value.clone())
            .or_else(|| self.git_aliases.get(&alias.to_lowercase()).cloned());
        let Some(value) = value else {
            return;
        };
        let tail = display_words(&rest);
        if let Some(shell) = value.strip_prefix('!') {
            unwrapped.nested.push(format!("{shell} {tail}"));
            return;
        }
        let mut words = vec![Word::literal("git")];
        words.extend(value.split_whitespace().map(Word::literal));
        words.extend(rest);
        let expanded = unwrap_command(&words);
        for form in expanded.forms {
            if !unwrapped.forms.contains(&form) {
                unwrapped.forms.push(form);
            }
        }
        unwrapped.nested.extend(expanded.nested);
        unwrapped.unanalysable.extend(expanded.unanalysable);
    }
}

/// Aliases set through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`.
fn env_git_aliases(env: &[(String, String)]) -> Vec<(String, String)> {
    let get = |name: &str| env.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v);
    let mut out = Vec::new();
    for (name, key) in env {
        let Some(index) = name.strip_prefix("GIT_CONFIG_KEY_") else {
            continue;
        };
        if let (Some(alias), Some(value)) = (
            key.to_lowercase()
                .strip_prefix("alias.")
                .map(str::to_string),
            get(&format!("GIT_CONFIG_VALUE_{index}")),
        ) {
            out.push((alias, value.clone()));
        }
    }
    out
}
