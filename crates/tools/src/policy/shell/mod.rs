//! Shell command analysis with the real bash grammar (tree-sitter-bash): every simple command
//! a script can run — through lists, pipelines, subshells, groups, control flow, functions,
//! command and process substitution, heredocs fed to shells, `sh -c`/`eval` strings (parsed
//! again) and wrapper commands — plus the files it writes.
//!
//! The analysis never claims certainty it lacks. Whatever the policy cannot follow to the end
//! (a command name built from a variable, `eval`, inline interpreter code, a program reading
//! its code from standard input, git aliases, bash arithmetic on variables, …) is recorded in
//! [`ShellAnalysis::unanalysable`], and such a command is never auto-approved on the parser's
//! word. Input nested deeper than the limits below is recorded in
//! [`ShellAnalysis::too_deep`], and the policy denies it: the walker never recurses without
//! bound over text a model wrote.
//!
//! This module holds the walk over the syntax tree; what one simple command amounts to is in
//! `command`, where its writes land in `places`, word evaluation in `eval`, the checks that
//! make a script unanalysable in `checks`, and the files commands write by themselves in
//! `writes`.

mod checks;
mod command;
mod eval;
mod places;
mod writes;

use std::collections::HashMap;

use tree_sitter::{Node, Parser};

use super::unwrap::command_basename;
use super::words::Word;

pub use checks::dangerous_variable;
pub use places::{expand_home, home_dir};

/// How deeply script strings (`sh -c "…"` inside `eval "…"` …) are re-parsed; deeper is denied.
pub const MAX_SOURCE_NESTING: usize = 8;
/// Deepest bracket nesting (`(`, `{`, `[`, counted in the raw text) a script may have; deeper
/// is denied before the text is even parsed.
pub const MAX_BRACKET_DEPTH: usize = 64;
/// Deepest syntax-tree nesting the walker follows; deeper is denied.
pub const MAX_NODE_DEPTH: usize = 64;
/// Scripts longer than this are not parsed (they are unanalysable).
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
    /// Files the script writes (redirections, `tee`, `cp`, `sed -i`, …), relative to the
    /// directory the script starts in (or absolute).
    pub write_paths: Vec<String>,
    /// Links the script creates (`ln`, `cp -s`), same form as [`Self::write_paths`].
    pub link_paths: Vec<String>,
    /// Why the policy cannot be sure it saw everything that runs (empty: fully analysed).
    pub unanalysable: Vec<String>,
    /// Nesting limits the text exceeds: the call is denied.
    pub too_deep: Vec<String>,
    /// Every script text analyzed: the input and each re-parsed string.
    pub sources: Vec<String>,
    /// Characters the script assigns to `IFS` (word separators the loose text must split on).
    pub separators: String,
}

impl ShellAnalysis {
    /// Whether the analysis is complete.
    pub fn is_analysable(&self) -> bool {
        self.unanalysable.is_empty() && self.too_deep.is_empty()
    }
}

/// Analyzes a shell script.
pub fn analyze(script: &str) -> ShellAnalysis {
    let mut walker = Walker {
        analysis: ShellAnalysis::default(),
        vars: HashMap::new(),
        git_aliases: HashMap::new(),
        cwd: Some(String::new()),
        source_depth: 0,
        node_depth: 0,
    };
    walker.analyze_source(script, None);
    walker.analysis
}

pub(super) struct Walker {
    analysis: ShellAnalysis,
    /// Variables assigned a literal earlier in the script (`a=git; $a push`).
    vars: HashMap<String, String>,
    /// Git aliases the script defines (`git config alias.p push`).
    git_aliases: HashMap<String, String>,
    /// Directory relative to the start (`None` after `cd` somewhere only known at run time).
    cwd: Option<String>,
    source_depth: usize,
    node_depth: usize,
}

pub(super) fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.start_byte()..node.end_byte()).unwrap_or("")
}

pub(super) fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

pub(super) fn clip(text: &str) -> String {
    braincode_protocol::clip_chars_then_ellipsis(text.trim(), 80)
}

impl Walker {
    pub(super) fn unanalysable(&mut self, reason: String) {
        if !self.analysis.unanalysable.contains(&reason) {
            self.analysis.unanalysable.push(reason);
        }
    }

    fn too_deep(&mut self, reason: String) {
        if !self.analysis.too_deep.contains(&reason) {
            self.analysis.too_deep.push(reason);
        }
    }

    fn analyze_source(&mut self, src: &str, saved_cwd: Option<Option<String>>) {
        if self.source_depth >= MAX_SOURCE_NESTING {
            self.too_deep(format!(
                "`{}` nests shell scripts more than {MAX_SOURCE_NESTING} levels deep",
                clip(src)
            ));
            return;
        }
        if src.len() > MAX_SCRIPT_BYTES {
            self.unanalysable("the script is too long to analyse".to_string());
            self.analysis.sources.push(src.to_string());
            return;
        }
        let depth = checks::bracket_depth(src);
        if depth > MAX_BRACKET_DEPTH {
            self.too_deep(format!(
                "the command nests brackets {depth} levels deep (the limit is {MAX_BRACKET_DEPTH})"
            ));
            return;
        }
        self.analysis.sources.push(src.to_string());
        let Some(tree) = parse_bash(src) else {
            self.unanalysable(format!("`{}` could not be parsed", clip(src)));
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            self.unanalysable(format!("`{}` has a syntax error", clip(src)));
        }
        self.source_depth += 1;
        self.walk(root, src);
        self.source_depth -= 1;
        if let Some(cwd) = saved_cwd {
            self.cwd = cwd;
        }
    }

    fn walk_children(&mut self, node: Node<'_>, src: &str) {
        for child in named_children(node) {
            self.walk(child, src);
        }
    }

    pub(super) fn walk(&mut self, node: Node<'_>, src: &str) {
        if self.node_depth >= MAX_NODE_DEPTH {
            self.too_deep(format!(
                "the command's syntax nests more than {MAX_NODE_DEPTH} levels deep"
            ));
            return;
        }
        self.node_depth += 1;
        self.walk_node(node, src);
        self.node_depth -= 1;
    }

    fn walk_node(&mut self, node: Node<'_>, src: &str) {
        match node.kind() {
            "command" => self.command(node, src, None),
            "redirected_statement" => self.redirected(node, src),
            "variable_assignment" => {
                self.assign(node, src);
                self.walk_children(node, src);
            }
            "declaration_command" => {
                self.declaration(node, src);
                self.walk_children(node, src);
            }
            "file_redirect" => self.redirect(node, src),
            "subshell" | "command_substitution" | "process_substitution" => {
                let saved = self.cwd.clone();
                self.walk_children(node, src);
                self.cwd = saved;
            }
            "arithmetic_expansion" | "c_style_for_statement" | "subscript" => {
                self.arithmetic(node, src);
                self.walk_children(node, src);
            }
            "compound_statement" if text(node, src).starts_with("((") => {
                self.arithmetic(node, src);
                self.walk_children(node, src);
            }
            "test_command" => {
                self.test_command(node, src);
                self.walk_children(node, src);
            }
            "list" => self.list(node, src),
            "comment" => {}
            _ => self.walk_children(node, src),
        }
    }

    /// `a && b && c` nests to the left, one level per command: walk the spine without
    /// recursion so a long list is not mistaken for deep nesting.
    fn list(&mut self, node: Node<'_>, src: &str) {
        let mut pending: Vec<Vec<Node<'_>>> = Vec::new();
        let mut current = node;
        loop {
            let children = named_children(current);
            match children.split_first() {
                Some((first, rest)) if current.kind() == "list" && first.kind() == "list" => {
                    pending.push(rest.to_vec());
                    current = *first;
                }
                _ => break,
            }
        }
        self.walk_children(current, src);
        for nodes in pending.into_iter().rev() {
            for child in nodes {
                self.walk(child, src);
            }
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
        let mut env: Vec<(String, String)> = Vec::new();
        for child in named_children(node) {
            match child.kind() {
                "command_name" => {
                    let inner = child.named_child(0).unwrap_or(child);
                    words.extend(self.eval_argument(inner, src));
                    self.walk_children(child, src);
                }
                "variable_assignment" => {
                    if let Some((name, value)) = self.assignment(child, src) {
                        env.push((name, value.text));
                    }
                    self.walk_children(child, src);
                }
                "file_redirect" => self.redirect(child, src),
                "herestring_redirect" => {
                    stdin = Some(self.herestring(child, src));
                    self.walk_children(child, src);
                }
                "heredoc_redirect" => self.walk(child, src),
                "comment" => {}
                _ => {
                    words.extend(self.eval_argument(child, src));
                    self.walk(child, src);
                }
            }
        }
        if !words.is_empty() {
            self.finish_command(words, env, stdin);
        }
    }
}

/// Parses bash text with a parser kept per thread (building one per call costs time).
fn parse_bash(src: &str) -> Option<tree_sitter::Tree> {
    thread_local! {
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    PARSER.with(|cell| {
        // A nested script is parsed while an outer tree is walked, never while parsing: the
        // borrow is free here; if it were not, fall back to a fresh parser.
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return fresh_parser()?.parse(src, None);
        };
        if slot.is_none() {
            *slot = fresh_parser();
        }
        slot.as_mut()?.parse(src, None)
    })
}

fn fresh_parser() -> Option<Parser> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    Some(parser)
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
