//! The unified diff of one change, bounded, with its line counts.

use similar::{ChangeTag, TextDiff};

/// Longest diff a `file_change` record carries (characters).
pub const MAX_DIFF_CHARS: usize = 20_000;

/// The diff of one file's change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileDiff {
    /// The unified diff (none for binary content).
    pub text: Option<String>,
    /// Whether the text was clipped to [`MAX_DIFF_CHARS`].
    pub truncated: bool,
    /// Whether either side is binary.
    pub binary: bool,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// Whether `bytes` are not text: a NUL in the first 8 KiB, or not UTF-8.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8_192).any(|b| *b == 0) || std::str::from_utf8(bytes).is_err()
}

/// A side as text: empty when missing, `None` when binary.
fn as_text(side: Option<&[u8]>) -> Option<&str> {
    match side {
        None => Some(""),
        Some(bytes) if is_binary(bytes) => None,
        Some(bytes) => std::str::from_utf8(bytes).ok(),
    }
}

/// The diff from `before` to `after` (`None`: the file does not exist on that side).
pub fn file_diff(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> FileDiff {
    let (Some(old), Some(new)) = (as_text(before), as_text(after)) else {
        return FileDiff {
            binary: true,
            ..FileDiff::default()
        };
    };
    let diff = TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let old_name = match before {
        Some(_) => format!("a/{path}"),
        None => "/dev/null".to_string(),
    };
    let new_name = match after {
        Some(_) => format!("b/{path}"),
        None => "/dev/null".to_string(),
    };
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    let truncated = text.chars().count() > MAX_DIFF_CHARS;
    let text = if truncated {
        braincode_context::clip_chars(&text, MAX_DIFF_CHARS)
    } else {
        text
    };
    FileDiff {
        text: Some(text),
        truncated,
        binary: false,
        added,
        removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_changes_have_a_unified_diff_and_counts() {
        let diff = file_diff("a.txt", Some(b"one\ntwo\n"), Some(b"one\nthree\nfour\n"));
        let text = diff.text.unwrap();
        assert!(text.starts_with("--- a/a.txt\n+++ b/a.txt\n@@"), "{text}");
        assert!(text.contains("-two\n+three\n+four\n"), "{text}");
        assert_eq!((diff.added, diff.removed), (2, 1));

        let created = file_diff("n.txt", None, Some(b"x\n"));
        assert!(
            created
                .text
                .unwrap()
                .starts_with("--- /dev/null\n+++ b/n.txt")
        );
        assert_eq!((created.added, created.removed), (1, 0));
    }

    #[test]
    fn binaries_have_no_diff_and_big_diffs_are_clipped() {
        let binary = file_diff("b.bin", Some(b"\0\x01"), Some(b"\0\x02"));
        assert!(binary.binary && binary.text.is_none());

        let big: String = (0..5_000).map(|i| format!("line {i}\n")).collect();
        let diff = file_diff("big.txt", None, Some(big.as_bytes()));
        assert!(diff.truncated);
        assert!(diff.text.unwrap().chars().count() <= MAX_DIFF_CHARS + 40);
        assert_eq!(diff.added, 5_000);
    }
}
