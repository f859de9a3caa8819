//! Loose text: a command line with quotes, escapes and shell punctuation dropped, in which
//! deny patterns are searched when the command cannot be fully analysed.

use crate::policy::unwrap::command_basename;

/// The loose texts a deny pattern is searched in when a command cannot be fully analysed:
/// quotes removed (`g""it push`), quotes as separators (`env -S'git push'`), and `=`, `,`, `:`
/// and the script's own `IFS` characters as separators (`c=git push`, `IFS=,; c=rm,-rf,x`).
pub fn loose_variants(raw: &str, separators: &str) -> Vec<String> {
    let quotes_apart: String = raw
        .chars()
        .map(|c| if c == '"' || c == '\'' { ' ' } else { c })
        .collect();
    let split: String = raw
        .chars()
        .map(|c| {
            if matches!(c, '=' | ',' | ':') || separators.contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let mut out = Vec::new();
    for text in [
        loose_text(raw),
        loose_text(&quotes_apart),
        loose_text(&split),
    ] {
        if !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

/// Text with quotes, escapes and shell punctuation replaced by spaces, lower-cased and
/// whitespace-collapsed; `rm` flag spellings are normalized too.
pub fn loose_text(raw: &str) -> String {
    let replaced: String = raw
        .chars()
        .map(|c| match c {
            '"' | '\'' | '\\' => '\0',
            ';' | '&' | '|' | '(' | ')' | '`' | '{' | '}' | '<' | '>' | '$' | '\n' | '\r'
            | '\t' => ' ',
            other => other,
        })
        .filter(|c| *c != '\0')
        .collect();
    let words: Vec<String> = replaced
        .split_whitespace()
        .map(|w| command_basename_if_path(&w.to_lowercase()))
        .collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    let mut index = 0;
    while index < words.len() {
        out.push(words[index].clone());
        if words[index] == "rm" {
            // Collect the flag run after rm and re-spell it when it means -rf.
            let mut end = index + 1;
            let (mut recursive, mut force) = (false, false);
            while end < words.len() && words[end].starts_with('-') {
                let flag = &words[end];
                recursive |=
                    flag == "--recursive" || (!flag.starts_with("--") && flag.contains('r'));
                force |= flag == "--force" || (!flag.starts_with("--") && flag.contains('f'));
                end += 1;
            }
            if recursive && force {
                out.push("-rf".to_string());
                index = end;
                continue;
            }
        }
        index += 1;
    }
    out.join(" ")
}

fn command_basename_if_path(word: &str) -> String {
    if word.starts_with('/') && !word.ends_with('/') {
        command_basename(word)
    } else {
        word.to_string()
    }
}
