//! `git_diff` and `get_changed_files`.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::fs::root_of;
use crate::paths::resolve_inside;
use crate::registry::builtin_definition;
use crate::text::DEFAULT_OUTPUT_BYTES;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{GetChangedFilesArgs, GitDiffArgs, ToolArgs};

/// How long a git read may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs git in `root` and returns stdout, or an error message with stderr.
async fn git(
    root: &Path,
    args: &[&str],
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<u8>, String> {
    let answer = tokio::select! {
        answer = crate::git_host::query(root, args, GIT_TIMEOUT) => answer?,
        () = cancel.cancelled() => return Err("cancelled".to_string()),
    };
    if answer.success {
        Ok(answer.stdout)
    } else {
        Err(format!(
            "git {} failed (is the project a git repository?)",
            args.first().copied().unwrap_or_default()
        ))
    }
}

/// Shows the working-tree or staged diff.
#[derive(Debug, Clone)]
pub struct GitDiff {
    definition: ToolDefinition,
}

impl Default for GitDiff {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<GitDiffArgs>("Show uncommitted changes (git diff)."),
        }
    }
}

#[async_trait]
impl Tool for GitDiff {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match GitDiffArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let root = root_of(context);
        let mut git_args = vec!["diff", "--no-color", "--no-ext-diff", "--relative"];
        if args.staged.unwrap_or(false) {
            git_args.push("--cached");
        }
        if args.stat.unwrap_or(false) {
            git_args.push("--stat");
        }
        let path = match args.path.as_deref().filter(|p| !p.trim().is_empty()) {
            Some(raw) => match resolve_inside(&root, raw) {
                Ok(resolved) => Some(if resolved.relative.is_empty() {
                    ".".to_string()
                } else {
                    resolved.relative
                }),
                Err(error) => return ToolOutput::error(format!("git_diff: {error}")),
            },
            None => None,
        };
        if let Some(path) = &path {
            git_args.push("--");
            git_args.push(path);
        }
        match git(&root, &git_args, &context.cancel).await {
            Ok(stdout) => {
                let (text, omitted) = omit_secret_files(&root, &String::from_utf8_lossy(&stdout));
                let text = if omitted.is_empty() {
                    text
                } else {
                    format!(
                        "{text}\n(diff not shown for {}, which hold credentials; read_file asks a person for them)",
                        omitted.join(", ")
                    )
                };
                if text.trim().is_empty() {
                    ToolOutput::ok("(no diff)").with_details(json!({"empty": true}))
                } else {
                    let truncated = text.len() > DEFAULT_OUTPUT_BYTES as usize;
                    ToolOutput::ok(crate::text::head(&text, DEFAULT_OUTPUT_BYTES as usize))
                        .with_details(json!({"empty": false, "truncated": truncated}))
                }
            }
            Err(error) => ToolOutput::error(format!("git diff failed: {error}")),
        }
    }
}

/// The paths a `diff --git` section is about: both sides of its header (as far as they can
/// be told apart), and its `---`/`+++` and rename lines.
fn section_paths(section: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for line in section.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            // `a/P b/P`: the usual case, where spaces in P make splitting ambiguous.
            let n = rest.len();
            if n > 5 && (n - 5) % 2 == 0 {
                let half = (n - 5) / 2;
                if rest.starts_with("a/")
                    && rest.get(2 + half..5 + half) == Some(" b/")
                    && rest.get(2..2 + half) == rest.get(5 + half..)
                {
                    paths.push(rest[2..2 + half].to_string());
                }
            }
            if let Some((a, b)) = rest.split_once(" b/") {
                paths.push(a.trim_start_matches("a/").to_string());
                paths.push(b.to_string());
            }
        } else if let Some(path) = line
            .strip_prefix("--- a/")
            .or_else(|| line.strip_prefix("+++ b/"))
            .or_else(|| line.strip_prefix("rename from "))
            .or_else(|| line.strip_prefix("rename to "))
            .or_else(|| line.strip_prefix("copy from "))
            .or_else(|| line.strip_prefix("copy to "))
        {
            paths.push(path.trim_end().to_string());
        }
    }
    paths
}

/// `diff` without the sections of secret files ([`braincode_sandbox::is_secret_file`]), and
/// the paths left out: a tracked `.env` must not reach the model through a diff when
/// `read_file` would ask a person first.
pub fn omit_secret_files(root: &Path, diff: &str) -> (String, Vec<String>) {
    let mut kept = String::with_capacity(diff.len());
    let mut omitted = Vec::new();
    let mut sections: Vec<&str> = Vec::new();
    let mut start = 0;
    for (index, _) in diff.match_indices("diff --git ") {
        if index == 0 || diff[..index].ends_with('\n') {
            if index > start {
                sections.push(&diff[start..index]);
            }
            start = index;
        }
    }
    sections.push(&diff[start..]);
    for section in sections {
        let paths = section_paths(section);
        match paths
            .iter()
            .find(|p| braincode_sandbox::is_secret_file(root, p.as_str()))
        {
            Some(secret) => {
                if !omitted.contains(secret) {
                    omitted.push(secret.clone());
                }
            }
            None => kept.push_str(section),
        }
    }
    (kept, omitted)
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChangedFile {
    /// Path relative to the project root.
    pub path: String,
    /// Porcelain status (`M`, `A`, `D`, `R`, `??`, `MM`, …).
    pub status: String,
    /// Original path of a rename or copy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// Parses `git status --porcelain=v1 -z` output; `prefix` (from `--show-prefix`) is removed
/// from paths.
pub fn parse_porcelain_z(output: &[u8], prefix: &str) -> Vec<ChangedFile> {
    let text = String::from_utf8_lossy(output);
    let mut entries = text.split('\0').filter(|e| !e.is_empty());
    let strip = |path: &str| path.strip_prefix(prefix).unwrap_or(path).to_string();
    let mut files = Vec::new();
    while let Some(entry) = entries.next() {
        if entry.len() < 4 {
            continue;
        }
        let code = &entry[..2];
        let path = &entry[3..];
        let from = if code.contains('R') || code.contains('C') {
            entries.next().map(strip)
        } else {
            None
        };
        files.push(ChangedFile {
            path: strip(path),
            status: code.trim().to_string(),
            from,
        });
    }
    files
}

/// Lists changed files as JSON.
#[derive(Debug, Clone)]
pub struct GetChangedFiles {
    definition: ToolDefinition,
}

impl Default for GetChangedFiles {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<GetChangedFilesArgs>(
                "List changed files (git status) as JSON [{path, status, from?}]; status is the porcelain code (M, A, D, R, ??).",
            ),
        }
    }
}

#[async_trait]
impl Tool for GetChangedFiles {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        if let Err(error) = GetChangedFilesArgs::parse(&arguments) {
            return ToolOutput::error(error.to_string());
        }
        let root = root_of(context);
        let prefix = match git(&root, &["rev-parse", "--show-prefix"], &context.cancel).await {
            Ok(stdout) => String::from_utf8_lossy(&stdout).trim().to_string(),
            Err(error) => {
                return ToolOutput::error(format!("get_changed_files: git status failed: {error}"));
            }
        };
        let status = git(
            &root,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--untracked-files=all",
                "--",
                ".",
            ],
            &context.cancel,
        )
        .await;
        match status {
            Ok(stdout) => {
                let files = parse_porcelain_z(&stdout, &prefix);
                let text =
                    serde_json::to_string_pretty(&files).unwrap_or_else(|_| "[]".to_string());
                ToolOutput::ok(text).with_details(json!({"count": files.len()}))
            }
            Err(error) => {
                ToolOutput::error(format!("get_changed_files: git status failed: {error}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files_are_left_out_of_a_diff() {
        let root = std::env::temp_dir();
        let diff = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-a\n+b\n\
diff --git a/web/.env b/web/.env\n--- a/web/.env\n+++ b/web/.env\n@@ -1 +1 @@\n-K=1\n+K=SECRET\n\
diff --git a/my dir/x.txt b/my dir/x.txt\n--- a/my dir/x.txt\n+++ b/my dir/x.txt\n@@ -1 +1 @@\n-x\n+y\n\
diff --git a/old.txt b/config/master.key\nrename from old.txt\nrename to config/master.key\n";
        let (kept, omitted) = omit_secret_files(&root, diff);
        assert_eq!(omitted, vec!["web/.env", "config/master.key"]);
        assert!(
            !kept.contains("SECRET") && !kept.contains("master.key"),
            "{kept}"
        );
        assert!(
            kept.contains("+b\n") && kept.contains("my dir/x.txt"),
            "{kept}"
        );
    }

    #[test]
    fn parses_renames_and_untracked() {
        let output = b"R  new name.txt\0old name.txt\0 M sub/a.rs\0?? notes.md\0MM both\0";
        let files = parse_porcelain_z(output, "sub/");
        assert_eq!(files.len(), 4);
        assert_eq!(files[0].path, "new name.txt");
        assert_eq!(files[0].from.as_deref(), Some("old name.txt"));
        assert_eq!(files[0].status, "R");
        assert_eq!(files[1].path, "a.rs");
        assert_eq!(files[2].status, "??");
        assert_eq!(files[3].status, "MM");
    }
}
