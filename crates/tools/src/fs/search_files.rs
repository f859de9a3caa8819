//! `search_files`: content search with ripgrep's regex engine and searcher, or path search.

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{Value, json};

use super::{directory_in, pending_in, relative, root_of, walk};
use crate::registry::builtin_definition;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{SearchFilesArgs, ToolArgs};

/// Default number of results.
pub const DEFAULT_MAX_RESULTS: u64 = 100;
/// Largest `maxResults`.
pub const MAX_RESULTS: u64 = 1_000;
/// Files considered in path mode.
pub const PATH_MODE_MAX_FILES: usize = 5_000;
/// Files larger than this are not searched (bytes).
pub const MAX_SEARCHABLE_FILE_BYTES: u64 = 512_000;
/// A matching line longer than this is clipped (chars).
const MAX_LINE_CHARS: usize = 400;

/// Searches file contents (regex) or file paths (substring).
#[derive(Debug, Clone)]
pub struct SearchFiles {
    definition: ToolDefinition,
}

impl Default for SearchFiles {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<SearchFilesArgs>(
                "Search file contents by regex (an invalid one is searched literally), or paths by substring (mode path). Results are file:line:text.",
            ),
        }
    }
}

struct Outcome {
    lines: Vec<String>,
    truncated: bool,
    literal_note: Option<String>,
    files_skipped: usize,
    /// Secret files whose contents were not searched (`read_file` asks a person for them).
    secrets_skipped: Vec<String>,
}

#[async_trait]
impl Tool for SearchFiles {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match SearchFilesArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let root = root_of(context);
        let dir = match directory_in(context, &root, args.directory.as_deref()).await {
            Ok(dir) => dir,
            Err(error) => return ToolOutput::error(format!("search_files: {error}")),
        };
        // A sparse worktree's files not on disk yet are searched as if they were.
        let pending = match pending_in(context, &root, &dir, args.glob.as_deref()).await {
            Ok(pending) => pending,
            Err(error) => return ToolOutput::error(format!("search_files: {error}")),
        };
        let query = args.query.clone().unwrap_or_default();
        let path_mode = args
            .mode
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case("path"))
            || query.is_empty();
        let glob = args.glob.clone();
        let max = args
            .max_results
            .unwrap_or(DEFAULT_MAX_RESULTS)
            .clamp(1, MAX_RESULTS) as usize;
        let cancel = context.cancel.clone();
        let query_for_search = query.clone();
        // Path mode lists the pending files with the others; content mode reads them after.
        let (pending_paths, pending) = if path_mode {
            (pending, Vec::new())
        } else {
            (Vec::new(), pending)
        };
        let disk_root = root.clone();
        let result = tokio::task::spawn_blocking(move || -> Result<Outcome, String> {
            if path_mode {
                search_paths(
                    &disk_root,
                    &dir,
                    glob.as_deref(),
                    &query_for_search,
                    max,
                    &cancel,
                    &pending_paths,
                )
            } else {
                search_contents(
                    &disk_root,
                    &dir,
                    glob.as_deref(),
                    &query_for_search,
                    max,
                    &cancel,
                )
            }
        })
        .await;
        let mut outcome = match result {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(error)) => return ToolOutput::error(format!("search_files: {error}")),
            Err(error) => return ToolOutput::error(format!("search_files failed: {error}")),
        };
        if !pending.is_empty()
            && let Err(error) =
                search_pending(context, &root, &query, max, pending, &mut outcome).await
        {
            return ToolOutput::error(format!("search_files: {error}"));
        }
        let mut content = String::new();
        if let Some(note) = &outcome.literal_note {
            content.push_str(note);
            content.push('\n');
        }
        if outcome.lines.is_empty() {
            content.push_str(if path_mode {
                "(no matching paths)"
            } else {
                "(no matches)"
            });
        } else {
            content.push_str(&outcome.lines.join("\n"));
        }
        if outcome.truncated {
            content.push_str(&format!(
                "\n(showing the first {max} results; narrow the query or glob, or raise maxResults)"
            ));
        }
        if !outcome.secrets_skipped.is_empty() {
            content.push_str(&format!(
                "\n(not searched: {}, which hold credentials; read_file asks a person for them)",
                outcome.secrets_skipped.join(", ")
            ));
        }
        ToolOutput::ok(content).with_details(json!({
            "mode": if path_mode { "path" } else { "content" },
            "count": outcome.lines.len(),
            "truncated": outcome.truncated,
            "literalFallback": outcome.literal_note.is_some(),
            "skippedLargeFiles": outcome.files_skipped,
            "skippedSecretFiles": outcome.secrets_skipped,
        }))
    }
}

fn search_paths(
    root: &std::path::Path,
    dir: &std::path::Path,
    glob: Option<&str>,
    query: &str,
    max: usize,
    cancel: &tokio_util::sync::CancellationToken,
    pending: &[String],
) -> Result<Outcome, String> {
    let needle = query.to_lowercase();
    let mut lines = Vec::new();
    let mut truncated = false;
    let mut seen = 0;
    for entry in walk(dir, glob)?.flatten() {
        if cancel.is_cancelled() || seen >= PATH_MODE_MAX_FILES {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        seen += 1;
        let rel = relative(root, entry.path());
        if rel.to_lowercase().contains(&needle) {
            if lines.len() == max {
                truncated = true;
                break;
            }
            lines.push(rel);
        }
    }
    for rel in pending {
        if truncated || seen >= PATH_MODE_MAX_FILES {
            break;
        }
        seen += 1;
        if rel.to_lowercase().contains(&needle) && !lines.contains(rel) {
            if lines.len() == max {
                truncated = true;
                break;
            }
            lines.push(rel.clone());
        }
    }
    Ok(Outcome {
        lines,
        truncated,
        literal_note: None,
        files_skipped: 0,
        secrets_skipped: Vec::new(),
    })
}

fn search_contents(
    root: &std::path::Path,
    dir: &std::path::Path,
    glob: Option<&str>,
    query: &str,
    max: usize,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Outcome, String> {
    let (matcher, literal_note) = matcher_for(query)?;
    let mut searcher = searcher();
    let mut lines: Vec<String> = Vec::new();
    let mut truncated = false;
    let mut files_skipped = 0;
    let mut secrets_skipped = Vec::new();
    for entry in walk(dir, glob)?.flatten() {
        if cancel.is_cancelled() || truncated {
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if entry.metadata().map(|m| m.len()).unwrap_or(0) > MAX_SEARCHABLE_FILE_BYTES {
            files_skipped += 1;
            continue;
        }
        let rel = relative(root, entry.path());
        if braincode_sandbox::is_secret_file(root, &rel) {
            secrets_skipped.push(rel);
            continue;
        }
        let mut sink = LineSink::new(&rel, &mut lines, max, &mut truncated);
        let result =
            searcher.search_path(&matcher, entry.path(), Lossy(|n, line| sink.take(n, line)));
        if let Err(error) = result {
            tracing::debug!(path = %rel, %error, "search skipped a file");
        }
    }
    Ok(Outcome {
        lines,
        truncated,
        literal_note,
        files_skipped,
        secrets_skipped,
    })
}

/// Searches the pending files (a sparse worktree's files not on disk yet) after the disk,
/// reading them from git a few hundred at a time.
async fn search_pending(
    context: &ToolContext,
    root: &std::path::Path,
    query: &str,
    max: usize,
    pending: Vec<String>,
    outcome: &mut Outcome,
) -> Result<(), String> {
    const CHUNK: usize = 1024;
    let Some(lazy) = &context.lazy else {
        return Ok(());
    };
    let (matcher, _) = matcher_for(query)?;
    let mut searcher = searcher();
    let (searchable, secrets): (Vec<String>, Vec<String>) =
        (pending.into_iter()).partition(|rel| !braincode_sandbox::is_secret_file(root, rel));
    outcome.secrets_skipped.extend(secrets);
    for chunk in searchable.chunks(CHUNK) {
        if context.cancel.is_cancelled() || outcome.truncated {
            break;
        }
        let contents = lazy.read_pending(chunk).await?;
        for rel in chunk {
            let Some(bytes) = contents.get(rel) else {
                continue;
            };
            if outcome.truncated {
                break;
            }
            if bytes.len() as u64 > MAX_SEARCHABLE_FILE_BYTES {
                outcome.files_skipped += 1;
                continue;
            }
            let mut sink = LineSink::new(rel, &mut outcome.lines, max, &mut outcome.truncated);
            let result =
                searcher.search_slice(&matcher, bytes, Lossy(|n, line| sink.take(n, line)));
            if let Err(error) = result {
                tracing::debug!(path = %rel, %error, "search skipped a file");
            }
        }
    }
    Ok(())
}

/// Collects one file's matching lines as `file:line:text`, up to `max` in all.
struct LineSink<'a> {
    rel: &'a str,
    lines: &'a mut Vec<String>,
    max: usize,
    truncated: &'a mut bool,
}

impl<'a> LineSink<'a> {
    fn new(rel: &'a str, lines: &'a mut Vec<String>, max: usize, truncated: &'a mut bool) -> Self {
        Self {
            rel,
            lines,
            max,
            truncated,
        }
    }

    fn take(&mut self, line_number: u64, line: &str) -> Result<bool, std::io::Error> {
        if self.lines.len() == self.max {
            *self.truncated = true;
            return Ok(false);
        }
        let text = braincode_protocol::clip_chars_then_ellipsis(
            line.trim_end_matches(['\n', '\r']),
            MAX_LINE_CHARS,
        );
        self.lines
            .push(format!("{}:{line_number}:{text}", self.rel));
        Ok(true)
    }
}

/// The searcher every content search uses: line numbers, a NUL byte means binary.
fn searcher() -> grep_searcher::Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build()
}

/// The matcher for `query`, and a note when it was not a valid regex (then searched for
/// literally).
fn matcher_for(query: &str) -> Result<(grep_regex::RegexMatcher, Option<String>), String> {
    let mut builder = RegexMatcherBuilder::new();
    builder.line_terminator(Some(b'\n'));
    Ok(match builder.build(query) {
        Ok(matcher) => (matcher, None),
        Err(error) => {
            let matcher = builder
                .build(&regex::escape(query))
                .map_err(|e| format!("cannot search for {query:?}: {e}"))?;
            let reason = error.to_string();
            let first_line = reason
                .lines()
                .last()
                .unwrap_or("invalid regex")
                .trim()
                .to_string();
            (
                matcher,
                Some(format!(
                    "(query is not a valid regex ({first_line}); searched for it literally)"
                )),
            )
        }
    })
}
