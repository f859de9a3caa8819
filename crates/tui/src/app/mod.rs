//! The session model: a transcript of turns fed by the run's event stream, a selection over
//! its workers and tool calls, the scroll position and the status line.
//!
//! [`App`] is what the event loop owns: it calls [`App::begin_turn`] when a prompt is sent,
//! [`App::on_event`] for every [`RunEvent`], the selection and scroll methods on keys, and
//! hands `&App` to [`crate::view::draw`].

mod status;
mod turn;

use std::cell::{Cell, RefCell};

use braincode_protocol::{BrainRef, Record, RunEvent, WorkerPhase};

pub use status::StatusLine;
pub use turn::{Item, ItemKey, Revisions, ToolCall, ToolState, Turn, WorkerRow, WorkerStatus};

use crate::pet::PetTracker;
use crate::view::TranscriptCache;

/// What the session is, given when the TUI starts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AppConfig {
    /// Session id.
    pub session_id: String,
    /// Permission mode (`default`, `acceptEdits`, `bypassPermissions`).
    pub permission: String,
    /// Sandbox state as the user should read it (`landlock`, `seatbelt`, `off`, …).
    pub sandbox: String,
    /// The Brain configured for the next run (until a `run_start` names one).
    pub brain: Option<BrainRef>,
}

/// The selected item: a turn and an item in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Index of the turn.
    pub turn: usize,
    /// The item.
    pub key: ItemKey,
}

/// Scroll position, in transcript rows. Kept by the view as it draws (hence a `Cell`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Scroll {
    /// Rows between the bottom of the transcript and the bottom of the view (0 = follow).
    pub offset: usize,
    /// Transcript height at the last draw.
    pub total: usize,
    /// View height at the last draw.
    pub viewport: usize,
    /// Whether the next draw must bring the selection into view.
    pub reveal: bool,
}

/// The interactive session's state.
#[derive(Debug)]
pub struct App {
    config: AppConfig,
    turns: Vec<Turn>,
    next_turn_id: u64,
    selection: Option<Selection>,
    cost: Option<f64>,
    scroll: Cell<Scroll>,
    cache: RefCell<TranscriptCache>,
    pet: PetTracker,
}

impl App {
    /// An empty session.
    pub fn new(config: AppConfig) -> Self {
        Self {
            config,
            turns: Vec::new(),
            next_turn_id: 0,
            selection: None,
            cost: None,
            scroll: Cell::new(Scroll::default()),
            cache: RefCell::new(TranscriptCache::default()),
            pet: PetTracker::default(),
        }
    }

    /// The session's configuration.
    pub fn config(&self) -> &AppConfig {
        &self.config
    }

    /// The transcript, oldest first.
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }

    /// Starts a turn for a prompt the user sent; the run's events go to it.
    pub fn begin_turn(&mut self, request: impl Into<String>) {
        let turn = Turn::new(self.next_turn_id, &self.config.session_id, request);
        self.next_turn_id += 1;
        self.turns.push(turn);
        self.scroll_to_bottom();
    }

    /// Takes one event of the running run. A `run_start` that finds the last turn already
    /// started (a run the TUI did not begin: a resume, a replay) opens a turn of its own.
    pub fn on_event(&mut self, event: &RunEvent) {
        let opens_run = matches!(
            event.journal_entry().map(|e| &e.record),
            Some(Record::RunStart(_))
        );
        let needs_turn = self
            .turns
            .last()
            .is_none_or(|last| opens_run && last.has_run());
        if needs_turn {
            self.begin_turn(String::new());
        }
        if let Some(turn) = self.turns.last_mut() {
            turn.on_event(event);
        }
        self.pet.on_event(event);
    }

    /// What the BrainPet knows of the latest run: its latest event worth mentioning.
    pub fn pet_tracker(&self) -> &PetTracker {
        &self.pet
    }

    /// Clears the transcript (`/clear`); the session goes on.
    pub fn clear_transcript(&mut self) {
        self.turns.clear();
        self.selection = None;
        self.scroll.set(Scroll::default());
        *self.cache.borrow_mut() = TranscriptCache::default();
    }

    /// Starts over with a new session id (`/new`).
    pub fn set_session_id(&mut self, session_id: impl Into<String>) {
        self.config.session_id = session_id.into();
        self.clear_transcript();
    }

    /// Sets the permission mode shown.
    pub fn set_permission(&mut self, permission: impl Into<String>) {
        self.config.permission = permission.into();
    }

    /// Sets the Brain the next request would use (shown until a run names its own).
    pub fn set_configured_brain(&mut self, brain: Option<BrainRef>) {
        self.config.brain = brain;
    }

    /// Sets the sandbox state shown.
    pub fn set_sandbox(&mut self, sandbox: impl Into<String>) {
        self.config.sandbox = sandbox.into();
    }

    /// Sets the session's cost so far, once prices are known.
    pub fn set_cost(&mut self, cost: Option<f64>) {
        self.cost = cost;
    }

    /// Whether the latest run is still going.
    pub fn is_running(&self) -> bool {
        self.turns.last().is_some_and(Turn::is_running)
    }

    /// The selected item, if any.
    pub fn selection(&self) -> Option<&Selection> {
        self.selection.as_ref()
    }

    /// Moves the selection one item up (from none: the last item).
    pub fn select_prev(&mut self) {
        self.move_selection(-1);
    }

    /// Moves the selection one item down (from none: the last item).
    pub fn select_next(&mut self) {
        self.move_selection(1);
    }

    /// Drops the selection.
    pub fn clear_selection(&mut self) {
        if let Some(old) = self.selection.take() {
            self.touch(old.turn);
        }
    }

    /// Expands or collapses the selected item; `false` when nothing is selected.
    pub fn toggle_expanded(&mut self) -> bool {
        let Some(selection) = self.selection.clone() else {
            return false;
        };
        match self.turns.get_mut(selection.turn) {
            Some(turn) => {
                turn.toggle(&selection.key);
                self.request_reveal();
                true
            }
            None => false,
        }
    }

    fn move_selection(&mut self, step: isize) {
        let items: Vec<(usize, ItemKey)> = self
            .turns
            .iter()
            .enumerate()
            .flat_map(|(index, turn)| {
                turn.items()
                    .into_iter()
                    .map(move |item| (index, item.key()))
            })
            .collect();
        let Some(last) = items.len().checked_sub(1) else {
            return;
        };
        let current = self.selection.as_ref().and_then(|s| {
            items
                .iter()
                .position(|(turn, key)| *turn == s.turn && *key == s.key)
        });
        let next = match current {
            None => last,
            Some(at) => at.saturating_add_signed(step).min(last),
        };
        let (turn, key) = items[next].clone();
        self.clear_selection();
        self.touch(turn);
        self.selection = Some(Selection { turn, key });
        self.request_reveal();
    }

    fn touch(&mut self, turn: usize) {
        if let Some(turn) = self.turns.get_mut(turn) {
            turn.touch_agents();
        }
    }

    fn request_reveal(&self) {
        let mut scroll = self.scroll.get();
        scroll.reveal = true;
        self.scroll.set(scroll);
    }

    /// Scrolls `rows` towards the top.
    pub fn scroll_up(&mut self, rows: usize) {
        let mut scroll = self.scroll.get();
        let max = scroll.total.saturating_sub(scroll.viewport);
        scroll.offset = scroll.offset.saturating_add(rows).min(max);
        scroll.reveal = false;
        self.scroll.set(scroll);
    }

    /// Scrolls `rows` towards the bottom (reaching it follows the transcript again).
    pub fn scroll_down(&mut self, rows: usize) {
        let mut scroll = self.scroll.get();
        scroll.offset = scroll.offset.saturating_sub(rows);
        scroll.reveal = false;
        self.scroll.set(scroll);
    }

    /// Scrolls one page up (PgUp).
    pub fn page_up(&mut self) {
        self.scroll_up(self.page());
    }

    /// Scrolls one page down (PgDn).
    pub fn page_down(&mut self) {
        self.scroll_down(self.page());
    }

    fn page(&self) -> usize {
        self.scroll.get().viewport.saturating_sub(1).max(1)
    }

    /// Scrolls to the top (Home).
    pub fn scroll_to_top(&mut self) {
        self.scroll_up(usize::MAX);
    }

    /// Scrolls to the bottom and follows the transcript (End).
    pub fn scroll_to_bottom(&mut self) {
        self.scroll_down(usize::MAX);
    }

    /// Whether the view follows the bottom of the transcript.
    pub fn is_following(&self) -> bool {
        self.scroll.get().offset == 0
    }

    /// Rows between the bottom of the transcript and the bottom of the view.
    pub fn scroll_offset(&self) -> usize {
        self.scroll.get().offset
    }

    pub(crate) fn scroll_state(&self) -> Scroll {
        self.scroll.get()
    }

    pub(crate) fn set_scroll_state(&self, scroll: Scroll) {
        self.scroll.set(scroll);
    }

    pub(crate) fn cache(&self) -> &RefCell<TranscriptCache> {
        &self.cache
    }

    /// What the status line shows now.
    pub fn status_line(&self) -> StatusLine {
        let brain = self
            .turns
            .iter()
            .rev()
            .find_map(|t| t.state().brain())
            .or(self.config.brain.as_ref());
        let mut models = Vec::new();
        if let Some(last) = self.turns.last() {
            let workers = last.state().workers();
            // The primary first: it is the one that answers.
            let running = workers.iter().filter(|w| w.running);
            let (primary, others): (Vec<_>, Vec<_>) =
                running.partition(|w| w.phase == WorkerPhase::Primary);
            models.extend(
                primary
                    .into_iter()
                    .chain(others)
                    .filter_map(|w| Some((w.role, w.model.clone()?))),
            );
            if models.is_empty() {
                models.extend(
                    workers
                        .iter()
                        .rev()
                        .filter(|w| w.phase == WorkerPhase::Primary)
                        .find_map(|w| Some((w.role, w.model.clone()?))),
                );
            }
        }
        StatusLine {
            // The id is what `--brain` and `/brain` take; a name adds to it only when it
            // says something the id does not.
            brain: brain.map(|b| {
                let name = b.name.trim();
                if name.is_empty() || name.eq_ignore_ascii_case(&b.id) || name == "Brain" {
                    b.id.clone()
                } else {
                    format!("{} ({name})", b.id)
                }
            }),
            mode: brain.map(|b| b.mode),
            permission: self.config.permission.clone(),
            models,
            tokens: self
                .turns
                .iter()
                .map(|t| t.state().tokens_total().total)
                .sum(),
            cost: {
                let priced: Vec<f64> = self
                    .turns
                    .iter()
                    .filter_map(|t| t.state().cost_usd())
                    .collect();
                if priced.is_empty() {
                    self.cost
                } else {
                    Some(priced.iter().sum())
                }
            },
            session_id: self.config.session_id.clone(),
            sandbox: self.config.sandbox.clone(),
            running: self.is_running(),
        }
    }
}

#[cfg(test)]
mod tests;
