//! `@path` and `@@session` references in a prompt.
//!
//! A token is `@` or `@@` at the start of the prompt or after whitespace, followed by a run of
//! characters that are neither whitespace nor `@`. Tokens are de-duplicated; `@image` and
//! `@image:*` (placeholders for pasted images) are ignored. When a path does not exist as
//! written but does without trailing punctuation (`@src/main.rs,`), the shorter path is used.
//!
//! * `@path`: text files up to [`AT_FILE_MAX_BYTES`] bytes are inlined in a fenced block
//!   labelled by extension; png/jpeg/gif/webp images up to [`AT_IMAGE_MAX_BYTES`] are attached
//!   as base64; other image formats (bmp, svg) are only mentioned. Missing, too large, binary
//!   (a NUL byte) or non-UTF-8 files are listed as "could not be inlined: <reason>".
//! * Containment: after resolving `~`, `..`, absolute paths and symlinks, a file outside the
//!   project root is refused unless `settings.references.allowOutsideProject` is true or the
//!   file is under one of `settings.references.allowedPaths`. Whatever the settings, files
//!   under `/proc`, `/sys` and `/dev` and anything but a regular file (FIFOs, sockets,
//!   devices) are refused, and the read itself goes through a [`ReadScope`], so a link
//!   swapped in after the check cannot redirect it.
//! * `@@id`: the session snapshot (see [`crate::journal`]), or "could not be inlined" when
//!   no session matches.
//!
//! The expanded text is the prompt, then `Referenced attachments:`, then one section per
//! reference in prompt order.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Serialize;

use crate::budgets::{AT_FILE_MAX_BYTES, AT_IMAGE_MAX_BYTES};
use crate::contained::{ContainedError, FileKind, ReadScope};
use crate::journal::{SnapshotOptions, resolve_session, session_snapshot};
use crate::{Home, Settings};

/// What separates the prompt from the inlined references in an expanded prompt.
pub const ATTACHMENTS_HEADING: &str = "\n\nReferenced attachments:\n";

/// What the references of a prompt may read.
#[derive(Debug, Clone, Copy)]
pub struct ReferenceContext<'a> {
    /// Project root (relative paths resolve against it; containment is checked against it).
    pub project_root: &'a Path,
    /// The Braincode home (sessions for `@@id`).
    pub home: &'a Home,
    /// Settings (`references` policy).
    pub settings: &'a Settings,
}

/// `@` (a file) or `@@` (a session).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReferenceKind {
    /// `@path`.
    File,
    /// `@@id`.
    Session,
}

/// One reference token found in a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReferenceToken {
    /// The token as written (`@src/a.rs`, `@@abc`).
    pub token: String,
    /// File or session.
    pub kind: ReferenceKind,
    /// The text after `@` / `@@`.
    pub target: String,
}

/// Finds the reference tokens of `prompt`, de-duplicated, in order of first appearance.
pub fn tokenize_references(prompt: &str) -> Vec<ReferenceToken> {
    let mut tokens: Vec<ReferenceToken> = Vec::new();
    let mut prev_is_space = true;
    let mut chars = prompt.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if c != '@' || !prev_is_space {
            prev_is_space = c.is_whitespace();
            continue;
        }
        let mut at_count = 1;
        if chars.peek().is_some_and(|(_, next)| *next == '@') {
            chars.next();
            at_count = 2;
        }
        let target_start = start + at_count;
        let mut end = target_start;
        while let Some((i, next)) = chars.peek().copied() {
            if next.is_whitespace() || next == '@' {
                break;
            }
            end = i + next.len_utf8();
            chars.next();
        }
        // Whatever stopped the run (space, `@`, end) decides what may follow.
        prev_is_space = false;
        if end == target_start {
            continue;
        }
        let target = &prompt[target_start..end];
        let kind = if at_count == 2 {
            ReferenceKind::Session
        } else {
            ReferenceKind::File
        };
        if kind == ReferenceKind::File && (target == "image" || target.starts_with("image:")) {
            continue;
        }
        let token = &prompt[start..end];
        if tokens.iter().any(|t| t.token == token) {
            continue;
        }
        tokens.push(ReferenceToken {
            token: token.to_string(),
            kind,
            target: target.to_string(),
        });
    }
    tokens
}

/// An image attached to the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageAttachment {
    /// The file.
    pub path: PathBuf,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// The bytes, base64.
    pub data_base64: String,
}

/// What happened to one reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "reason", rename_all = "lowercase")]
pub enum ReferenceOutcome {
    /// Its content is in the text.
    Inlined,
    /// It is attached as an image (or mentioned as a filesystem reference).
    Attached,
    /// It could not be used, and why.
    Failed(String),
}

/// One reference and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedReference {
    /// The token as written.
    pub token: String,
    /// File or session.
    pub kind: ReferenceKind,
    /// What happened.
    pub outcome: ReferenceOutcome,
}

/// A prompt with its references expanded.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ExpandedPrompt {
    /// The prompt plus the attachment sections.
    pub text: String,
    /// Images to send with the prompt.
    pub images: Vec<ImageAttachment>,
    /// Every reference and its outcome.
    pub references: Vec<ResolvedReference>,
}

const INLINE_IMAGE_TYPES: [(&str, &str); 5] = [
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
];
const OTHER_IMAGE_EXTENSIONS: [&str; 2] = ["bmp", "svg"];

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `~` / `~/x` → the user's home; relative → against `base`.
fn expand_path(raw: &str, base: &Path) -> PathBuf {
    if raw == "~" {
        return home_dir().unwrap_or_else(|| PathBuf::from(raw));
    }
    if let Some(rest) = raw.strip_prefix("~/")
        && let Some(home) = home_dir()
    {
        return home.join(rest);
    }
    let path = PathBuf::from(raw);
    if path.is_absolute() {
        path
    } else {
        base.join(path)
    }
}

/// The scope `@path` references may read: the project root, plus the allowed paths of the
/// settings (or all of `/` with `allowOutsideProject`). The scope still refuses system files.
fn reference_scope(ctx: &ReferenceContext<'_>) -> Result<ReadScope, String> {
    let scope = ReadScope::new(ctx.project_root).map_err(|err| {
        format!(
            "cannot resolve the project root {}: {err}",
            ctx.project_root.display()
        )
    })?;
    let references = &ctx.settings.references;
    let allowed: Vec<PathBuf> = if references.allow_outside_project {
        vec![PathBuf::from("/")]
    } else {
        references
            .allowed_paths
            .iter()
            .map(|entry| expand_path(entry.trim(), ctx.project_root))
            .collect()
    };
    Ok(scope.with_allowed(allowed))
}

const OUTSIDE_PROJECT: &str = "the file is outside the project root; allow it with settings.references.allowedPaths (or references.allowOutsideProject) in settings.json";

/// The reason shown for a refused or unreadable reference.
fn refusal(err: &ContainedError) -> String {
    match err {
        _ if err.is_not_found() => "file not found".into(),
        ContainedError::Outside { .. } => OUTSIDE_PROJECT.into(),
        ContainedError::SpecialFilesystem { target, .. } => format!(
            "it leads to {}, a system file under /proc, /sys or /dev; those are never read, whatever the settings",
            target.display()
        ),
        ContainedError::NotRegular {
            kind: FileKind::Directory,
            ..
        } => "it is a directory; reference a file, or ask the agent to list it".into(),
        ContainedError::NotRegular { kind, .. } => {
            format!("it is a {kind}, not a regular file; only regular files are read")
        }
        ContainedError::Replaced { .. } => {
            "the file changed while it was being opened (a link or file was swapped); try again"
                .into()
        }
        ContainedError::Io { source, .. } => format!("cannot read the file: {source}"),
        ContainedError::NotDirectory { .. } => err.to_string(),
    }
}

enum FileContent {
    Text { label: String, body: String },
    Image(ImageAttachment),
    Mention { mime: &'static str },
}

fn read_reference(
    target: &str,
    scope: &Result<ReadScope, String>,
    ctx: &ReferenceContext<'_>,
) -> Result<(PathBuf, FileContent), String> {
    let scope = scope.as_ref().map_err(Clone::clone)?;
    let mut candidate = expand_path(target, ctx.project_root);
    if !candidate.exists() {
        let trimmed =
            target.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'']);
        if !trimmed.is_empty() && trimmed != target {
            let shorter = expand_path(trimmed, ctx.project_root);
            if shorter.exists() {
                candidate = shorter;
            }
        }
    }
    let canonical = scope.resolve(&candidate).map_err(|err| refusal(&err))?;
    let extension = canonical
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    if let Some((_, mime)) = INLINE_IMAGE_TYPES.iter().find(|(ext, _)| *ext == extension) {
        let max = usize::try_from(AT_IMAGE_MAX_BYTES).unwrap_or(usize::MAX);
        let read = scope
            .read_bytes(&candidate, max)
            .map_err(|err| refusal(&err))?;
        if read.clipped {
            return Err(format!(
                "image is {} bytes (limit {AT_IMAGE_MAX_BYTES})",
                read.size
            ));
        }
        let image = ImageAttachment {
            path: read.path.clone(),
            mime_type: (*mime).to_string(),
            data_base64: base64::engine::general_purpose::STANDARD.encode(read.bytes),
        };
        return Ok((read.path, FileContent::Image(image)));
    }
    if OTHER_IMAGE_EXTENSIONS.contains(&extension.as_str()) {
        let mime = if extension == "svg" {
            "image/svg+xml"
        } else {
            "image/bmp"
        };
        return Ok((canonical, FileContent::Mention { mime }));
    }
    let read = scope
        .read_bytes(&candidate, AT_FILE_MAX_BYTES)
        .map_err(|err| refusal(&err))?;
    if read.clipped {
        return Err(format!(
            "file is {} bytes (limit {AT_FILE_MAX_BYTES})",
            read.size
        ));
    }
    if read.bytes.contains(&0) {
        return Err("binary file (contains NUL bytes)".into());
    }
    let body = String::from_utf8(read.bytes).map_err(|_| "file is not UTF-8 text".to_string())?;
    Ok((
        read.path,
        FileContent::Text {
            label: extension,
            body,
        },
    ))
}

/// A code fence longer than any backtick run inside `body`.
fn fence_for(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// Expands the references of `prompt` (see the module docs).
pub fn expand_references(prompt: &str, ctx: &ReferenceContext<'_>) -> ExpandedPrompt {
    let tokens = tokenize_references(prompt);
    if tokens.is_empty() {
        return ExpandedPrompt {
            text: prompt.to_string(),
            ..ExpandedPrompt::default()
        };
    }
    let mut sections = Vec::new();
    let mut images = Vec::new();
    let mut references = Vec::new();
    let scope = reference_scope(ctx);
    for token in tokens {
        let (section, outcome) = match token.kind {
            ReferenceKind::Session => expand_session(&token, ctx),
            ReferenceKind::File => match read_reference(&token.target, &scope, ctx) {
                Ok((path, FileContent::Text { label, body })) => {
                    let fence = fence_for(&body);
                    let newline = if body.ends_with('\n') { "" } else { "\n" };
                    (
                        format!(
                            "File {} ({}):\n{fence}{label}\n{body}{newline}{fence}",
                            token.token,
                            path.display()
                        ),
                        ReferenceOutcome::Inlined,
                    )
                }
                Ok((path, FileContent::Image(image))) => {
                    let section = format!(
                        "Image {} ({}, {}): attached to this message",
                        token.token,
                        path.display(),
                        image.mime_type
                    );
                    images.push(image);
                    (section, ReferenceOutcome::Attached)
                }
                Ok((path, FileContent::Mention { mime })) => (
                    format!(
                        "Image {} ({mime}): filesystem reference {} (not attached: only png, jpeg, gif and webp images can be attached)",
                        token.token,
                        path.display()
                    ),
                    ReferenceOutcome::Attached,
                ),
                Err(reason) => (
                    format!("{}: could not be inlined: {reason}", token.token),
                    ReferenceOutcome::Failed(reason),
                ),
            },
        };
        sections.push(section);
        references.push(ResolvedReference {
            token: token.token,
            kind: token.kind,
            outcome,
        });
    }
    let mut text = prompt.trim_end().to_string();
    text.push_str(ATTACHMENTS_HEADING);
    for section in sections {
        text.push('\n');
        text.push_str(&section);
        text.push('\n');
    }
    ExpandedPrompt {
        text,
        images,
        references,
    }
}

fn expand_session(
    token: &ReferenceToken,
    ctx: &ReferenceContext<'_>,
) -> (String, ReferenceOutcome) {
    let failed = |reason: String| {
        (
            format!("{}: could not be inlined: {reason}", token.token),
            ReferenceOutcome::Failed(reason),
        )
    };
    let id = match resolve_session(ctx.home, &token.target) {
        Ok(id) => id,
        Err(crate::LookupError::NotFound { .. } | crate::LookupError::InvalidId { .. }) => {
            return failed("session not found".into());
        }
        Err(err) => return failed(err.to_string()),
    };
    // A fresh handoff (no run started after it) is the session's own summary: inlined as it
    // is. Otherwise the mechanical snapshot of its records.
    if let Ok((summary, true)) = crate::journal::session_handoff(ctx.home, &id) {
        return (
            format!(
                "Referenced session handoff {} (session {id}; its latest summary):\n{}",
                token.token,
                summary.trim_end()
            ),
            ReferenceOutcome::Inlined,
        );
    }
    match session_snapshot(ctx.home, &id, &SnapshotOptions::default()) {
        Ok(snapshot) => (
            format!(
                "Referenced session context {} (session {id}):\n{}",
                token.token,
                snapshot.text.trim_end()
            ),
            ReferenceOutcome::Inlined,
        ),
        Err(err) => failed(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(prompt: &str) -> Vec<String> {
        tokenize_references(prompt)
            .into_iter()
            .map(|t| t.token)
            .collect()
    }

    #[test]
    fn token_grammar() {
        assert_eq!(targets("@a.rs and @@s1 and @a.rs"), ["@a.rs", "@@s1"]);
        assert_eq!(targets("mail me@x.com"), Vec::<String>::new());
        assert_eq!(targets("@image @image:1 @imagery"), ["@imagery"]);
        assert_eq!(targets("@ @@ @@@x x@y"), Vec::<String>::new());
        assert_eq!(targets("a\t@b\n@@c"), ["@b", "@@c"]);
        assert_eq!(targets("@a@b @c"), ["@a", "@c"]);
        assert_eq!(targets("(@a) @é/ü"), ["@é/ü"]);
    }

    #[test]
    fn fences_outgrow_backticks() {
        assert_eq!(fence_for("plain"), "```");
        assert_eq!(fence_for("has ``` inside"), "````");
    }
}
