//! Finding the session to continue in a project (`braincode run --continue`).
//!
//! Journals are visited newest first (by modification time, the listing's order) and only
//! their head is read, up to the first `run_start`, whose `projectSupport.root` says where the
//! session's runs were made. The walk stops at the first match, so the cost is one small read
//! per session newer than the answer.

use std::collections::HashMap;
use std::path::Path;

use braincode_protocol::SessionId;

use super::list::{HEAD_SCAN_BYTES, scan_head, session_files};
use crate::{Home, LookupError};

/// The most recently active session whose first run was made in project `root` (compared
/// as canonical paths, so a symlinked or relative spelling of the same directory matches).
/// `None` when no session was made there. Unreadable journals are skipped.
pub fn latest_session_for_project(
    home: &Home,
    root: &Path,
) -> Result<Option<SessionId>, LookupError> {
    let wanted = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    // Many sessions share a root: canonicalize each recorded spelling once.
    let mut judged: HashMap<String, bool> = HashMap::new();
    for (id, path, _, _) in session_files(home)? {
        let head = match scan_head(&path, HEAD_SCAN_BYTES, false) {
            Ok(head) => head,
            // A journal removed or unreadable meanwhile is not the one to continue.
            Err(err) => {
                tracing::warn!("cannot read session journal {}: {err}", path.display());
                continue;
            }
        };
        let Some(recorded) = head
            .first_run_start
            .and_then(|start| start.project_support)
            .map(|support| support.root)
        else {
            continue;
        };
        let same = *judged
            .entry(recorded)
            .or_insert_with_key(|recorded| same_directory(recorded, &wanted));
        if same {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Whether the recorded project root names the canonical directory `wanted`.
fn same_directory(recorded: &str, wanted: &Path) -> bool {
    let recorded = Path::new(recorded);
    recorded.is_absolute()
        && (recorded == wanted || recorded.canonicalize().is_ok_and(|dir| dir == wanted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JournalWriter;
    use braincode_protocol::Record;
    use serde_json::json;
    use std::fs;

    fn run_start(prompt: &str, root: &Path) -> Record {
        serde_json::from_value(json!({
            "type": "run_start", "prompt": prompt,
            "projectSupport": {"root": root.to_str().unwrap()}
        }))
        .unwrap()
    }

    fn run_end(summary: &str) -> Record {
        serde_json::from_value(json!({"type": "run_end", "summary": summary})).unwrap()
    }

    /// Writes a journal and dates it `age_secs` ago.
    fn session(home: &Home, id: &str, records: &[Record], age_secs: u64) {
        let id = SessionId::new(id).unwrap();
        let mut writer = JournalWriter::open(home, &id).unwrap();
        for record in records {
            writer.append(record).unwrap();
        }
        drop(writer);
        set_age(&home.session_path(&id), age_secs);
    }

    fn set_age(path: &Path, age_secs: u64) {
        let time = std::time::SystemTime::now() - std::time::Duration::from_secs(age_secs);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        home: Home,
        a: std::path::PathBuf,
        b: std::path::PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let home = Home::at(base.join("home"));
        let (a, b) = (base.join("a"), base.join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        Fixture {
            _dir: dir,
            home,
            a,
            b,
        }
    }

    fn latest(fx: &Fixture, root: &Path) -> Option<String> {
        latest_session_for_project(&fx.home, root)
            .unwrap()
            .map(|id| id.as_str().to_string())
    }

    #[test]
    fn newest_session_of_the_project_wins() {
        let fx = fixture();
        session(
            &fx.home,
            "a-old",
            &[run_start("one", &fx.a), run_end("x")],
            300,
        );
        session(
            &fx.home,
            "a-new",
            &[run_start("two", &fx.a), run_end("y")],
            200,
        );
        // Newer, but another project.
        session(&fx.home, "b-newest", &[run_start("three", &fx.b)], 100);
        assert_eq!(latest(&fx, &fx.a).as_deref(), Some("a-new"));
        assert_eq!(latest(&fx, &fx.b).as_deref(), Some("b-newest"));

        // Activity (a later append) makes an older session the latest.
        let mut writer = JournalWriter::open(&fx.home, &SessionId::new("a-old").unwrap()).unwrap();
        writer.append(&run_start("again", &fx.a)).unwrap();
        drop(writer);
        set_age(&fx.home.session_path(&SessionId::new("a-old").unwrap()), 10);
        assert_eq!(latest(&fx, &fx.a).as_deref(), Some("a-old"));
    }

    #[test]
    fn roots_compare_exactly_as_canonical_paths() {
        let fx = fixture();
        let sub = fx.a.join("sub");
        fs::create_dir_all(&sub).unwrap();
        session(&fx.home, "in-sub", &[run_start("s", &sub)], 100);
        // A session of a subdirectory is not the project's, nor the other way round.
        assert_eq!(latest(&fx, &fx.a), None);
        session(&fx.home, "in-a", &[run_start("s", &fx.a)], 200);
        assert_eq!(latest(&fx, &fx.a).as_deref(), Some("in-a"));
        assert_eq!(latest(&fx, &sub).as_deref(), Some("in-sub"));
        // Another spelling of the same directory.
        let dotted = fx.a.join("sub").join("..");
        assert_eq!(latest(&fx, &dotted).as_deref(), Some("in-a"));
        #[cfg(unix)]
        {
            let link = fx.b.join("link-to-a");
            std::os::unix::fs::symlink(&fx.a, &link).unwrap();
            assert_eq!(latest(&fx, &link).as_deref(), Some("in-a"));
            // A session recorded through the link is found from the real path.
            session(&fx.home, "via-link", &[run_start("s", &link)], 50);
            assert_eq!(latest(&fx, &fx.a).as_deref(), Some("via-link"));
        }
    }

    #[test]
    fn nothing_to_continue_is_none() {
        let fx = fixture();
        // No sessions directory at all.
        assert_eq!(latest(&fx, &fx.a), None);
        assert!(!fx.home.sessions_dir().exists());
        session(&fx.home, "b-only", &[run_start("s", &fx.b)], 10);
        assert_eq!(latest(&fx, &fx.a), None);
    }

    #[test]
    fn journals_without_a_usable_head_are_passed_over() {
        let fx = fixture();
        session(&fx.home, "good", &[run_start("s", &fx.a)], 300);
        session(&fx.home, "empty", &[], 10);
        let dir = fx.home.sessions_dir();
        fs::write(dir.join("garbage.jsonl"), "not json\n{\"type\":\n").unwrap();
        set_age(&dir.join("garbage.jsonl"), 20);
        // A run_start without a project, and one with a relative root.
        fs::write(
            dir.join("no-root.jsonl"),
            "{\"timestamp\":1,\"type\":\"run_start\",\"prompt\":\"p\"}\n",
        )
        .unwrap();
        set_age(&dir.join("no-root.jsonl"), 30);
        fs::write(
            dir.join("relative.jsonl"),
            "{\"timestamp\":1,\"type\":\"run_start\",\"prompt\":\"p\",\"projectSupport\":{\"root\":\"a\"}}\n",
        )
        .unwrap();
        set_age(&dir.join("relative.jsonl"), 40);
        // A directory that looks like a journal.
        fs::create_dir_all(dir.join("dir.jsonl")).unwrap();
        assert_eq!(latest(&fx, &fx.a).as_deref(), Some("good"));
    }

    #[test]
    fn a_malformed_first_line_does_not_hide_the_run_start() {
        let fx = fixture();
        let dir = fx.home.sessions_dir();
        fs::create_dir_all(&dir).unwrap();
        let start = serde_json::to_string(&braincode_protocol::JournalEntry::new(
            1,
            run_start("p", &fx.a),
        ))
        .unwrap();
        fs::write(dir.join("s1.jsonl"), format!("{{torn\n{start}\n")).unwrap();
        assert_eq!(latest(&fx, &fx.a).as_deref(), Some("s1"));
    }
}
