//! Completion of the token at the cursor: `@` project files, `@@` sessions, `/` commands.
//!
//! The file index is one gitignore-aware walk of the project (the `ignore` crate, the same
//! rules as `git status`, `.git/` skipped, hidden files kept), bounded to
//! [`FILE_INDEX_MAX_FILES`] files and cached for the session; it and the session list are
//! read on a background thread the first time they are needed, so typing `@` in a large
//! repository never freezes the screen. Ranking is fuzzy: the query's characters in order,
//! with a match in the file name and a contiguous match preferred, shorter paths first.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use braincode_config::{Home, ListOptions, SessionInfo, list_sessions};
use ignore::WalkBuilder;

use crate::slash;

/// Most files the `@` index holds; a larger project is indexed partially (and says so).
pub const FILE_INDEX_MAX_FILES: usize = 20_000;
/// Sessions offered for `@@` (the newest of this project).
pub const SESSION_SUGGESTIONS: usize = 50;
/// Most candidates a popup keeps (it shows [`POPUP_MAX_ROWS`] at a time).
pub const POPUP_MAX_CANDIDATES: usize = 50;
/// Rows of candidates the popup shows at once.
pub const POPUP_MAX_ROWS: usize = 8;

/// The project's files, relative paths with `/`, in walk order (sorted by name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileIndex {
    files: Vec<String>,
    truncated: bool,
}

impl FileIndex {
    /// Walks `root` honouring `.gitignore`/`.ignore` files (also outside a git repository),
    /// skipping `.git/` and paths with whitespace (an `@` reference cannot hold them); stops
    /// after `limit` files.
    pub fn build(root: &Path, limit: usize) -> FileIndex {
        let walker = WalkBuilder::new(root)
            .hidden(false)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(std::cmp::Ord::cmp)
            .filter_entry(|entry| entry.file_name() != ".git")
            .build();
        let mut index = FileIndex::default();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(root) else {
                continue;
            };
            let path = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            if path.is_empty() || path.chars().any(char::is_whitespace) {
                continue;
            }
            if index.files.len() >= limit {
                index.truncated = true;
                break;
            }
            index.files.push(path);
        }
        index
    }

    /// An index of these paths (tests, callers with their own walk).
    pub fn from_paths(files: Vec<String>) -> FileIndex {
        FileIndex {
            files,
            truncated: false,
        }
    }

    /// The indexed paths.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Whether the walk stopped at the limit.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The best `limit` paths for `query`, best first (ties: shorter, then alphabetical).
    pub fn rank(&self, query: &str, limit: usize) -> Vec<&str> {
        let mut scored: Vec<(i64, &str)> = self
            .files
            .iter()
            .filter_map(|path| fuzzy_score(path, query).map(|score| (score, path.as_str())))
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.truncate(limit);
        scored.into_iter().map(|(_, path)| path).collect()
    }
}

/// How well `path` matches `query` (case-insensitive), `None` when the query's characters
/// do not all appear in order. Bands, best first: the file name is the query, starts with
/// it, contains it; the path starts with or contains it; the file name, then the path,
/// holds the query's characters in order (contiguous and word-start matches score more).
/// Within a band a shorter path wins. An empty query prefers shallow paths.
pub fn fuzzy_score(path: &str, query: &str) -> Option<i64> {
    let path = path.to_lowercase();
    let length = i64::try_from(path.chars().count()).unwrap_or(i64::MAX / 4);
    if query.is_empty() {
        let depth = i64::try_from(path.matches('/').count()).unwrap_or(0);
        return Some(-(depth * 1_000 + length));
    }
    let query = query.to_lowercase();
    let base = path.rsplit('/').next().unwrap_or(&path);
    let band = if base == query {
        10_000
    } else if base.starts_with(&query) {
        8_000
    } else if base.contains(&query) {
        6_000
    } else if path.starts_with(&query) {
        5_000
    } else if path.contains(&query) {
        4_000
    } else if let Some(score) = subsequence_score(base, &query) {
        2_000 + score
    } else {
        subsequence_score(&path, &query)?
    };
    Some(band - length)
}

/// Greedy in-order match: +15 for each character right after the previous match, +10 for
/// one at a word start, −1 for each skipped character.
fn subsequence_score(haystack: &str, query: &str) -> Option<i64> {
    let mut score = 0i64;
    let mut wanted = query.chars().peekable();
    let mut previous: Option<char> = None;
    let mut last_matched = false;
    for c in haystack.chars() {
        let Some(&q) = wanted.peek() else {
            break;
        };
        if c == q {
            wanted.next();
            if last_matched {
                score += 15;
            }
            if previous.is_none_or(|p| matches!(p, '/' | '_' | '-' | '.' | ' ')) {
                score += 10;
            }
            last_matched = true;
        } else {
            score -= 1;
            last_matched = false;
        }
        previous = Some(c);
    }
    wanted.peek().is_none().then_some(score)
}

/// What a popup completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    /// `@path`.
    File,
    /// `@@session`.
    Session,
    /// `/command` at the start of the draft.
    Command,
}

/// One proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// What replaces the token (with a trailing space).
    pub insert: String,
    /// What the popup shows first.
    pub label: String,
    /// What the popup shows after it, dimmed.
    pub detail: String,
}

/// The open popup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popup {
    /// What it completes.
    pub kind: CompletionKind,
    /// The bytes of the draft a candidate replaces.
    pub range: Range<usize>,
    /// Best first.
    pub candidates: Vec<Candidate>,
    /// The highlighted candidate.
    pub selected: usize,
    /// A line under the candidates (`indexing files…`, `no match`, a partial index).
    pub note: Option<String>,
}

impl Popup {
    /// The highlighted candidate.
    pub fn selected_candidate(&self) -> Option<&Candidate> {
        self.candidates.get(self.selected)
    }
}

/// The token at the cursor that asks for completion: its kind, its bytes, the query typed.
pub fn trigger(text: &str, cursor: usize) -> Option<(CompletionKind, Range<usize>, &str)> {
    let cursor = cursor.min(text.len());
    let start = text[..cursor]
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = text[cursor..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| cursor + i);
    let typed = &text[start..cursor];
    if let Some(query) = typed.strip_prefix("@@") {
        return Some((CompletionKind::Session, start..end, query));
    }
    if let Some(query) = typed.strip_prefix('@') {
        return Some((CompletionKind::File, start..end, query));
    }
    if start == 0
        && let Some(query) = typed.strip_prefix('/')
    {
        return Some((CompletionKind::Command, start..end, query));
    }
    None
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A value computed once on a background thread.
#[derive(Debug)]
struct Background<T> {
    slot: Arc<Mutex<Option<T>>>,
    started: bool,
    value: Option<T>,
}

impl<T> Default for Background<T> {
    fn default() -> Self {
        Self {
            slot: Arc::new(Mutex::new(None)),
            started: false,
            value: None,
        }
    }
}

impl<T: Send + 'static> Background<T> {
    fn start(&mut self, name: &str, work: impl FnOnce() -> T + Send + 'static) {
        if self.started {
            return;
        }
        self.started = true;
        let slot = Arc::clone(&self.slot);
        let work = Arc::new(Mutex::new(Some(work)));
        let run = {
            let work = Arc::clone(&work);
            move || {
                if let Some(work) = lock(&work).take() {
                    let value = work();
                    *lock(&slot) = Some(value);
                }
            }
        };
        if std::thread::Builder::new()
            .name(name.into())
            .spawn(run)
            .is_err()
            && let Some(work) = lock(&work).take()
        {
            // No thread to be had: do it here rather than never.
            self.value = Some(work());
        }
    }

    /// Takes a finished value; true when one just arrived.
    fn poll(&mut self) -> bool {
        if self.value.is_some() {
            return false;
        }
        match lock(&self.slot).take() {
            Some(value) => {
                self.value = Some(value);
                true
            }
            None => false,
        }
    }

    fn set(&mut self, value: T) {
        *self = Self::default();
        self.started = true;
        self.value = Some(value);
    }

    fn reset(&mut self) {
        // A new slot: a walk still running writes into the old one, which nobody reads.
        *self = Self::default();
    }
}

type SessionList = Result<Vec<SessionInfo>, String>;

/// The completion state of one editor.
#[derive(Debug)]
pub(crate) struct Completer {
    root: PathBuf,
    home: Option<Home>,
    files: Background<FileIndex>,
    sessions: Background<SessionList>,
    popup: Option<Popup>,
    /// Start of the token whose popup Esc closed: it stays closed while that token is edited.
    dismissed: Option<usize>,
}

impl Completer {
    pub(crate) fn new(root: PathBuf, home: Option<Home>) -> Self {
        Self {
            root,
            home,
            files: Background::default(),
            sessions: Background::default(),
            popup: None,
            dismissed: None,
        }
    }

    pub(crate) fn popup(&self) -> Option<&Popup> {
        self.popup.as_ref()
    }

    pub(crate) fn set_file_index(&mut self, index: FileIndex) {
        self.files.set(index);
    }

    pub(crate) fn set_sessions(&mut self, sessions: Vec<SessionInfo>) {
        self.sessions.set(Ok(sessions));
    }

    /// Forgets the file index (`/files`); the next `@` walks again.
    pub(crate) fn refresh_files(&mut self) {
        self.files.reset();
    }

    /// Picks up finished background work; true when the popup changed.
    pub(crate) fn poll(&mut self, text: &str, cursor: usize) -> bool {
        let arrived = self.files.poll() | self.sessions.poll();
        if !arrived {
            return false;
        }
        let before = self.popup.clone();
        self.update(text, cursor);
        before != self.popup
    }

    pub(crate) fn dismiss(&mut self) {
        if let Some(popup) = self.popup.take() {
            self.dismissed = Some(popup.range.start);
        }
    }

    pub(crate) fn move_selection(&mut self, delta: isize) {
        if let Some(popup) = &mut self.popup
            && !popup.candidates.is_empty()
        {
            let len = isize::try_from(popup.candidates.len()).unwrap_or(isize::MAX);
            let current = isize::try_from(popup.selected).unwrap_or(0);
            popup.selected = usize::try_from((current + delta).rem_euclid(len)).unwrap_or(0);
        }
    }

    /// Recomputes the popup for the token at the cursor.
    pub(crate) fn update(&mut self, text: &str, cursor: usize) {
        let Some((kind, range, query)) = trigger(text, cursor) else {
            self.popup = None;
            self.dismissed = None;
            return;
        };
        if self.dismissed == Some(range.start) {
            self.popup = None;
            return;
        }
        self.dismissed = None;
        let (candidates, note) = match kind {
            CompletionKind::File => self.file_candidates(query),
            CompletionKind::Session => self.session_candidates(query),
            CompletionKind::Command => command_candidates(query),
        };
        if candidates.is_empty() && note.is_none() {
            self.popup = None;
            return;
        }
        // Keep the highlighted candidate when it is still offered.
        let selected = self
            .popup
            .as_ref()
            .filter(|old| old.kind == kind && old.range.start == range.start)
            .and_then(|old| old.selected_candidate())
            .and_then(|old| candidates.iter().position(|c| c == old))
            .unwrap_or(0);
        self.popup = Some(Popup {
            kind,
            range,
            candidates,
            selected,
            note,
        });
    }

    fn file_candidates(&mut self, query: &str) -> (Vec<Candidate>, Option<String>) {
        let root = self.root.clone();
        self.files.start("braincode-file-index", move || {
            FileIndex::build(&root, FILE_INDEX_MAX_FILES)
        });
        self.files.poll();
        let Some(index) = &self.files.value else {
            return (Vec::new(), Some("indexing files…".into()));
        };
        let candidates: Vec<Candidate> = index
            .rank(query, POPUP_MAX_CANDIDATES)
            .into_iter()
            .map(|path| Candidate {
                insert: format!("@{path} "),
                label: path.to_string(),
                detail: String::new(),
            })
            .collect();
        let note = if candidates.is_empty() {
            Some(format!("no file matches `{query}`"))
        } else if index.truncated() {
            Some(format!(
                "only the first {FILE_INDEX_MAX_FILES} files are indexed"
            ))
        } else {
            None
        };
        (candidates, note)
    }

    fn session_candidates(&mut self, query: &str) -> (Vec<Candidate>, Option<String>) {
        if self.sessions.value.is_none() {
            let Some(home) = self.home.clone() else {
                return (Vec::new(), Some("no Braincode home: no sessions".into()));
            };
            let root = self.root.clone();
            self.sessions.start("braincode-session-list", move || {
                let options = ListOptions {
                    limit: SESSION_SUGGESTIONS,
                    project: Some(root),
                    all: false,
                };
                list_sessions(&home, &options).map_err(|err| err.to_string())
            });
            self.sessions.poll();
        }
        let sessions = match &self.sessions.value {
            None => return (Vec::new(), Some("reading sessions…".into())),
            Some(Err(err)) => return (Vec::new(), Some(format!("no sessions: {err}"))),
            Some(Ok(sessions)) => sessions,
        };
        let candidates: Vec<Candidate> = rank_sessions(sessions, query)
            .into_iter()
            .map(|info| Candidate {
                insert: format!("@@{} ", info.id.as_str()),
                label: info.id.as_str().to_string(),
                detail: format!(
                    "{} · {}",
                    info.status,
                    info.prompt_preview.as_deref().unwrap_or("(no prompt)")
                ),
            })
            .collect();
        let note = candidates.is_empty().then(|| {
            if sessions.is_empty() {
                "no sessions in this project yet".to_string()
            } else {
                format!("no session matches `{query}`")
            }
        });
        (candidates, note)
    }
}

/// Sessions for `@@query`, best first: id prefix, then the first prompt containing the
/// query, then the id holding its characters in order; newest first within each.
pub fn rank_sessions<'a>(sessions: &'a [SessionInfo], query: &str) -> Vec<&'a SessionInfo> {
    let query = query.to_lowercase();
    let mut scored: Vec<(u8, usize, &SessionInfo)> = sessions
        .iter()
        .enumerate()
        .filter_map(|(order, info)| {
            let id = info.id.as_str().to_lowercase();
            let prompt = info
                .prompt_preview
                .as_deref()
                .unwrap_or_default()
                .to_lowercase();
            let band = if id.starts_with(&query) {
                0
            } else if prompt.contains(&query) {
                1
            } else if subsequence_score(&id, &query).is_some() {
                2
            } else {
                return None;
            };
            Some((band, order, info))
        })
        .collect();
    scored.sort_by_key(|(band, order, _)| (*band, *order));
    scored.truncate(POPUP_MAX_CANDIDATES);
    scored.into_iter().map(|(_, _, info)| info).collect()
}

fn command_candidates(query: &str) -> (Vec<Candidate>, Option<String>) {
    let candidates = slash::completions(query)
        .into_iter()
        .map(|info| Candidate {
            insert: format!("/{} ", info.name),
            label: info.usage(),
            detail: info.help.to_string(),
        })
        .collect();
    (candidates, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_need_a_word_start() {
        let t = trigger;
        assert_eq!(
            t("see @src/ma now", 11),
            Some((CompletionKind::File, 4..11, "src/ma"))
        );
        assert_eq!(
            t("see @@2024 x", 10),
            Some((CompletionKind::Session, 4..10, "2024"))
        );
        assert_eq!(t("/pl", 3), Some((CompletionKind::Command, 0..3, "pl")));
        assert_eq!(t("a /pl", 5), None);
        assert_eq!(t("mail@host", 9), None);
        assert_eq!(t("@src/main.rs done", 17), None);
        // The part after the cursor is replaced too.
        assert_eq!(
            t("@src/ma.rs", 3),
            Some((CompletionKind::File, 0..10, "sr"))
        );
    }

    #[test]
    fn scores_prefer_the_file_name_and_contiguity() {
        let index = FileIndex::from_paths(vec![
            "docs/main_notes.md".into(),
            "src/main.rs".into(),
            "src/domain/mapping.rs".into(),
            "main.rs".into(),
            "tests/m_a_i_n.rs".into(),
        ]);
        assert_eq!(
            index.rank("main", 10),
            vec![
                "main.rs",
                "src/main.rs",
                "docs/main_notes.md",
                "src/domain/mapping.rs",
                "tests/m_a_i_n.rs"
            ]
        );
        assert_eq!(index.rank("smr", 10)[0], "src/main.rs");
        assert!(index.rank("zzz", 10).is_empty());
        assert_eq!(index.rank("", 2), vec!["main.rs", "src/main.rs"]);
    }
}
