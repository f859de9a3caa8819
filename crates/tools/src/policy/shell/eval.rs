//! From syntax nodes to words: quote removal, variables assigned earlier in the script, word
//! splitting of unquoted expansions (with the script's own `IFS`), brace expansion.

use tree_sitter::Node;

use super::{Walker, checks, clip, home_dir, named_children, text};
use crate::policy::words::{
    MAX_BRACE_EXPANSION, Word, decode_ansi_c, expand_braces, unescape_double_quoted,
    unescape_unquoted,
};

const DEFAULT_IFS: &str = " \t\n";

impl Walker {
    /// The separators unquoted expansions are split on right now.
    fn ifs(&self) -> String {
        self.vars
            .get("IFS")
            .cloned()
            .unwrap_or_else(|| DEFAULT_IFS.to_string())
    }

    /// The words one command argument stands for: [`Self::eval_word`] plus word splitting of
    /// an unquoted expansion whose value is known (`c='git push'; $c` is two words).
    pub(super) fn eval_argument(&mut self, node: Node<'_>, src: &str) -> Vec<Word> {
        let words = self.eval_word(node, src);
        let ifs = self.ifs();
        match node.kind() {
            "simple_expansion" | "expansion" => words
                .into_iter()
                .flat_map(|word| {
                    if word.dynamic || ifs.is_empty() || !word.text.contains(|c| ifs.contains(c)) {
                        return vec![word];
                    }
                    word.text
                        .split(|c| ifs.contains(c))
                        .filter(|part| !part.is_empty())
                        .map(Word::expanded)
                        .collect()
                })
                .collect(),
            "concatenation" => {
                let splits = named_children(node).iter().any(|child| {
                    matches!(child.kind(), "simple_expansion" | "expansion")
                        && self
                            .eval_word(*child, src)
                            .iter()
                            .any(|w| !ifs.is_empty() && w.text.contains(|c| ifs.contains(c)))
                });
                if splits {
                    vec![Word::dynamic(text(node, src))]
                } else {
                    words
                }
            }
            _ => words,
        }
    }

    /// The words one argument node stands for (brace expansion may give several).
    pub(super) fn eval_word(&mut self, node: Node<'_>, src: &str) -> Vec<Word> {
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
                    let parts = match child.kind() {
                        // A concatenation never nests another: keep this recursion flat.
                        "concatenation" => vec![Word::dynamic(text(child, src))],
                        _ => self.eval_word(child, src),
                    };
                    let mut next = Vec::new();
                    for base in &results {
                        for part in &parts {
                            next.push(base.concat(part));
                        }
                    }
                    if next.len() > MAX_BRACE_EXPANSION {
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

    fn lookup(&self, name: &str, source: &str) -> Word {
        match self.vars.get(name) {
            Some(value) => Word::expanded(value.clone()),
            None if name == "HOME" => match home_dir() {
                Some(home) => Word::expanded(home),
                None => Word::dynamic(source),
            },
            None => Word::dynamic(source),
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
                            expanded: false,
                        })
                        .collect();
                }
                None => {
                    self.unanalysable(format!("`{}` expands to too many words", clip(raw)));
                    return vec![Word::dynamic(raw)];
                }
            }
        }
        vec![Word {
            text: value,
            dynamic: false,
            glob,
            expanded: false,
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

    /// The name and value of `name=value` (checked against the variables that change what
    /// commands do); `None` for array elements, which the arithmetic check handles.
    pub(super) fn assignment(&mut self, node: Node<'_>, src: &str) -> Option<(String, Word)> {
        let name = node.child_by_field_name("name")?;
        if name.kind() != "variable_name" {
            return None;
        }
        let name = text(name, src).to_string();
        if let Some(reason) = checks::dangerous_variable(&name) {
            self.unanalysable(format!("it sets {name}, which {reason}"));
        }
        let value = match node.child_by_field_name("value") {
            Some(value) if value.kind() == "array" => Word::dynamic(text(value, src)),
            Some(value) => {
                let words = self.eval_word(value, src);
                match words.as_slice() {
                    [word] => word.clone(),
                    _ => Word::dynamic(text(value, src)),
                }
            }
            None => Word::literal(""),
        };
        Some((name, value))
    }

    /// A lasting assignment (`a=git`, `export a=git`): remembered for later expansions.
    pub(super) fn assign(&mut self, node: Node<'_>, src: &str) {
        let appends = text(node, src).contains("+=");
        let Some((name, value)) = self.assignment(node, src) else {
            return;
        };
        if value.dynamic || appends {
            self.vars.remove(&name);
            return;
        }
        if name == "IFS" {
            self.analysis.separators.push_str(&value.text);
        }
        self.vars.insert(name, value.text);
    }

    /// `declare`/`typeset`/`local`/`export`/`readonly`: integer and name-reference attributes
    /// change what later assignments do; exported names are checked like assignments.
    pub(super) fn declaration(&mut self, node: Node<'_>, src: &str) {
        for child in named_children(node) {
            let value = text(child, src);
            match child.kind() {
                "word" if value.starts_with('-') || value.starts_with('+') => {
                    if value.contains('i') {
                        self.unanalysable(format!(
                            "`{}` declares an integer variable: assignments to it are evaluated as arithmetic",
                            clip(text(node, src))
                        ));
                    }
                    if value.contains('n') {
                        self.unanalysable(format!(
                            "`{}` declares a name reference: assignments through it change another variable",
                            clip(text(node, src))
                        ));
                    }
                }
                "variable_name" | "word" => {
                    if let Some(reason) = checks::dangerous_variable(value) {
                        self.unanalysable(format!("it exports {value}, which {reason}"));
                    }
                }
                _ => {}
            }
        }
    }
}

pub(super) fn strip_delimiters(raw: &str, open: usize, close: usize) -> &str {
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
