//! Public context budgets (DESIGN invariant 6).
//!
//! Every hard limit on how much text enters a prompt or a journal record lives here, next to
//! the reason for its value. Change a value here and in the docs together: nobody should have
//! to read call sites to learn a budget.

/// Largest text file an `@path` reference inlines, in bytes (64 KiB).
///
/// Big enough for a typical source file, small enough that a handful of references cannot
/// crowd the model's context window. A larger file is referenced by path with a
/// "file is N bytes (limit 65536)" note instead of being inlined.
pub const AT_FILE_MAX_BYTES: usize = 65_536;

/// Largest `@@session` snapshot, in characters (24 KiB).
///
/// A snapshot is a compact digest of an earlier session (prompt, summaries, worker results,
/// errors), never its transcript; the whole rendered snapshot is clipped to this size.
pub const SESSION_SNAPSHOT_MAX_CHARS: usize = 24_576;

/// Largest single field inside a session snapshot, in characters (6 KiB).
///
/// Applied to the initial prompt, the latest summary and the handoff summary of a snapshot,
/// so one huge field cannot consume the whole [`SESSION_SNAPSHOT_MAX_CHARS`] budget.
pub const SNAPSHOT_FIELD_MAX_CHARS: usize = 6_144;

/// Largest handoff summary (`summary_md`), in characters.
///
/// The summary is injected into an agent's context on every launch and persisted on every
/// checkpoint, so it sits on the hot path; [`crate::bound_handoff_summary`] enforces it
/// without any model call, keeping the objective and the newest turns.
pub const HANDOFF_SUMMARY_MAX_CHARS: usize = 4_096;

/// Largest flattened text of one turn line in a handoff summary, in characters.
///
/// One oversized turn (a long model response) would otherwise produce a giant line; the
/// text after the `- **role:**` prefix is clipped to this length with `…`.
pub const TURN_LINE_MAX_CHARS: usize = 240;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_match_the_documented_values() {
        assert_eq!(AT_FILE_MAX_BYTES, 64 * 1024);
        assert_eq!(SESSION_SNAPSHOT_MAX_CHARS, 24 * 1024);
        assert_eq!(SNAPSHOT_FIELD_MAX_CHARS, 6 * 1024);
        assert_eq!(HANDOFF_SUMMARY_MAX_CHARS, 4_096);
        assert_eq!(TURN_LINE_MAX_CHARS, 240);
    }
}
