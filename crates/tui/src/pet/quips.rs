//! What the pet says about a running tool: a short aside chosen by the tool's kind.

/// The kind of a tool, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCategory {
    /// Commands in a shell (`exec_command`, `bash`, …).
    Shell,
    /// Version control and diffs (`git_diff`, `git_status`, …).
    Git,
    /// Tests, checks and linters (`run_check`, …).
    Test,
    /// Reading, searching and listing (`read_file`, `grep`, `list_dir`, …).
    Read,
    /// Writing and editing files (`write_file`, `edit_file`, `apply_patch`, …).
    Write,
    /// Anything else (MCP tools, web fetches, …).
    Other,
}

/// Name fragments per category, tried in this order: a check run through a command reads as
/// a check, and `apply_patch` writes files even though it carries a patch.
const MARKERS: [(ToolCategory, &[&str]); 5] = [
    (ToolCategory::Test, &["test", "check", "lint", "clippy"]),
    (
        ToolCategory::Write,
        &["write", "edit", "apply", "create", "replace", "delete"],
    ),
    (ToolCategory::Git, &["git", "diff", "patch", "commit"]),
    (
        ToolCategory::Shell,
        &["exec", "shell", "bash", "command", "terminal", "cmd"],
    ),
    (
        ToolCategory::Read,
        &["read", "search", "list", "grep", "glob", "find", "view"],
    ),
];

impl ToolCategory {
    /// The category of the tool `name` (case-insensitive).
    pub fn of(name: &str) -> Self {
        let name = name.to_lowercase();
        MARKERS
            .iter()
            .find(|(_, markers)| markers.iter().any(|m| name.contains(m)))
            .map_or(ToolCategory::Other, |(category, _)| *category)
    }

    fn quips(self) -> &'static [&'static str] {
        match self {
            ToolCategory::Shell => &[
                "hands off the keyboard",
                "the shell has the floor",
                "waiting on a process",
            ],
            ToolCategory::Git => &[
                "reading the history",
                "counting changed lines",
                "blame is a strong word",
            ],
            ToolCategory::Test => &[
                "fingers crossed",
                "asking the compiler nicely",
                "green would be nice",
            ],
            ToolCategory::Read => &["skimming the source", "looking for clues", "turning pages"],
            ToolCategory::Write => &[
                "measure twice, cut once",
                "careful with that file",
                "editing in place",
            ],
            ToolCategory::Other => &["doing the thing", "a tool for every job", "busy, back soon"],
        }
    }
}

/// The aside for a running call of `tool_name`: one of its category's quips, chosen by the
/// call id so a call keeps its quip across redraws and runs replay the same way.
pub fn quip(tool_name: &str, call_id: &str) -> &'static str {
    let quips = ToolCategory::of(tool_name).quips();
    // FNV-1a: stable across platforms and Rust versions, unlike the std hasher.
    let hash = call_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    quips[(hash % quips.len() as u64) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_fall_in_their_category() {
        let cases = [
            ("exec_command", ToolCategory::Shell),
            ("bash", ToolCategory::Shell),
            ("git_diff", ToolCategory::Git),
            ("run_check", ToolCategory::Test),
            ("cargo_test", ToolCategory::Test),
            ("read_file", ToolCategory::Read),
            ("list_dir", ToolCategory::Read),
            ("edit_file", ToolCategory::Write),
            ("apply_patch", ToolCategory::Write),
            ("mcp__web__fetch_url", ToolCategory::Other),
        ];
        for (name, category) in cases {
            assert_eq!(ToolCategory::of(name), category, "{name}");
        }
    }

    #[test]
    fn quips_are_short_and_stable() {
        assert_eq!(quip("read_file", "call-1"), quip("read_file", "call-1"));
        for name in [
            "bash",
            "git_log",
            "run_check",
            "grep",
            "write_file",
            "other",
        ] {
            for id in ["a", "b", "c", "d"] {
                assert!(quip(name, id).len() <= super::super::LINE_MAX);
            }
        }
    }
}
