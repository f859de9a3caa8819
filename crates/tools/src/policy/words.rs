//! Words of a simple command after quote removal, and the small lexical helpers the shell
//! analysis needs (escapes, ANSI-C strings, brace expansion).

/// One word of a simple command, after quotes and escapes are removed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Word {
    /// The word's value; for a dynamic word, its source text (`$CMD`, `$(…)`).
    pub text: String,
    /// Whether the value is only known at run time (expansions, substitutions).
    pub dynamic: bool,
    /// Whether an unquoted glob character (`*`, `?`, `[`) makes the shell expand it.
    pub glob: bool,
    /// Whether (part of) the value came from a parameter expansion, even one whose value is
    /// known (`c=git; $c push`): a command name built that way is never trusted.
    pub expanded: bool,
}

impl Word {
    /// A word whose value is known.
    pub fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            dynamic: false,
            glob: false,
            expanded: false,
        }
    }

    /// A word only known at run time.
    pub fn dynamic(source: impl Into<String>) -> Self {
        Self {
            text: source.into(),
            dynamic: true,
            glob: false,
            expanded: true,
        }
    }

    /// The word as a literal, if it is one.
    pub fn as_literal(&self) -> Option<&str> {
        (!self.dynamic).then_some(self.text.as_str())
    }

    /// Whether the literal value starts an option (`-x`, `--long`).
    pub fn is_option(&self) -> bool {
        !self.dynamic && self.text.starts_with('-') && self.text.len() > 1
    }

    /// A word whose value is known but came from a parameter expansion.
    pub fn expanded(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            dynamic: false,
            glob: false,
            expanded: true,
        }
    }

    /// Concatenates two adjacent parts of one word.
    pub fn concat(&self, other: &Word) -> Word {
        Word {
            text: format!("{}{}", self.text, other.text),
            dynamic: self.dynamic || other.dynamic,
            glob: self.glob || other.glob,
            expanded: self.expanded || other.expanded,
        }
    }
}

/// Renders words for display, quoting the ones that would otherwise split.
pub fn display_words(words: &[Word]) -> String {
    words
        .iter()
        .map(|word| {
            if word.dynamic {
                word.text.clone()
            } else if word.text.is_empty()
                || word
                    .text
                    .chars()
                    .any(|c| c.is_whitespace() || "'\"\\$`;&|<>()".contains(c))
            {
                format!("'{}'", word.text.replace('\'', "'\\''"))
            } else {
                word.text.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Removes backslash escapes from an unquoted word (`\g` → `g`, backslash-newline → nothing).
pub fn unescape_unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// Removes the escapes that are special inside double quotes.
pub fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            match chars.peek().copied() {
                Some(next @ ('"' | '\\' | '$' | '`')) => {
                    out.push(next);
                    chars.next();
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(ch),
            }
        } else {
            out.push(ch);
        }
    }
    out
}

/// Decodes the body of an ANSI-C string (`$'…'`, without the `$'` and `'`).
pub fn decode_ansi_c(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let chars: Vec<char> = body.chars().collect();
    let mut index = 0;
    while index < chars.len() {
        let ch = chars[index];
        index += 1;
        if ch != '\\' || index >= chars.len() {
            out.push(ch);
            continue;
        }
        let escape = chars[index];
        index += 1;
        let simple = match escape {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(simple) = simple {
            out.push(simple);
            continue;
        }
        let (radix, max_digits) = match escape {
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            '0'..='7' => {
                index -= 1;
                (8, 3)
            }
            'c' => {
                if let Some(control) = chars.get(index) {
                    index += 1;
                    out.push(char::from((*control as u8) & 0x1f));
                }
                continue;
            }
            other => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        let mut digits = String::new();
        while digits.len() < max_digits && index < chars.len() && chars[index].is_digit(radix) {
            digits.push(chars[index]);
            index += 1;
        }
        match u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32)
        {
            Some(decoded) => out.push(decoded),
            None => {
                out.push('\\');
                out.push(escape);
                out.push_str(&digits);
            }
        }
    }
    out
}

/// The most words one brace expansion may produce before the analysis gives up on it.
pub const MAX_BRACE_EXPANSION: usize = 64;

/// Expands `{a,b}` alternatives in an unquoted word (`g{it,o} push` → `git`, `go`). Returns
/// `None` when the expansion would exceed [`MAX_BRACE_EXPANSION`] words.
pub fn expand_braces(text: &str) -> Option<Vec<String>> {
    let mut results = vec![String::new()];
    expand_into(text, &mut results)?;
    Some(results)
}

fn expand_into(text: &str, results: &mut Vec<String>) -> Option<()> {
    let bytes = text.as_bytes();
    let mut index = 0;
    let mut literal_start = 0;
    while index < bytes.len() {
        if bytes[index] == b'{'
            && let Some((end, alternatives)) = brace_group(text, index)
        {
            let prefix = &text[literal_start..index];
            for result in results.iter_mut() {
                result.push_str(prefix);
            }
            let mut next = Vec::new();
            for alternative in alternatives {
                let mut expanded = vec![String::new()];
                expand_into(alternative, &mut expanded)?;
                for base in results.iter() {
                    for tail in &expanded {
                        next.push(format!("{base}{tail}"));
                        if next.len() > MAX_BRACE_EXPANSION {
                            return None;
                        }
                    }
                }
            }
            *results = next;
            index = end + 1;
            literal_start = index;
            continue;
        }
        index += 1;
    }
    let rest = &text[literal_start..];
    for result in results.iter_mut() {
        result.push_str(rest);
    }
    Some(())
}

/// For a `{` at `open`, the matching `}` and the top-level comma-separated alternatives, if
/// the group has at least one top-level comma.
fn brace_group(text: &str, open: usize) -> Option<(usize, Vec<&str>)> {
    let bytes = text.as_bytes();
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut part_start = open + 1;
    for (index, &byte) in bytes.iter().enumerate().skip(open) {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    parts.push(&text[part_start..index]);
                    return (parts.len() > 1).then_some((index, parts));
                }
            }
            b',' if depth == 1 => {
                parts.push(&text[part_start..index]);
                part_start = index + 1;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(unescape_unquoted("\\git"), "git");
        assert_eq!(unescape_unquoted("a\\ b"), "a b");
        assert_eq!(unescape_double_quoted("a\\\"b\\n"), "a\"b\\n");
        assert_eq!(decode_ansi_c("\\x67it"), "git");
        assert_eq!(decode_ansi_c("\\147it\\t"), "git\t");
        assert_eq!(decode_ansi_c("\\u0067"), "g");
    }

    #[test]
    fn braces() {
        assert_eq!(
            expand_braces("git {push,status}"),
            Some(vec!["git push".to_string(), "git status".to_string()])
        );
        assert_eq!(
            expand_braces("g{i,o}t"),
            Some(vec!["git".to_string(), "got".to_string()])
        );
        assert_eq!(expand_braces("{a}"), Some(vec!["{a}".to_string()]));
        assert_eq!(
            expand_braces("x{a,{b,c}}"),
            Some(vec!["xa".into(), "xb".into(), "xc".into()])
        );
        assert_eq!(expand_braces("{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}"), None);
    }

    #[test]
    fn display_quotes_spaces() {
        let words = vec![
            Word::literal("echo"),
            Word::literal("a b"),
            Word::dynamic("$x"),
        ];
        assert_eq!(display_words(&words), "echo 'a b' $x");
    }
}
