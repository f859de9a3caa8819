//! Small text helpers shared by snapshots, references and the support section.

/// Clips `text` to at most `max` characters; a clipped text ends with `…` (counted).
pub(crate) use braincode_context::clip_chars as clip;

/// Collapses every run of whitespace to one space and trims, for one-line previews.
pub(crate) use braincode_context::text::flatten_whitespace as one_line;

/// `2026-11-30T15:43:26Z` for epoch milliseconds.
pub(crate) fn iso_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{ms}ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_counts_chars_and_marks_cuts() {
        assert_eq!(clip("héllo", 5), "héllo");
        assert_eq!(clip("héllo", 4), "hél…");
        assert_eq!(clip("héllo", 1), "…");
        assert_eq!(clip("abc", 0), "");
        assert_eq!(one_line("  a \n\t b  "), "a b");
        assert_eq!(iso_time(0), "1970-01-01T00:00:00Z");
    }
}
