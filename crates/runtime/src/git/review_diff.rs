//! The diff a reviewer reads: git's stats and diffs of the change, and previews of the new
//! files read through the capability-safe layer (a link is named, never followed; a secret
//! file is named, never shown).

use std::path::Path;

use super::{GIT_TIMEOUT, git_each};

/// Largest diff shown to the reviewer.
pub const REVIEW_DIFF_MAX_CHARS: usize = 60_000;
/// Largest preview of one untracked file.
pub const UNTRACKED_PREVIEW_MAX_BYTES: usize = 12_000;

/// The diff a reviewer reads: stats, the full unstaged and staged diffs, and previews of new
/// files (binaries omitted). Returns the text and whether it was clipped.
pub async fn review_diff(root: &Path, new_files: &[String]) -> (String, bool) {
    let mut out = String::new();
    let labels = ["stat", "staged stat", "diff", "staged diff"];
    let queries: [&[&str]; 4] = [
        &["diff", "--stat"],
        &["diff", "--cached", "--stat"],
        &["diff"],
        &["diff", "--cached"],
    ];
    let answers = git_each(root, &queries, GIT_TIMEOUT).await;
    for (label, text) in labels.iter().zip(answers) {
        if let Some(text) = text.filter(|text| !text.trim().is_empty()) {
            out.push_str(&format!("# {label}\n{}\n", text.trim_end()));
        }
    }
    for path in new_files {
        // Read beneath the root with no symlink followed: an untracked `notes.txt ->
        // ~/.ssh/id_rsa` is named, never read; secret files are named, never shown.
        let relative = Path::new(path);
        match braincode_sandbox::beneath::stat(root, relative) {
            Ok(Some(entry)) if entry.kind == braincode_sandbox::beneath::EntryKind::File => {}
            Ok(Some(entry)) if entry.kind == braincode_sandbox::beneath::EntryKind::Symlink => {
                out.push_str(&format!(
                    "# new file {path} (symbolic link, not followed)\n"
                ));
                continue;
            }
            _ => continue,
        }
        if braincode_sandbox::is_secret_file(root, relative) {
            out.push_str(&format!("# new file {path} (secret file, not shown)\n"));
            continue;
        }
        let Ok(bytes) = braincode_sandbox::beneath::read_file(
            root,
            relative,
            UNTRACKED_PREVIEW_MAX_BYTES as u64 * 4,
        ) else {
            continue;
        };
        if bytes.iter().take(4_096).any(|b| *b == 0) {
            out.push_str(&format!("# new file {path} (binary, not shown)\n"));
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let preview = braincode_context::clip_bytes(&text, UNTRACKED_PREVIEW_MAX_BYTES);
        out.push_str(&format!("# new file {path}\n{preview}\n"));
    }
    let truncated = out.chars().count() > REVIEW_DIFF_MAX_CHARS;
    if truncated {
        out = braincode_context::clip_chars(&out, REVIEW_DIFF_MAX_CHARS);
        out.push_str("\n[diff truncated]");
    }
    (out, truncated)
}
