//! Full-text search across every journal: case-insensitive, literal, a few matching lines per
//! session with the text around the match.

use std::path::{Path, PathBuf};

use maud::{Markup, html};
use regex::bytes::RegexBuilder;

use super::S;
use crate::i18n::tf;

/// Sessions with a match are listed up to this many.
const MAX_SESSIONS: usize = 50;
/// Matching lines shown per session.
const MAX_LINES: usize = 3;
/// Characters of context on each side of a match.
const CONTEXT: usize = 70;

/// One session's matches.
#[derive(Debug)]
pub(super) struct Hit {
    pub session: String,
    pub matches: usize,
    pub snippets: Vec<(String, String)>,
}

/// The result of a search.
#[derive(Debug, Default)]
pub(super) struct Hits {
    pub sessions: Vec<Hit>,
    pub files: usize,
    pub error: Option<String>,
}

pub(super) fn search(dir: &Path, query: &str) -> Hits {
    let regex = match RegexBuilder::new(&regex::escape(query))
        .case_insensitive(true)
        .build()
    {
        Ok(regex) => regex,
        Err(err) => {
            return Hits {
                error: Some(err.to_string()),
                ..Hits::default()
            };
        }
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .map(|p| {
                let modified = p
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (modified, p)
            })
            .collect(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(err) => {
            return Hits {
                error: Some(format!("cannot list {}: {err}", dir.display())),
                ..Hits::default()
            };
        }
    };
    // Newest first: the sessions a person is most likely looking for.
    files.sort_by_key(|file| std::cmp::Reverse(file.0));
    let mut hits = Hits {
        files: files.len(),
        ..Hits::default()
    };
    for (_, path) in files {
        if hits.sessions.len() >= MAX_SESSIONS {
            break;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let mut matches = 0;
        let mut snippets = Vec::new();
        let mut last_line_start = usize::MAX;
        for found in regex.find_iter(&bytes) {
            matches += 1;
            let line_start = bytes[..found.start()]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            if snippets.len() >= MAX_LINES || line_start == last_line_start {
                continue;
            }
            last_line_start = line_start;
            let line_end = bytes[found.end()..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| found.end() + i);
            let kind = serde_json::from_slice::<serde_json::Value>(&bytes[line_start..line_end])
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                .unwrap_or_default();
            let before = String::from_utf8_lossy(&bytes[line_start..found.start()]);
            let matched = String::from_utf8_lossy(&bytes[found.start()..found.end()]);
            let after = String::from_utf8_lossy(&bytes[found.end()..line_end]);
            let before: String = {
                let chars: Vec<char> = before.chars().collect();
                chars[chars.len().saturating_sub(CONTEXT)..]
                    .iter()
                    .collect()
            };
            let after: String = after.chars().take(CONTEXT).collect();
            snippets.push((kind, format!("…{before}[{matched}]{after}…")));
        }
        if matches > 0 {
            let session = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            hits.sessions.push(Hit {
                session,
                matches,
                snippets,
            });
        }
    }
    hits
}

pub(super) fn render(query: &str, hits: &Hits) -> Markup {
    html! {
        section #search-results {
            @if let Some(error) = &hits.error { p.bad { (error) } }
            p { (tf(S::Mention, &[&hits.sessions.len(), &hits.files, &format!("“{query}”")])) }
            @for hit in &hits.sessions {
                div.hit {
                    a href=(format!("/sessions/{}", hit.session)) title=(hit.session) { code { (braincode_protocol::short_form(&hit.session)) } } " — " (tf(S::Matches, &[&hit.matches]))
                    ul { @for (kind, text) in &hit.snippets { li { code { (kind) } " " (text) } } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_text_case_insensitively_and_literally() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.jsonl"),
            "{\"type\":\"run_start\",\"prompt\":\"Fix the Login bug\"}\n{\"type\":\"warning\",\"message\":\"a.b*c\"}\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("b.jsonl"), "{\"type\":\"run_start\"}\n").unwrap();
        let hits = search(dir.path(), "login");
        assert_eq!(hits.files, 2);
        assert_eq!(hits.sessions.len(), 1);
        assert_eq!(hits.sessions[0].session, "a");
        assert_eq!(hits.sessions[0].snippets[0].0, "run_start");
        assert!(hits.sessions[0].snippets[0].1.contains("[Login]"));
        // Regex characters are literal.
        assert_eq!(search(dir.path(), "b*c").sessions.len(), 1);
        assert_eq!(search(dir.path(), "x.y").sessions.len(), 0);
    }
}
