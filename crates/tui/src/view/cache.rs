//! Each turn's rows, built once per change: a turn is cut in three parts (head, agents,
//! answer) that change at different rates, each rebuilt only when its revision, the width
//! or — for live rows — the clock changes. A redraw then only copies the visible rows.

use ratatui::text::Line;

use super::{rows, turn};
use crate::app::{App, ItemKey, Turn};

/// What a part's rows were built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    revision: u64,
    width: u16,
    /// The clock, for parts that show one (else 0).
    tick: i64,
}

/// One part's rows.
#[derive(Debug, Default)]
struct Part {
    key: Option<Key>,
    lines: Vec<Line<'static>>,
}

impl Part {
    fn refresh(&mut self, key: Key, build: impl FnOnce() -> Vec<Line<'static>>) -> bool {
        if self.key == Some(key) {
            return false;
        }
        self.lines = build();
        self.key = Some(key);
        true
    }
}

#[derive(Debug, Default)]
struct TurnRows {
    turn_id: u64,
    head: Part,
    agents: Part,
    items: Vec<(ItemKey, usize)>,
    notes: Part,
    settled: Part,
    answer: Part,
    live: Vec<Line<'static>>,
}

impl TurnRows {
    fn height(&self) -> usize {
        self.parts().iter().map(|part| part.len()).sum()
    }

    fn parts(&self) -> [&[Line<'static>]; 6] {
        [
            &self.head.lines,
            &self.agents.lines,
            &self.notes.lines,
            &self.settled.lines,
            &self.answer.lines,
            &self.live,
        ]
    }
}

/// The transcript's rows, per turn (owned by the [`App`], filled by the view).
#[derive(Debug, Default)]
pub struct TranscriptCache {
    turns: Vec<TurnRows>,
    height: usize,
}

impl TranscriptCache {
    /// Brings every turn's rows up to date for `width` at `now_ms`.
    pub(crate) fn refresh(&mut self, app: &App, width: u16, now_ms: i64) {
        let turns = app.turns();
        self.turns.truncate(turns.len());
        let selection = app.selection();
        let columns = usize::from(width);
        for (index, turn) in turns.iter().enumerate() {
            if self
                .turns
                .get(index)
                .is_none_or(|rows| rows.turn_id != turn.id())
            {
                let fresh = TurnRows {
                    turn_id: turn.id(),
                    ..TurnRows::default()
                };
                match self.turns.get_mut(index) {
                    Some(rows) => *rows = fresh,
                    None => self.turns.push(fresh),
                }
            }
            let Some(rows) = self.turns.get_mut(index) else {
                continue;
            };
            let revisions = turn.revisions();
            let key = |revision: u64, tick: i64| Key {
                revision,
                width,
                tick,
            };
            rows.head
                .refresh(key(revisions.head, 0), || turn::head_rows(turn, columns));
            let selected = selection.filter(|s| s.turn == index).map(|s| &s.key);
            let tick = if turn.has_live_rows() {
                now_ms.div_euclid(super::theme::SPINNER_FRAME_MS)
            } else {
                0
            };
            let mut items = Vec::new();
            let rebuilt = rows.agents.refresh(key(revisions.agents, tick), || {
                let (lines, positions) = rows::agent_rows(turn, selected, columns, now_ms);
                items = positions;
                lines
            });
            if rebuilt {
                rows.items = items;
            }
            rows.notes
                .refresh(key(revisions.notes, 0), || turn::notice_rows(turn, columns));
            // A streaming answer: its settled part is built once, the rest per delta.
            let settled = turn::settled_len(turn);
            rows.settled.refresh(key(settled as u64, 0), || {
                turn::settled_rows(turn, settled, columns)
            });
            rows.answer
                .refresh(key(revisions.answer, settled as i64), || {
                    turn::answer_rows(turn, settled, columns)
                });
            rows.live = live(turn, columns, now_ms);
        }
        self.height = self.turns.iter().map(TurnRows::height).sum();
    }

    /// Rows of the whole transcript.
    pub(crate) fn height(&self) -> usize {
        self.height
    }

    /// The transcript row of the item `key` of turn `turn`.
    pub(crate) fn row_of(&self, turn: usize, key: &ItemKey) -> Option<usize> {
        let above: usize = self.turns.iter().take(turn).map(TurnRows::height).sum();
        let rows = self.turns.get(turn)?;
        let (_, at) = rows.items.iter().find(|(k, _)| k == key)?;
        Some(above + rows.head.lines.len() + at)
    }

    /// The rows `start..end` of the transcript, in order.
    pub(crate) fn rows(&self, start: usize, end: usize) -> impl Iterator<Item = &Line<'static>> {
        let mut skip = start;
        let mut take = end.saturating_sub(start);
        self.turns
            .iter()
            .flat_map(TurnRows::parts)
            .flat_map(move |part| {
                let from = skip.min(part.len());
                skip -= from;
                let to = (from + take).min(part.len());
                take -= to - from;
                &part[from..to]
            })
    }
}

fn live(turn: &Turn, width: usize, now_ms: i64) -> Vec<Line<'static>> {
    turn::live_row(turn, width, now_ms).into_iter().collect()
}
