//! Shell command analysis with the real bash grammar (tree-sitter-bash): every simple command
//! a script can run — through lists, pipelines, subshells, groups, control flow, functions,
//! command and process substitution, heredocs fed to shells, `sh -c`/`eval` strings (parsed
//! again) and wrapper commands — plus the files it redirects output into.
//!
//! The analysis never claims certainty it lacks: a syntax error, a command name only known at
//! run time, a shell reading commands from a pipe, inline interpreter code, … are recorded in
//! [`ShellAnalysis::uncertain`], and the policy then fails closed.

use std::collections::HashMap;

use tree_sitter::{Node, Parser};

use super::unwrap::{command_basename, unwrap_command};
use super::words::{
    Word, decode_ansi_c, display_words, expand_braces, unescape_double_quoted, unescape_unquoted,
};

/// How deeply script strings (`sh -c "…"` inside `eval "…"` …) are re-parsed.
const MAX_NESTING: usize = 8;
/// Scripts longer than this are not parsed (they are treated as uncertain).
const MAX_SCRIPT_BYTES: usize = 256 * 1024;

/// One simple command found in a script.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCommand {
    /// The command as written (after quote removal).
    pub display: String,
    /// The command lines it stands for: as written, then each unwrapped or normalized form.
    pub forms: Vec<Vec<Word>>,
    /// The directory it runs in, relative to where the script starts (`None`: unknown).
    pub cwd: Option<String>,
}

/// What a script would run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShellAnalysis {
    /// Every simple command, in source order (nested scripts after their parent command).
    pub commands: Vec<ParsedCommand>,
    /// Files the script writes through redirections or `tee`, relative to the directory the
    /// script starts in (or absolute).
    pub write_paths: Vec<String>,
    /// Why the analysis cannot be sure it saw everything that runs.
    pub uncertain: Vec<String>,
    /// Every script text analyzed: the input and each re-parsed string.
    pub sources: Vec<String>,
}

impl ShellAnalysis {
    /// Whether the analysis is complete.
    pub fn is_certain(&self) -> bool {
        self.uncertain.is_empty()
    }
}

/// Analyzes a shell script.
pub fn analyze(script: &str) -> ShellAnalysis {
    let mut walker = Walker {
        analysis: ShellAnalysis::default(),
        vars: HashMap::new(),
        cwd: Some(String::new()),
        depth: 0,
    };
    walker.analyze_source(script, None);
    walker.analysis.uncertain.dedup();
    walker.analysis
}

struct Walker {
    analysis: ShellAnalysis,
    /// Variables assigned a literal earlier in the script (`a=git; $a push`).
    vars: HashMap<String, String>,
    /// Directory relative to the start (`None` after `cd` somewhere only known at run time).
    cwd: Option<String>,
    depth: usize,
}

fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.start_byte()..node.end_byte()).unwrap_or("")
}

fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn clip(text: &str) -> String {
    crate::text::clip_chars(text.trim(), 80)
}

impl Walker {
    fn uncertain(&mut self, reason: String) {
        if !self.analysis.uncertain.contains(&reason) {
            self.analysis.uncertain.push(reason);
        }
    }

    fn analyze_source(&mut self, src: &str, saved_cwd: Option<Option<String>>) {
        if self.depth >= MAX_NESTING {
            self.uncertain(format!("`{}` is nested too deeply to analyze", clip(src)));
            return;
        }
        if src.len() > MAX_SCRIPT_BYTES {
            self.uncertain("the script is too long to analyze".to_string());
            return;
        }
        self.analysis.sources.push(src.to_string());
        let mut parser = Parser::new();
        if parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .is_err()
        {
            self.uncertain("the bash grammar could not be loaded".to_string());
            return;
        }
        let Some(tree) = parser.parse(src, None) else {
            self.uncertain(format!("`{}` could not be parsed", clip(src)));
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.uncertain(format!("`{}` has a syntax error", clip(src)));
        }
        self.depth += 1;
        self.walk(root, src);
        self.depth -= 1;
        if let Some(cwd) = saved_cwd {
            self.cwd = cwd;
        }
    }

    fn walk_children(&mut self, node: Node<'_>, src: &str) {
        for child in named_children(node) {
            self.walk(child, src);
        }
    }

    fn walk(&mut self, node: Node<'_>, src: &str) {
        match node.kind() {
            "command" => self.command(node, src, None),
            "redirected_statement" => self.redirected(node, src),
            "variable_assignment" => {
                self.assign(node, src);
                self.walk_children(node, src);
            }
            "file_redirect" => self.redirect(node, src),
            "subshell" | "command_substitution" | "process_substitution" => {
                let saved = self.cwd.clone();
                self.walk_children(node, src);
                self.cwd = saved;
            }
            "comment" => {}
            _ => self.walk_children(node, src),
        }
    }

    fn redirected(&mut self, node: Node<'_>, src: &str) {
        let mut stdin = None;
        let mut body = None;
        let mut redirects = Vec::new();
        for child in named_children(node) {
            match child.kind() {
                "heredoc_redirect" => {
                    for part in named_children(child) {
                        if part.kind() == "heredoc_body" {
                            stdin = Some(text(part, src).to_string());
                        }
                        self.walk(part, src);
                    }
                }
                "herestring_redirect" => {
                    stdin = Some(self.herestring(child, src));
                    self.walk_children(child, src);
                }
                "file_redirect" => redirects.push(child),
                _ if body.is_none() => body = Some(child),
                _ => self.walk(child, src),
            }
        }
        match body {
            Some(body) if body.kind() == "command" => self.command(body, src, stdin),
            Some(body) => self.walk(body, src),
            None => {}
        }
        // After the body: in `cd dir && cmd > file` the redirection belongs to `cmd`.
        for redirect in redirects {
            self.redirect(redirect, src);
        }
    }

    fn herestring(&mut self, node: Node<'_>, src: &str) -> String {
        named_children(node)
            .into_iter()
            .flat_map(|child| self.eval_word(child, src))
            .map(|word| word.text)
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn command(&mut self, node: Node<'_>, src: &str, mut stdin: Option<String>) {
        let mut words = Vec::new();
        for child in named_children(node) {
            match child.kind() {
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    words.extend(self.eval_word(inner, src));
                    self.walk_children(child, src);
                }
                "variable_assignment" => self.walk_children(child, src),
                "file_redirect" => self.redirect(child, src),
                "herestring_redirect" => {
                    stdin = Some(self.herestring(child, src));
                    self.walk_children(child, src);
                }
                "heredoc_redirect" => self.walk(child, src),
                "comment" => {}
                _ => {
                    words.extend(self.eval_word(child, src));
                    self.walk(child, src);
                }
            }
        }
        if words.is_empty() {
            return;
        }
        let unwrapped = unwrap_command(&words);
        for reason in unwrapped.uncertain {
            self.uncertain(reason);
        }
        for form in &unwrapped.forms {
            match form.first().map(|w| w.text.as_str()) {
                Some("tee") => {
                    for word in form[1..].iter().filter(|w| !w.is_option()) {
                        self.write_path(word);
                    }
                }
                Some("cd" | "pushd") => self.change_dir(&form[1..]),
                _ => {}
            }
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
                    let saved = self.cwd.clone();
                    self.analyze_source(&script, Some(saved));
                }
                None => self.uncertain(format!(
                    "`{}` reads commands from standard input, which is not analyzed",
                    clip(&display_words(&words))
                )),
            }
        }
    }

    fn redirect(&mut self, node: Node<'_>, src: &str) {
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

    fn write_path(&mut self, word: &Word) {
        if word.dynamic {
            self.uncertain(format!(
                "output goes to `{}`, a path only known at run time",
                word.text
            ));
            return;
        }
        let path = word.text.as_str();
        if matches!(
            path,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
        ) || path.starts_with("/dev/fd/")
        {
            return;
        }
        let path = expand_tilde(path);
        if path.starts_with('/') {
            self.analysis.write_paths.push(path);
            return;
        }
        match &self.cwd {
            Some(cwd) => {
                let joined = join(cwd, &path);
                self.analysis.write_paths.push(joined);
            }
            None => {
                self.uncertain(format!(
                    "output goes to `{path}` after `cd` to a directory only known at run time"
                ));
                self.analysis.write_paths.push(path);
            }
        }
    }

    fn change_dir(&mut self, args: &[Word]) {
        let target = args.iter().find(|w| !w.is_option() || w.text == "-");
        self.cwd = match target {
            None => Some(expand_tilde("~")),
            Some(word) if word.dynamic || word.text == "-" => None,
            Some(word) => {
                let path = expand_tilde(&word.text);
                if path.starts_with('/') {
                    Some(path)
                } else {
                    self.cwd.as_ref().map(|cwd| join(cwd, &path))
                }
            }
        };
    }

    fn assign(&mut self, node: Node<'_>, src: &str) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        if name.kind() != "variable_name" {
            return;
        }
        let name = text(name, src).to_string();
        let value = match node.child_by_field_name("value") {
            Some(value) => self.eval_word(value, src),
            None => vec![Word::literal("")],
        };
        match value.as_slice() {
            [word] if !word.dynamic => {
                self.vars.insert(name, word.text.clone());
            }
            _ => {
                self.vars.remove(&name);
            }
        }
    }

    fn lookup(&self, name: &str, source: &str) -> Word {
        match self.vars.get(name) {
            Some(value) => Word::literal(value.clone()),
            None => Word::dynamic(source),
        }
    }

    /// The words one argument node stands for (brace expansion may give several).
    fn eval_word(&mut self, node: Node<'_>, src: &str) -> Vec<Word> {
        let raw = text(node, src);
        match node.kind() {
            "word" => self.unquoted_word(raw),
            "concatenation"
                if named_children(node)
                    .iter()
                    .all(|child| child.kind() == "word") =>
            {
                self.unquoted_word(raw)
            }
            "concatenation" => {
                let mut results = vec![Word::literal("")];
                for child in named_children(node) {
                    let parts = self.eval_word(child, src);
                    let mut next = Vec::new();
                    for base in &results {
                        for part in &parts {
                            next.push(base.concat(part));
                        }
                    }
                    if next.len() > super::words::MAX_BRACE_EXPANSION {
                        return vec![Word::dynamic(raw)];
                    }
                    results = next;
                }
                results
            }
            "number" => vec![Word::literal(raw)],
            "raw_string" => vec![Word::literal(strip_delimiters(raw, 1, 1))],
            "ansi_c_string" => vec![Word::literal(decode_ansi_c(strip_delimiters(raw, 2, 1)))],
            "string" | "translated_string" => vec![self.double_quoted(node, src)],
            "simple_expansion" => {
                let name = raw.trim_start_matches('$');
                vec![self.lookup(name, raw)]
            }
            "expansion" => {
                let children = named_children(node);
                match children.as_slice() {
                    [only]
                        if only.kind() == "variable_name"
                            && raw == format!("${{{}}}", text(*only, src)) =>
                    {
                        vec![self.lookup(text(*only, src), raw)]
                    }
                    _ => vec![Word::dynamic(raw)],
                }
            }
            _ => vec![Word::dynamic(raw)],
        }
    }

    fn unquoted_word(&mut self, raw: &str) -> Vec<Word> {
        let glob = has_unquoted_glob(raw);
        let value = unescape_unquoted(raw);
        if raw.contains('{') && raw.contains(',') {
            match expand_braces(&value) {
                Some(expanded) => {
                    return expanded
                        .into_iter()
                        .map(|text| Word {
                            text,
                            dynamic: false,
                            glob,
                        })
                        .collect();
                }
                None => {
                    self.uncertain(format!("`{}` expands to too many words", clip(raw)));
                    return vec![Word::dynamic(raw)];
                }
            }
        }
        vec![Word {
            text: value,
            dynamic: false,
            glob,
        }]
    }

    fn double_quoted(&mut self, node: Node<'_>, src: &str) -> Word {
        let raw = text(node, src);
        let open = if node.kind() == "translated_string" {
            2
        } else {
            1
        };
        let inner_start = node.start_byte() + open.min(raw.len());
        let inner_end = node.end_byte().saturating_sub(1).max(inner_start);
        let mut word = Word::literal("");
        let mut position = inner_start;
        for child in named_children(node) {
            let gap = src.get(position..child.start_byte()).unwrap_or("");
            word = word.concat(&Word::literal(unescape_double_quoted(gap)));
            let part = match child.kind() {
                "string_content" => Word::literal(unescape_double_quoted(text(child, src))),
                "simple_expansion" | "expansion" => self
                    .eval_word(child, src)
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| Word::dynamic(text(child, src))),
                _ => Word::dynamic(text(child, src)),
            };
            word = word.concat(&part);
            position = child.end_byte();
        }
        let gap = src.get(position..inner_end).unwrap_or("");
        word = word.concat(&Word::literal(unescape_double_quoted(gap)));
        if word.dynamic {
            Word::dynamic(raw)
        } else {
            word
        }
    }
}

fn strip_delimiters(raw: &str, open: usize, close: usize) -> &str {
    if raw.len() >= open + close {
        raw.get(open..raw.len() - close).unwrap_or("")
    } else {
        ""
    }
}

fn has_unquoted_glob(raw: &str) -> bool {
    let mut escaped = false;
    for ch in raw.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        match ch {
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

fn expand_tilde(path: &str) -> String {
    let home = || std::env::var("HOME").unwrap_or_else(|_| "/nonexistent-home".to_string());
    if path == "~" {
        home()
    } else if let Some(rest) = path.strip_prefix("~/") {
        format!("{}/{rest}", home().trim_end_matches('/'))
    } else {
        path.to_string()
    }
}

fn join(base: &str, path: &str) -> String {
    if base.is_empty() {
        path.to_string()
    } else {
        format!("{}/{path}", base.trim_end_matches('/'))
    }
}

/// The command word of every simple command (basename, lower case), for quick listings.
pub fn command_names(analysis: &ShellAnalysis) -> Vec<String> {
    analysis
        .commands
        .iter()
        .filter_map(|command| command.forms.first()?.first())
        .map(|word| command_basename(&word.text))
        .collect()
}

#[cfg(test)]
mod tests;
