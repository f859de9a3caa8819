//! The diff an edit tool call made, drawn from its arguments: `edit_file` (a replacement or
//! a whole file), `write_file` and `apply_patch`.

use braincode_tools::tool_args::{ApplyPatchArgs, EditFileArgs, ToolArgs};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::text::truncate_spans;
use super::theme;
use crate::app::ToolCall;

/// Diff rows an expanded edit shows; the rest is counted.
pub(crate) const MAX_DIFF_ROWS: usize = 400;
/// Diff rows an edit shows in the transcript before it is expanded.
pub(crate) const INLINE_DIFF_ROWS: usize = 12;
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

/// One row of a diff: its kind, its text and the line number it has in the file (the new
/// file's for context and added lines, the old file's for removed ones).
type Row = (Kind, String, Option<usize>);

/// The rows of an edit's diff, each starting with `prefix`: a header (the file, new or
/// changed, its line counts), then numbered lines, at most `max_rows` of them (the rest
/// counted, with how to see them). `None` when the call is not an edit or its arguments do
/// not say what it changed.
pub(crate) fn diff_rows(
    call: &ToolCall,
    width: usize,
    prefix: &[Span<'static>],
    max_rows: usize,
) -> Option<Vec<Line<'static>>> {
    let args = call.args.as_ref()?;
    if args.get("truncated").and_then(Value::as_bool) == Some(true) {
        return Some(vec![note(
            "(the edit is larger than the journal keeps: no diff to show)",
            width,
            prefix,
        )]);
    }
    let output = call.output.as_deref().unwrap_or_default();
    let (path, created, rows) = match call.tool_name.as_str() {
        "edit_file" => {
            let args = EditFileArgs::parse(args).ok()?;
            let rows = match (args.old_string, args.new_string, args.content) {
                (Some(old), Some(new), _) => aligned(&old, &new, start_line(output)),
                (_, _, Some(content)) => every(&content, Kind::Added),
                _ => return None,
            };
            (Some(args.path), output.starts_with("create "), rows)
        }
        "write_file" => (
            args.get("path").and_then(Value::as_str).map(str::to_string),
            output.starts_with("create "),
            every(args.get("content")?.as_str()?, Kind::Added),
        ),
        "apply_patch" => (None, false, patch(&ApplyPatchArgs::parse(args).ok()?.patch)),
        _ => return None,
    };
    let mut lines = Vec::with_capacity(rows.len().min(max_rows) + 2);
    if let Some(path) = path {
        lines.push(header(&path, created, &rows, width, prefix));
    }
    let digits = rows
        .iter()
        .filter_map(|r| r.2)
        .max()
        .map_or(0, |n| n.to_string().len());
    let total = rows.len();
    lines.extend(rows.into_iter().take(max_rows).map(|(kind, text, number)| {
        let (sign, style) = match kind {
            Kind::Context => ("  ", theme::DIM),
            Kind::Added => ("+ ", theme::ADDED),
            Kind::Removed => ("- ", theme::REMOVED),
            Kind::Hunk | Kind::Header => ("", style_of(kind)),
        };
        let mut spans = prefix.to_vec();
        if digits > 0 {
            let gutter = number.map_or(" ".repeat(digits), |n| format!("{n:>digits$}"));
            spans.push(Span::styled(format!("{gutter} "), theme::DIM));
        }
        spans.push(Span::styled(format!("{sign}{text}"), style));
        Line::from(truncate_spans(spans, width))
    }));
    if total > max_rows {
        let more = if max_rows < MAX_DIFF_ROWS {
            format!(
                "… {} more lines (Ctrl+↑ to select the edit, Tab to show them)",
                total - max_rows
            )
        } else {
            format!("… {} more lines", total - max_rows)
        };
        lines.push(note(&more, width, prefix));
    }
    Some(lines)
}

/// `src/x.rs · new file, 8 lines` or `src/x.rs · +3 −1`.
fn header(
    path: &str,
    created: bool,
    rows: &[Row],
    width: usize,
    prefix: &[Span<'static>],
) -> Line<'static> {
    let added = rows.iter().filter(|r| r.0 == Kind::Added).count();
    let removed = rows.iter().filter(|r| r.0 == Kind::Removed).count();
    let counts = if created {
        match added {
            1 => "new file, 1 line".to_string(),
            n => format!("new file, {n} lines"),
        }
    } else {
        format!("+{added} −{removed}")
    };
    let mut spans = prefix.to_vec();
    spans.push(Span::styled(path.to_string(), style_of(Kind::Header)));
    spans.push(Span::styled(format!(" · {counts}"), theme::DIM));
    Line::from(truncate_spans(spans, width))
}

/// The line `edit_file` says its replacement starts at (`replace a.rs at line 12 (…)`).
fn start_line(output: &str) -> usize {
    output
        .split_once(" at line ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
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

fn every(text: &str, kind: Kind) -> Vec<Row> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (kind, l.to_string(), Some(i + 1)))
        .collect()
}

/// `@@ -12,3 +12,4 @@` → (12, 12).
fn hunk_starts(line: &str) -> Option<(usize, usize)> {
    let mut words = line.split_whitespace().skip(1);
    let old = words.next()?.strip_prefix('-')?;
    let new = words.next()?.strip_prefix('+')?;
    let first = |range: &str| range.split(',').next()?.parse::<usize>().ok();
    Some((first(old)?, first(new)?))
}

/// The path a `--- a/x` / `+++ b/x` line names (`None` for `/dev/null`).
fn patch_path(line: &str) -> Option<&str> {
    let path = line.get(4..)?.split('\t').next()?.trim();
    if path == "/dev/null" {
        return None;
    }
    Some(
        path.strip_prefix("a/")
            .or_else(|| path.strip_prefix("b/"))
            .unwrap_or(path),
    )
}

fn patch(text: &str) -> Vec<Row> {
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut old_path: Option<Option<String>> = None;
    text.lines()
        .filter(|l| !l.starts_with("diff --git") && !l.starts_with("index "))
        .filter_map(|line| {
            if line.starts_with("---") {
                // Said with the `+++` line that follows: one header per file.
                old_path = Some(patch_path(line).map(str::to_string));
                return None;
            }
            Some(if line.starts_with("+++") {
                let new_path = patch_path(line);
                let old = old_path.take().flatten();
                let header = match (old, new_path) {
                    (None, Some(new)) => format!("{new} · new file"),
                    (Some(old), None) => format!("{old} · deleted"),
                    (Some(old), Some(new)) if old != new => format!("{old} → {new}"),
                    (_, Some(new)) => new.to_string(),
                    (None, None) => line.to_string(),
                };
                (Kind::Header, header, None)
            } else if line.starts_with("@@") {
                if let Some((old, new)) = hunk_starts(line) {
                    (old_no, new_no) = (old.max(1), new.max(1));
                }
                (Kind::Hunk, line.to_string(), None)
            } else if let Some(rest) = line.strip_prefix('+') {
                new_no += 1;
                (Kind::Added, rest.to_string(), Some(new_no - 1))
            } else if let Some(rest) = line.strip_prefix('-') {
                old_no += 1;
                (Kind::Removed, rest.to_string(), Some(old_no - 1))
            } else if line.starts_with('\\') {
                (Kind::Context, line.to_string(), None)
            } else {
                old_no += 1;
                new_no += 1;
                (
                    Kind::Context,
                    line.strip_prefix(' ').unwrap_or(line).to_string(),
                    Some(new_no - 1),
                )
            })
        })
        .collect()
}

/// A line diff of a replacement starting at line `start` of the file: lines both sides
/// share are context, the rest removed or added (longest common subsequence).
fn aligned(old: &str, new: &str, start: usize) -> Vec<Row> {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    if old.len().saturating_mul(new.len()) > MAX_ALIGNED_CELLS {
        let mut rows: Vec<Row> = old
            .iter()
            .enumerate()
            .map(|(i, l)| (Kind::Removed, l.to_string(), Some(start + i)))
            .collect();
        rows.extend(
            new.iter()
                .enumerate()
                .map(|(j, l)| (Kind::Added, l.to_string(), Some(start + j))),
        );
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
            rows.push((Kind::Context, old[i].to_string(), Some(start + j)));
            i += 1;
            j += 1;
        } else if i < old.len()
            && (j == new.len() || common[(i + 1) * columns + j] >= common[i * columns + j + 1])
        {
            rows.push((Kind::Removed, old[i].to_string(), Some(start + i)));
            i += 1;
        } else {
            rows.push((Kind::Added, new[j].to_string(), Some(start + j)));
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
        diff_rows(call, 80, &[], MAX_DIFF_ROWS)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_replacement_has_a_header_numbers_and_shared_lines_as_context() {
        let mut edit = call(
            "edit_file",
            json!({"path": "a.rs", "oldString": "a\nb\nc", "newString": "a\nB\nc\nd"}),
        );
        edit.output = Some("replace a.rs at line 9 (40 chars)".into());
        assert_eq!(
            texts(&edit),
            [
                "a.rs · +2 −1",
                " 9   a",
                "10 - b",
                "10 + B",
                "11   c",
                "12 + d"
            ]
        );
    }

    #[test]
    fn a_new_file_is_shown_whole_and_a_patch_numbered_from_its_hunks() {
        let mut write = call("edit_file", json!({"path": "n.txt", "content": "x\ny"}));
        write.output = Some("create n.txt (3 chars)".into());
        assert_eq!(
            texts(&write),
            ["n.txt · new file, 2 lines", "1 + x", "2 + y"]
        );
        let patch = call(
            "apply_patch",
            json!({"patch": "--- a/f\n+++ b/f\n@@ -7 +7,2 @@\n-old\n+new\n ctx"}),
        );
        assert_eq!(
            texts(&patch),
            ["  f", "  @@ -7 +7,2 @@", "7 - old", "7 + new", "8   ctx"]
        );
        let created = call(
            "apply_patch",
            json!({"patch": "diff --git a/n b/n\n--- /dev/null\n+++ b/src/n.rs\n@@ -0,0 +1 @@\n+x"}),
        );
        assert_eq!(
            texts(&created),
            ["  src/n.rs · new file", "  @@ -0,0 +1 @@", "1 + x"]
        );
        let big = call(
            "edit_file",
            json!({"truncated": true, "chars": 9000, "preview": "{"}),
        );
        assert_eq!(texts(&big).len(), 1);
        assert!(diff_rows(&call("read_file", json!({"path": "a"})), 80, &[], 12).is_none());
    }

    #[test]
    fn long_diffs_are_clipped_and_say_how_to_see_the_rest() {
        let content: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let write = call("edit_file", json!({"path": "a", "content": content}));
        let inline: Vec<String> = diff_rows(&write, 100, &[], INLINE_DIFF_ROWS)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(inline.len(), 1 + INLINE_DIFF_ROWS + 1);
        assert!(
            inline
                .last()
                .unwrap()
                .starts_with("… 88 more lines (Ctrl+↑")
        );
        assert_eq!(texts(&write).len(), 1 + 100);
    }
}
