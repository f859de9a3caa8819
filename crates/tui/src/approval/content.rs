//! What the panel says about a request: who asks, the facts (file, command, policy) and a
//! body — a coloured diff for file edits, the full command for multi-line commands, the
//! pretty-printed arguments otherwise. Arguments are read with the tools' own typed structs,
//! so the panel shows exactly the fields the tool and the permission policy will use.

use braincode_protocol::ToolCallOrigin;
use braincode_runtime::ApprovalRequest;
use braincode_tools::patch::patch_paths;
use braincode_tools::tool_args::{
    ApplyPatchArgs, EditFileArgs, ExecCommandArgs, ShellArgs, ToolArgs, WriteStdinArgs,
};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::view::theme;

/// Most body lines kept (the rest is counted).
pub(crate) const MAX_BODY_LINES: usize = 400;
/// Longest body line kept (characters).
const MAX_LINE_CHARS: usize = 400;
/// Unchanged lines shown around a change.
const CONTEXT_LINES: usize = 3;
/// Largest line-diff table (old lines × new lines) computed exactly.
const MAX_DIFF_CELLS: usize = 40_000;

/// One labelled line (or more, wrapped) above the body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fact {
    pub label: &'static str,
    pub value: String,
    pub style: Style,
}

fn fact(label: &'static str, value: impl Into<String>) -> Fact {
    Fact {
        label,
        value: clean(&value.into()),
        style: Style::new(),
    }
}

/// `backend · primary · task t-2`, or `the run` when the origin says nothing.
pub(crate) fn asked_by(origin: &ToolCallOrigin) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(role) = origin.role {
        parts.push(role.as_str().to_string());
    }
    if let Some(phase) = origin.phase {
        parts.push(format!("{} phase", phase.as_str()));
    }
    if let Some(task) = &origin.task_id {
        parts.push(format!("task {task}"));
    }
    if let Some(attempt) = origin.attempt.filter(|a| *a > 1) {
        parts.push(format!("attempt {attempt}"));
    }
    if parts.is_empty() {
        "the run".into()
    } else {
        parts.join(" · ")
    }
}

fn is_command_tool(tool: &str) -> bool {
    matches!(tool, "shell" | "exec_command")
}

/// The panel's title.
pub(crate) fn title(request: &ApprovalRequest) -> String {
    match request.tool_name.as_str() {
        "edit_file" | "write_file" | "apply_patch" => {
            format!("Allow {} to change files?", request.tool_name)
        }
        tool if is_command_tool(tool) => format!("Allow {tool} to run a command?"),
        "write_stdin" => "Allow typing into a running command?".into(),
        braincode_runtime::CHECK_TOOL => "Run the project's checks on this change?".into(),
        "dependency_setup" => "Set the project's dependencies up before its checks?".into(),
        tool => format!("Allow {tool}?"),
    }
}

/// `policy_summary` on lines: each rule that matched (with its action and reason), each
/// unanalysable or protected reason; the bare decision only when nothing else is said.
/// The summary is one line per reason: why a person is asked (a protected path, a command
/// without the sandbox, a hook), then what the rules said (`ask: rule; rule`), then the
/// sub-commands the policy read; each is read on its own.
fn policy_lines(summary: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut said: Option<&str> = None;
    for line in summary.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (decision, rest) = match line.split_once(": ") {
            Some((decision, rest)) if is_decision(decision) => (decision, rest),
            _ if is_decision(line) => (line, ""),
            _ => {
                push_new(&mut lines, line.to_string());
                continue;
            }
        };
        said = Some(decision);
        for part in rest.split("; ").map(str::trim).filter(|p| !p.is_empty()) {
            // The protected reason already leads the panel: said once, not again.
            let reason = part.strip_prefix("protected: ").unwrap_or(part);
            if lines.iter().any(|l| l.contains(reason)) {
                continue;
            }
            push_new(&mut lines, part.to_string());
        }
        if decision.contains("review required") {
            push_new(
                &mut lines,
                "an independent review will follow this change".into(),
            );
        }
    }
    if lines.is_empty() {
        let why = match said {
            Some(decision) if decision != "no rule" => decision,
            _ => "no permission rule matched: this tool asks before it runs",
        };
        return vec![why.to_string()];
    }
    if lines.len() > 1 {
        lines.iter().map(|part| format!("· {part}")).collect()
    } else {
        lines
    }
}

/// A decision word of the policy's summary (`ask`, `allow (review required)`, `no rule`).
fn is_decision(word: &str) -> bool {
    let bare = word.trim_end_matches(" (review required)");
    matches!(bare, "ask" | "allow" | "deny" | "no rule")
}

/// Adds `line` unless the same words are already there (a protected reason the policy
/// states twice is said once).
fn push_new(lines: &mut Vec<String>, line: String) {
    if !lines.contains(&line) {
        lines.push(line);
    }
}

fn command_style() -> Style {
    Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
}

/// The labelled lines above the body.
pub(crate) fn facts(request: &ApprovalRequest) -> Vec<Fact> {
    let mut facts = vec![fact("asked by", asked_by(&request.origin))];
    let args = &request.arguments;
    let command = |text: &str| Fact {
        label: "command",
        value: clean(&format!("$ {}", text.lines().next().unwrap_or_default())),
        style: command_style(),
    };
    let parse_error = |err: String| fact("arguments", format!("do not parse: {err}"));
    match request.tool_name.as_str() {
        "edit_file" | "write_file" => match EditFileArgs::parse(args) {
            Ok(edit) => {
                let action = match (&edit.content, edit.replace_all) {
                    (Some(content), _) => match content.lines().count() {
                        1 => "write the whole file (1 line)".to_string(),
                        n => format!("write the whole file ({n} lines)"),
                    },
                    (None, Some(true)) => "replace every occurrence".into(),
                    (None, _) => "replace the first occurrence".into(),
                };
                facts.push(fact("file", format!("{} — {action}", edit.path)));
            }
            Err(err) => facts.push(parse_error(err.to_string())),
        },
        "apply_patch" => match ApplyPatchArgs::parse(args) {
            Ok(patch) => {
                let mut paths: Vec<String> = Vec::new();
                for path in patch_paths(&patch.patch) {
                    // `a/x` and `b/x` name the same file.
                    if !paths.contains(&path.path) {
                        paths.push(path.path);
                    }
                }
                facts.push(fact("files", paths.join(", ")));
            }
            Err(err) => facts.push(parse_error(err.to_string())),
        },
        "shell" => match ShellArgs::parse(args) {
            Ok(shell) => {
                facts.push(command(&shell.command));
                let mut place = vec![shell.workdir.unwrap_or_else(|| "project root".into())];
                place.extend(
                    shell
                        .timeout_ms
                        .map(|ms| format!("timeout {}", seconds(ms))),
                );
                facts.push(fact("in", place.join(" · ")));
                facts.extend(shell.description.map(|d| fact("purpose", d)));
            }
            Err(err) => facts.push(parse_error(err.to_string())),
        },
        "exec_command" => match ExecCommandArgs::parse(args) {
            Ok(exec) => {
                facts.push(command(&exec.cmd));
                let mut place = vec![exec.workdir.unwrap_or_else(|| "project root".into())];
                place.extend(exec.shell.map(|s| format!("with {s}")));
                if exec.background == Some(true) {
                    place.push("in the background".into());
                }
                place.extend(exec.timeout_ms.map(|ms| format!("timeout {}", seconds(ms))));
                facts.push(fact("in", place.join(" · ")));
                facts.extend(exec.description.map(|d| fact("purpose", d)));
            }
            Err(err) => facts.push(parse_error(err.to_string())),
        },
        "write_stdin" => match WriteStdinArgs::parse(args) {
            Ok(stdin) => {
                facts.push(fact("session", stdin.session_id.to_string()));
                facts.push(Fact {
                    label: "types",
                    value: visible_keys(stdin.chars.as_deref().unwrap_or_default()),
                    style: command_style(),
                });
            }
            Err(err) => facts.push(parse_error(err.to_string())),
        },
        "dependency_setup" => {
            facts.push(command(args["command"].as_str().unwrap_or_default()));
            let hosts: Vec<&str> = args["hosts"]
                .as_array()
                .map(|list| list.iter().filter_map(|h| h.as_str()).collect())
                .unwrap_or_default();
            let network = args["network"].as_str().unwrap_or("none");
            let reach = if hosts.is_empty() {
                network.to_string()
            } else {
                format!("{network}: {}", hosts.join(", "))
            };
            facts.push(fact("network", clean(&reach)));
        }
        braincode_runtime::CHECK_TOOL => {
            let scripts: Vec<&str> = args["scripts"]
                .as_array()
                .map(|list| list.iter().filter_map(|s| s.as_str()).collect())
                .unwrap_or_default();
            facts.push(fact("checks", clean(&scripts.join(", "))));
            facts.push(command(args["command"].as_str().unwrap_or_default()));
            if let Some(kind) = args["patchKind"].as_str() {
                facts.push(fact("change", clean(kind)));
            }
        }
        _ => {}
    }
    let mut policy = policy_lines(&request.policy_summary).into_iter();
    if let Some(first) = policy.next() {
        facts.push(fact("why", first));
    }
    facts.extend(policy.map(|line| fact("", line)));
    if let Some(why) = &request.once_only {
        facts.push(fact("a", format!("approves this call once only: {why}")));
    }
    facts
}

fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// Typed text with its control keys made visible (`⏎` for Enter, `^C` for Ctrl+C).
fn visible_keys(chars: &str) -> String {
    chars
        .chars()
        .map(|c| match c {
            '\n' | '\r' => "⏎".to_string(),
            '\t' => "⇥".to_string(),
            c if u32::from(c) < 0x20 => {
                format!("^{}", char::from_u32(u32::from(c) + 0x40).unwrap_or('?'))
            }
            '\u{7f}' => "^?".to_string(),
            c if c.is_control() => format!("\\u{{{:x}}}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

/// Text safe for a cell: tabs become spaces, other control characters (an escape sequence
/// in a model's arguments must not reach the terminal) are dropped.
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn clip_line(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return clean(line);
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{}…", clean(&kept))
}

fn styled(line: &str, style: Style) -> Line<'static> {
    Line::from(Span::styled(clip_line(line), style))
}

fn added() -> Style {
    theme::ADDED
}

fn removed() -> Style {
    theme::REMOVED
}

fn context() -> Style {
    theme::DIM
}

/// The body for a request, at most [`MAX_BODY_LINES`] lines plus a count of the rest.
pub(crate) fn body_lines(request: &ApprovalRequest) -> Vec<Line<'static>> {
    let args = &request.arguments;
    let lines = match request.tool_name.as_str() {
        "edit_file" | "write_file" => EditFileArgs::parse(args).ok().map(|edit| edit_body(&edit)),
        "apply_patch" => ApplyPatchArgs::parse(args)
            .ok()
            .map(|patch| patch_body(&patch.patch)),
        "shell" => ShellArgs::parse(args)
            .ok()
            .map(|shell| command_body(&shell.command)),
        "exec_command" => ExecCommandArgs::parse(args)
            .ok()
            .map(|exec| command_body(&exec.cmd)),
        "write_stdin" => WriteStdinArgs::parse(args).ok().map(|_| Vec::new()),
        // The facts name the commands and the hosts: nothing more to show.
        "dependency_setup" => Some(Vec::new()),
        _ => None,
    };
    let mut lines = lines.unwrap_or_else(|| json_body(args));
    if lines.len() > MAX_BODY_LINES {
        let more = lines.len() - MAX_BODY_LINES;
        lines.truncate(MAX_BODY_LINES);
        lines.push(styled(&format!("… {more} more lines"), context()));
    }
    lines
}

/// A multi-line command in full (a one-line command is already in the facts).
fn command_body(command: &str) -> Vec<Line<'static>> {
    if command.lines().count() <= 1 {
        return Vec::new();
    }
    command
        .lines()
        .map(|line| styled(line, command_style()))
        .collect()
}

fn json_body(args: &serde_json::Value) -> Vec<Line<'static>> {
    let text = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
    text.lines()
        .map(|line| styled(line, Style::new()))
        .collect()
}

fn patch_body(patch: &str) -> Vec<Line<'static>> {
    let header = Style::new().add_modifier(Modifier::BOLD);
    let hunk = theme::HUNK;
    patch
        .lines()
        .map(|line| {
            let style = if line.starts_with("diff ")
                || line.starts_with("+++")
                || line.starts_with("---")
                || line.starts_with("index ")
            {
                header
            } else if line.starts_with("@@") {
                hunk
            } else if line.starts_with('+') {
                added()
            } else if line.starts_with('-') {
                removed()
            } else {
                context()
            };
            styled(line, style)
        })
        .collect()
}

fn edit_body(edit: &EditFileArgs) -> Vec<Line<'static>> {
    if let Some(content) = &edit.content {
        return content
            .lines()
            .map(|line| styled(&format!("+ {line}"), added()))
            .collect();
    }
    let old = edit.old_string.as_deref().unwrap_or_default();
    let new = edit.new_string.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    let diff = line_diff(old, new);
    let changed: Vec<bool> = diff.iter().map(|(tag, _)| *tag != Tag::Same).collect();
    let near_change = |i: usize| {
        let from = i.saturating_sub(CONTEXT_LINES);
        let to = (i + CONTEXT_LINES + 1).min(changed.len());
        changed[from..to].iter().any(|c| *c)
    };
    let mut skipped = 0;
    for (i, (tag, line)) in diff.iter().enumerate() {
        if *tag == Tag::Same && !near_change(i) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            out.push(styled(&format!("  ⋯ {skipped} unchanged lines"), context()));
            skipped = 0;
        }
        out.push(match tag {
            Tag::Same => styled(&format!("  {line}"), context()),
            Tag::Removed => styled(&format!("- {line}"), removed()),
            Tag::Added => styled(&format!("+ {line}"), added()),
        });
    }
    if skipped > 0 {
        out.push(styled(&format!("  ⋯ {skipped} unchanged lines"), context()));
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    Same,
    Removed,
    Added,
}

/// A line diff: common head and tail, and the longest common subsequence between (or,
/// when that table would be too large, everything removed then everything added).
fn line_diff<'a>(old: &'a str, new: &'a str) -> Vec<(Tag, &'a str)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<(Tag, &str)> = a[..head].iter().map(|l| (Tag::Same, *l)).collect();
    if am.len().saturating_mul(bm.len()) <= MAX_DIFF_CELLS {
        // lcs[i][j]: longest common subsequence of am[i..] and bm[j..].
        let width = bm.len() + 1;
        let mut lcs = vec![0u32; (am.len() + 1) * width];
        for i in (0..am.len()).rev() {
            for j in (0..bm.len()).rev() {
                lcs[i * width + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * width + j + 1] + 1
                } else {
                    lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < am.len() || j < bm.len() {
            if i < am.len() && j < bm.len() && am[i] == bm[j] {
                out.push((Tag::Same, am[i]));
                i += 1;
                j += 1;
            } else if i < am.len()
                && (j == bm.len() || lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
            {
                // Removals before additions, as `git diff` shows them.
                out.push((Tag::Removed, am[i]));
                i += 1;
            } else {
                out.push((Tag::Added, bm[j]));
                j += 1;
            }
        }
    } else {
        out.extend(am.iter().map(|l| (Tag::Removed, *l)));
        out.extend(bm.iter().map(|l| (Tag::Added, *l)));
    }
    out.extend(a[a.len() - tail..].iter().map(|l| (Tag::Same, *l)));
    out
}

#[cfg(test)]
mod tests;
