//! The diff an edit tool call made, drawn from its arguments: `edit_file` (a replacement or
//! a whole file), `write_file` and `apply_patch`.

use braincode_tools::tool_args::{ApplyPatchArgs, EditFileArgs, ToolArgs};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::text::truncate_spans;
use super::theme;
use crate::app::ToolCall;

/// Diff rows shown for one edit; the rest is counted.
pub(crate) const MAX_DIFF_ROWS: usize = 40;
/// Beyond this many line pairs a replacement is shown as removed-then-added, not aligned.
const MAX_ALIGNED_CELLS: usize = 250_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Context,
    Added,
    Removed,
    Hunk,
    Header,
}

/// The rows of an edit's diff, each starting with `prefix`; `None` when the call is not an
/// edit or its arguments do not say what it changed.
pub(crate) fn diff_rows(
    call: &ToolCall,
    width: usize,
    prefix: &[Span<'static>],
) -> Option<Vec<Line<'static>>> {
    let args = call.args.as_ref()?;
    let rows = if args.get("truncated").and_then(Value::as_bool) == Some(true) {
        return Some(vec![note(
            "(the edit is larger than the journal keeps: no diff to show)",
            width,
            prefix,
        )]);
    } else {
        match call.tool_name.as_str() {
            "edit_file" => {
                let args = EditFileArgs::parse(args).ok()?;
                match (args.old_string, args.new_string, args.content) {
                    (Some(old), Some(new), _) => aligned(&old, &new),
                    (_, _, Some(content)) => every(&content, Kind::Added),
                    _ => return None,
                }
            }
            "write_file" => every(args.get("content")?.as_str()?, Kind::Added),
            "apply_patch" => patch(&ApplyPatchArgs::parse(args).ok()?.patch),
            _ => return None,
        }
    };
    let total = rows.len();
    let mut lines: Vec<Line<'static>> = rows
        .into_iter()
        .take(MAX_DIFF_ROWS)
        .map(|(kind, text)| {
            let (sign, style) = match kind {
                Kind::Context => ("  ", theme::DIM),
                Kind::Added => ("+ ", theme::ADDED),
                Kind::Removed => ("- ", theme::REMOVED),
                Kind::Hunk | Kind::Header => ("", style_of(kind)),
            };
            let mut spans = prefix.to_vec();
            spans.push(Span::styled(format!("{sign}{text}"), style));
            Line::from(truncate_spans(spans, width))
        })
        .collect();
    if total > MAX_DIFF_ROWS {
        let more = format!("… {} more lines", total - MAX_DIFF_ROWS);
        lines.push(note(&more, width, prefix));
    }
    Some(lines)
}

fn style_of(kind: Kind) -> Style {
    match kind {
        Kind::Hunk => theme::HUNK,
        _ => Style::new().add_modifier(Modifier::BOLD),
    }
}

fn note(text: &str, width: usize, prefix: &[Span<'static>]) -> Line<'static> {
    let mut spans = prefix.to_vec();
    spans.push(Span::styled(text.to_string(), theme::DIM));
    Line::from(truncate_spans(spans, width))
}

fn every(text: &str, kind: Kind) -> Vec<(Kind, String)> {
    text.lines().map(|l| (kind, l.to_string())).collect()
}

fn patch(text: &str) -> Vec<(Kind, String)> {
    text.lines()
        .filter(|l| !l.starts_with("diff --git") && !l.starts_with("index "))
        .map(|line| {
            if line.starts_with("+++") || line.starts_with("---") {
                (Kind::Header, line.to_string())
            } else if line.starts_with("@@") {
                (Kind::Hunk, line.to_string())
            } else if let Some(rest) = line.strip_prefix('+') {
                (Kind::Added, rest.to_string())
            } else if let Some(rest) = line.strip_prefix('-') {
                (Kind::Removed, rest.to_string())
            } else {
                (
                    Kind::Context,
                    line.strip_prefix(' ').unwrap_or(line).to_string(),
                )
            }
        })
        .collect()
}

/// A line diff of a replacement: lines both sides share are context, the rest removed or
/// added (longest common subsequence).
fn aligned(old: &str, new: &str) -> Vec<(Kind, String)> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    if old.len().saturating_mul(new.len()) > MAX_ALIGNED_CELLS {
        let mut rows: Vec<(Kind, String)> =
            old.iter().map(|l| (Kind::Removed, l.to_string())).collect();
        rows.extend(new.iter().map(|l| (Kind::Added, l.to_string())));
        return rows;
    }
    // common[i][j]: length of the longest common subsequence of old[i..] and new[j..].
    let columns = new.len() + 1;
    let mut common = vec![0usize; (old.len() + 1) * columns];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            common[i * columns + j] = if old[i] == new[j] {
                common[(i + 1) * columns + j + 1] + 1
            } else {
                common[(i + 1) * columns + j].max(common[i * columns + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut rows = Vec::with_capacity(old.len() + new.len());
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            rows.push((Kind::Context, old[i].to_string()));
            i += 1;
            j += 1;
        } else if i < old.len()
            && (j == new.len() || common[(i + 1) * columns + j] >= common[i * columns + j + 1])
        {
            rows.push((Kind::Removed, old[i].to_string()));
            i += 1;
        } else {
            rows.push((Kind::Added, new[j].to_string()));
            j += 1;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::ToolState;
    use serde_json::json;

    fn call(tool: &str, args: Value) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            tool_name: tool.into(),
            context_id: None,
            role: None,
            summary: String::new(),
            args: Some(args),
            state: ToolState::Done,
            started_at: None,
            duration_ms: None,
            output: None,
            reason: None,
        }
    }

    fn texts(call: &ToolCall) -> Vec<String> {
        diff_rows(call, 80, &[])
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_replacement_keeps_shared_lines_as_context() {
        let edit = call(
            "edit_file",
            json!({"path": "a.rs", "oldString": "a\nb\nc", "newString": "a\nB\nc\nd"}),
        );
        assert_eq!(texts(&edit), ["  a", "- b", "+ B", "  c", "+ d"]);
    }

    #[test]
    fn writes_and_patches() {
        let write = call("write_file", json!({"path": "n.txt", "content": "x\ny"}));
        assert_eq!(texts(&write), ["+ x", "+ y"]);
        let patch = call(
            "apply_patch",
            json!({"patch": "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n+new\n ctx"}),
        );
        assert_eq!(
            texts(&patch),
            [
                "--- a/f",
                "+++ b/f",
                "@@ -1 +1 @@",
                "- old",
                "+ new",
                "  ctx"
            ]
        );
        let big = call(
            "edit_file",
            json!({"truncated": true, "chars": 9000, "preview": "{"}),
        );
        assert_eq!(texts(&big).len(), 1);
        assert!(diff_rows(&call("read_file", json!({"path": "a"})), 80, &[]).is_none());
    }

    #[test]
    fn long_diffs_are_clipped() {
        let content: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let write = call("edit_file", json!({"path": "a", "content": content}));
        let rows = texts(&write);
        assert_eq!(rows.len(), MAX_DIFF_ROWS + 1);
        assert_eq!(rows.last().unwrap(), "… 60 more lines");
    }
}
