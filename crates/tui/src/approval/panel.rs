//! The approval panel's state and keys: a queue of pending requests, the first one shown.

use std::collections::VecDeque;

use braincode_runtime::{ApprovalAnswer, ApprovalRequest};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{DENIED, DISMISSED, PendingApproval, content};

/// Longest reason the one-line field takes (characters).
const MAX_REASON_CHARS: usize = 500;

/// An answer the panel gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// The call answered.
    pub call_id: String,
    /// Its tool.
    pub tool_name: String,
    /// The answer.
    pub answer: ApprovalAnswer,
    /// Whether the run was still waiting for it (false: it had stopped asking).
    pub delivered: bool,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PanelAction {
    /// The panel used the key (redraw).
    None,
    /// Not the panel's (Ctrl+C): the event loop's.
    Unhandled,
    /// The current request was answered; the next one, if any, is shown.
    Answered(Answered),
}

/// Pending approvals, oldest first, and the state of the answer being given.
#[derive(Debug, Default)]
pub struct ApprovalPanel {
    queue: VecDeque<PendingApproval>,
    /// `Some` while typing a reason for a denial.
    reason: Option<String>,
    /// First body line shown.
    scroll: usize,
}

impl ApprovalPanel {
    /// An empty panel.
    pub fn new() -> ApprovalPanel {
        ApprovalPanel::default()
    }

    /// Queues a request (shown after the ones already waiting).
    pub fn push(&mut self, pending: PendingApproval) {
        self.queue.push_back(pending);
        self.prune_abandoned();
    }

    /// Whether a request is waiting (draw the panel, send it the keys).
    pub fn is_active(&self) -> bool {
        !self.queue.is_empty()
    }

    /// How many requests are waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The request shown.
    pub fn current(&self) -> Option<&ApprovalRequest> {
        self.queue.front().map(|p| &p.request)
    }

    /// The reason being typed, when the reason field is open.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// The first body line shown.
    pub fn scroll(&self) -> usize {
        self.scroll
    }

    /// Drops requests the run no longer waits for (cancelled); returns how many.
    pub fn prune_abandoned(&mut self) -> usize {
        let before = self.queue.len();
        let front_gone = self.queue.front().is_some_and(|p| p.reply.is_closed());
        self.queue.retain(|p| !p.reply.is_closed());
        if front_gone {
            self.reset_answer();
        }
        before - self.queue.len()
    }

    /// Answers the shown request (the keys call this; so may the event loop).
    pub fn answer(&mut self, answer: ApprovalAnswer) -> Option<Answered> {
        let pending = self.queue.pop_front()?;
        self.reset_answer();
        let answered = Answered {
            call_id: pending.request.call_id,
            tool_name: pending.request.tool_name,
            delivered: pending.reply.send(answer.clone()).is_ok(),
            answer,
        };
        self.prune_abandoned();
        Some(answered)
    }

    /// Blocks every waiting request with `reason` (the run is interrupted, the UI quits).
    pub fn deny_all(&mut self, reason: &str) -> Vec<Answered> {
        let mut answered = Vec::new();
        while let Some(one) = self.answer(ApprovalAnswer::Block(reason.to_string())) {
            answered.push(one);
        }
        answered
    }

    /// Text pasted while the reason field is open goes into it (first line only).
    pub fn handle_paste(&mut self, text: &str) {
        if let Some(reason) = &mut self.reason {
            let line = text.lines().next().unwrap_or_default();
            let room = MAX_REASON_CHARS.saturating_sub(reason.chars().count());
            reason.extend(line.chars().filter(|c| !c.is_control()).take(room));
        }
    }

    /// One key press: `y` allow once, `a` allow for the session, `n` deny, `r` deny with a
    /// reason (Enter sends it, Esc goes back), Esc denies, ↑/↓/PgUp/PgDn scroll.
    pub fn handle_key(&mut self, key: KeyEvent) -> PanelAction {
        if key.kind == KeyEventKind::Release || self.queue.is_empty() {
            return PanelAction::Unhandled;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c' | 'C')) {
            return PanelAction::Unhandled;
        }
        if self.reason.is_some() {
            return self.reason_key(key, ctrl);
        }
        let answer = match key.code {
            KeyCode::Char('y' | 'Y') => ApprovalAnswer::Approve,
            KeyCode::Char('a' | 'A') => ApprovalAnswer::ApproveForSession,
            KeyCode::Char('n' | 'N') => ApprovalAnswer::Block(DENIED.into()),
            KeyCode::Esc => ApprovalAnswer::Block(DISMISSED.into()),
            KeyCode::Char('r' | 'R') => {
                self.reason = Some(String::new());
                return PanelAction::None;
            }
            KeyCode::Up => return self.scroll_by(-1),
            KeyCode::Down => return self.scroll_by(1),
            KeyCode::PageUp => return self.scroll_by(-10),
            KeyCode::PageDown => return self.scroll_by(10),
            KeyCode::Home => return self.scroll_by(isize::MIN),
            KeyCode::End => return self.scroll_by(isize::MAX),
            // The panel is modal: stray keys do nothing rather than reach the prompt.
            _ => return PanelAction::None,
        };
        self.answer_action(answer)
    }

    fn answer_action(&mut self, answer: ApprovalAnswer) -> PanelAction {
        match self.answer(answer) {
            Some(answered) => PanelAction::Answered(answered),
            None => PanelAction::None,
        }
    }

    fn reason_key(&mut self, key: KeyEvent, ctrl: bool) -> PanelAction {
        let Some(reason) = &mut self.reason else {
            return PanelAction::None;
        };
        match key.code {
            KeyCode::Enter => {
                let typed = reason.trim();
                let answer = if typed.is_empty() {
                    DENIED.to_string()
                } else {
                    typed.to_string()
                };
                return self.answer_action(ApprovalAnswer::Block(answer));
            }
            KeyCode::Esc => self.reason = None,
            KeyCode::Backspace if ctrl => reason.clear(),
            KeyCode::Backspace => {
                reason.pop();
            }
            KeyCode::Char('u' | 'U') if ctrl => reason.clear(),
            KeyCode::Char(c) if !ctrl && reason.chars().count() < MAX_REASON_CHARS => {
                reason.push(c);
            }
            _ => {}
        }
        PanelAction::None
    }

    fn scroll_by(&mut self, delta: isize) -> PanelAction {
        let Some(request) = self.current() else {
            return PanelAction::None;
        };
        let max = content::body_lines(request).len().saturating_sub(1);
        self.scroll = self.scroll.saturating_add_signed(delta).min(max);
        PanelAction::None
    }

    fn reset_answer(&mut self) {
        self.reason = None;
        self.scroll = 0;
    }
}
