//! Keyword highlighting for fenced code blocks: keywords, strings, comments and numbers of
//! the common languages, by a one-line scanner (no grammar, no syntect).

use ratatui::style::Style;
use ratatui::text::Span;

use super::theme;

/// What the scanner knows of a language.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Language {
    keywords: &'static [&'static str],
    /// Line-comment markers.
    comments: &'static [&'static str],
    /// Whether `'` opens a string (not in Rust, where it mostly marks lifetimes).
    single_quote_strings: bool,
    /// Whether keywords match in any case (SQL).
    any_case: bool,
}

const RUST: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "Some", "None", "Ok", "Err",
];
const PYTHON: &[&str] = &[
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "False", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "None", "nonlocal", "not", "or", "pass", "raise", "return", "True", "try", "while",
    "with", "yield", "self",
];
const JS: &[&str] = &[
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "from",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "return",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "yield",
];
const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "nil",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
    "true",
    "false",
];
const SHELL: &[&str] = &[
    "case", "do", "done", "elif", "else", "esac", "export", "fi", "for", "function", "if", "in",
    "local", "return", "then", "until", "while", "echo", "cd", "set",
];
const C_LIKE: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "final",
    "float",
    "for",
    "if",
    "import",
    "int",
    "long",
    "namespace",
    "new",
    "null",
    "nullptr",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "throw",
    "true",
    "try",
    "typedef",
    "union",
    "unsigned",
    "void",
    "while",
];
const SQL: &[&str] = &[
    "select",
    "from",
    "where",
    "insert",
    "into",
    "values",
    "update",
    "set",
    "delete",
    "create",
    "table",
    "index",
    "alter",
    "drop",
    "join",
    "left",
    "right",
    "inner",
    "on",
    "and",
    "or",
    "not",
    "null",
    "primary",
    "key",
    "references",
    "order",
    "by",
    "group",
    "limit",
    "as",
];

impl Language {
    /// The language of a fence label (`rust`, `py`, `ts`, …); `None` when unknown.
    pub(crate) fn from_label(label: &str) -> Option<Language> {
        let (keywords, comments, single_quote_strings): (_, &'static [&'static str], _) =
            match label.to_ascii_lowercase().as_str() {
                "rust" | "rs" => (RUST, &["//"], false),
                "python" | "py" => (PYTHON, &["#"], true),
                "javascript" | "js" | "jsx" | "typescript" | "ts" | "tsx" | "mjs" => {
                    (JS, &["//"], true)
                }
                "go" | "golang" => (GO, &["//"], true),
                "sh" | "bash" | "shell" | "zsh" | "console" => (SHELL, &["#"], true),
                "c" | "h" | "cpp" | "c++" | "java" | "kotlin" | "cs" | "csharp" | "swift" => {
                    (C_LIKE, &["//"], true)
                }
                "sql" => (SQL, &["--"], true),
                "toml" | "yaml" | "yml" | "ini" | "dockerfile" | "makefile" => (&[], &["#"], true),
                "json" | "jsonc" => (&[], &["//"], false),
                _ => return None,
            };
        Some(Language {
            keywords,
            comments,
            single_quote_strings,
            any_case: keywords == SQL,
        })
    }

    fn is_keyword(&self, word: &str) -> bool {
        if self.any_case {
            return self.keywords.iter().any(|k| k.eq_ignore_ascii_case(word));
        }
        self.keywords.contains(&word)
    }
}

/// One line of code as styled spans (`base` for plain text).
pub(crate) fn highlight(line: &str, language: Option<Language>, base: Style) -> Vec<Span<'static>> {
    let Some(language) = language else {
        return vec![Span::styled(line.to_string(), base)];
    };
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if language.comments.iter().any(|m| rest.starts_with(m)) {
            flush(&mut spans, &mut plain, base);
            spans.push(Span::styled(rest.to_string(), theme::COMMENT));
            return spans;
        }
        let token_end = if c == '"' || (c == '\'' && language.single_quote_strings) || c == '`' {
            Some((string_end(rest, c), theme::STRING))
        } else if c.is_ascii_digit() && !plain.ends_with(is_word_char) {
            Some((
                rest.find(|c: char| !is_word_char(c) && c != '.')
                    .unwrap_or(rest.len()),
                theme::NUMBER,
            ))
        } else if is_word_char(c) && !plain.ends_with(is_word_char) {
            let end = rest.find(|c: char| !is_word_char(c)).unwrap_or(rest.len());
            let word = &rest[..end];
            if language.is_keyword(word) {
                Some((end, theme::KEYWORD))
            } else {
                plain.push_str(word);
                rest = &rest[end..];
                continue;
            }
        } else {
            None
        };
        match token_end {
            Some((end, style)) => {
                flush(&mut spans, &mut plain, base);
                spans.push(Span::styled(rest[..end].to_string(), style));
                rest = &rest[end..];
            }
            None => {
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    flush(&mut spans, &mut plain, base);
    spans
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Byte index just past the string that opens `text` with `quote` (or the line's end).
fn string_end(text: &str, quote: char) -> usize {
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == quote && !escaped => return i + c.len_utf8(),
            _ => escaped = false,
        }
    }
    text.len()
}

fn flush(spans: &mut Vec<Span<'static>>, plain: &mut String, base: Style) {
    if !plain.is_empty() {
        spans.push(Span::styled(std::mem::take(plain), base));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn styled(line: &str, label: &str) -> Vec<(String, Style)> {
        highlight(line, Language::from_label(label), Style::new())
            .into_iter()
            .map(|s| (s.content.into_owned(), s.style))
            .collect()
    }

    #[test]
    fn keywords_strings_comments_and_numbers() {
        let spans = styled(r#"let s = "a \" b"; // note"#, "rust");
        assert_eq!(spans[0], ("let".into(), theme::KEYWORD));
        assert_eq!(spans[2], (r#""a \" b""#.into(), theme::STRING));
        assert_eq!(spans.last().unwrap(), &("// note".into(), theme::COMMENT));
        let spans = styled("x = 42 if y else 'z'", "python");
        assert!(spans.contains(&("42".into(), theme::NUMBER)));
        assert!(spans.contains(&("if".into(), theme::KEYWORD)));
        assert!(spans.contains(&("'z'".into(), theme::STRING)));
        // Lifetimes are not strings; identifiers with digits are not numbers.
        let spans = styled("fn f<'a>(x1: &'a str)", "rs");
        assert!(
            !spans
                .iter()
                .any(|(_, s)| *s == theme::STRING || *s == theme::NUMBER)
        );
        assert_eq!(
            styled("plain text", "text"),
            [("plain text".into(), Style::new())]
        );
        assert!(styled("SELECT id FROM t", "sql").contains(&("FROM".into(), theme::KEYWORD)));
    }
}
