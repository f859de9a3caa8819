//! The draft's text and cursor, and the edits the keys make on them.
//!
//! The cursor is a byte offset that always sits on a character boundary. Paste chips are
//! *atoms*: the cursor jumps over them and Backspace/Delete remove them whole, so a chip can
//! never be half-deleted into text that no longer expands.

/// Text plus cursor.
#[derive(Debug, Clone, Default)]
pub(crate) struct TextBuffer {
    text: String,
    cursor: usize,
    /// Labels that move and delete as one piece (paste chips).
    atoms: Vec<String>,
    /// The column (in characters) Up/Down try to keep.
    goal_column: Option<usize>,
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

impl TextBuffer {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    pub(crate) fn set_atoms(&mut self, atoms: Vec<String>) {
        self.atoms = atoms;
    }

    /// Replaces the text; the cursor goes to the end.
    pub(crate) fn set_text(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.goal_column = None;
    }

    /// Replaces `range` with `with`, the cursor after the inserted text.
    pub(crate) fn replace_range(&mut self, range: std::ops::Range<usize>, with: &str) {
        let start = range.start.min(self.text.len());
        let end = range.end.clamp(start, self.text.len());
        if !self.text.is_char_boundary(start) || !self.text.is_char_boundary(end) {
            return;
        }
        self.text.replace_range(start..end, with);
        self.cursor = start + with.len();
        self.goal_column = None;
    }

    pub(crate) fn insert_str(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
        self.goal_column = None;
    }

    pub(crate) fn insert_char(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
        self.goal_column = None;
    }

    fn prev_boundary(&self, at: usize) -> usize {
        self.text[..at]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self, at: usize) -> usize {
        self.text[at..]
            .chars()
            .next()
            .map_or(at, |c| at + c.len_utf8())
    }

    /// The start of an atom that ends exactly at `at`.
    fn atom_ending_at(&self, at: usize) -> Option<usize> {
        self.atoms
            .iter()
            .find(|atom| self.text[..at].ends_with(atom.as_str()))
            .map(|atom| at - atom.len())
    }

    /// The end of an atom that starts exactly at `at`.
    fn atom_starting_at(&self, at: usize) -> Option<usize> {
        self.atoms
            .iter()
            .find(|atom| self.text[at..].starts_with(atom.as_str()))
            .map(|atom| at + atom.len())
    }

    fn step_left(&self, at: usize) -> usize {
        self.atom_ending_at(at)
            .unwrap_or_else(|| self.prev_boundary(at))
    }

    fn step_right(&self, at: usize) -> usize {
        self.atom_starting_at(at)
            .unwrap_or_else(|| self.next_boundary(at))
    }

    pub(crate) fn left(&mut self) {
        self.cursor = self.step_left(self.cursor);
        self.goal_column = None;
    }

    pub(crate) fn right(&mut self) {
        self.cursor = self.step_right(self.cursor);
        self.goal_column = None;
    }

    pub(crate) fn backspace(&mut self) {
        let start = self.step_left(self.cursor);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.goal_column = None;
    }

    pub(crate) fn delete(&mut self) {
        let end = self.step_right(self.cursor);
        self.text.replace_range(self.cursor..end, "");
        self.goal_column = None;
    }

    fn line_start_of(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end_of(&self, at: usize) -> usize {
        self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |i| at + i)
    }

    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start_of(self.cursor);
        self.goal_column = None;
    }

    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end_of(self.cursor);
        self.goal_column = None;
    }

    /// Start of the word before the cursor (skipping the non-word characters first).
    fn word_start_before(&self, at: usize) -> usize {
        let before = &self.text[..at];
        let mut chars = before.char_indices().rev().peekable();
        let mut start = at;
        while let Some((i, c)) = chars.peek().copied() {
            if is_word(c) {
                break;
            }
            start = i;
            chars.next();
        }
        while let Some((i, c)) = chars.peek().copied() {
            if !is_word(c) {
                break;
            }
            start = i;
            chars.next();
        }
        start
    }

    fn word_end_after(&self, at: usize) -> usize {
        let mut end = at;
        let mut seen_word = false;
        for (i, c) in self.text[at..].char_indices() {
            if is_word(c) {
                seen_word = true;
            } else if seen_word {
                break;
            }
            end = at + i + c.len_utf8();
        }
        end
    }

    pub(crate) fn word_left(&mut self) {
        self.cursor = match self.atom_ending_at(self.cursor) {
            Some(start) => start,
            None => self.word_start_before(self.cursor),
        };
        self.goal_column = None;
    }

    pub(crate) fn word_right(&mut self) {
        self.cursor = match self.atom_starting_at(self.cursor) {
            Some(end) => end,
            None => self.word_end_after(self.cursor),
        };
        self.goal_column = None;
    }

    /// Ctrl+W: deletes the word (or the chip) before the cursor, and the spaces after it.
    pub(crate) fn delete_word_before(&mut self) {
        let trimmed = self.text[..self.cursor].trim_end_matches([' ', '\t']).len();
        let start = match self.atom_ending_at(trimmed) {
            Some(start) => start,
            None if trimmed < self.cursor => self.word_start_before(trimmed),
            None => self.word_start_before(self.cursor),
        };
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.goal_column = None;
    }

    /// Ctrl+U: deletes from the start of the line to the cursor; at the start of a line,
    /// joins it with the line above.
    pub(crate) fn kill_to_line_start(&mut self) {
        let start = self.line_start_of(self.cursor);
        let start = if start == self.cursor {
            self.prev_boundary(start)
        } else {
            start
        };
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
        self.goal_column = None;
    }

    /// Ctrl+K: deletes from the cursor to the end of the line; at the end of a line, joins
    /// the next line to it.
    pub(crate) fn kill_to_line_end(&mut self) {
        let end = self.line_end_of(self.cursor);
        let end = if end == self.cursor {
            self.next_boundary(end)
        } else {
            end
        };
        self.text.replace_range(self.cursor..end, "");
        self.goal_column = None;
    }

    pub(crate) fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub(crate) fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    fn column(&self) -> usize {
        self.text[self.line_start_of(self.cursor)..self.cursor]
            .chars()
            .count()
    }

    /// Byte offset of character column `column` of the line starting at `start` (or its end).
    fn offset_in_line(&self, start: usize, column: usize) -> usize {
        let end = self.line_end_of(start);
        self.text[start..end]
            .char_indices()
            .nth(column)
            .map_or(end, |(i, _)| start + i)
    }

    /// Moves to the line above, keeping the column; false on the first line.
    pub(crate) fn up(&mut self) -> bool {
        if self.on_first_line() {
            return false;
        }
        let goal = *self.goal_column.get_or_insert(self.column());
        let this_start = self.line_start_of(self.cursor);
        let above_start = self.line_start_of(this_start - 1);
        self.cursor = self.offset_in_line(above_start, goal);
        self.snap_out_of_atom();
        true
    }

    /// Moves to the line below, keeping the column; false on the last line.
    pub(crate) fn down(&mut self) -> bool {
        if self.on_last_line() {
            return false;
        }
        let goal = *self.goal_column.get_or_insert(self.column());
        let below_start = self.line_end_of(self.cursor) + 1;
        self.cursor = self.offset_in_line(below_start, goal);
        self.snap_out_of_atom();
        true
    }

    /// A vertical move may land inside a chip: put the cursor after it.
    fn snap_out_of_atom(&mut self) {
        for atom in &self.atoms {
            let mut from = 0;
            while let Some(found) = self.text[from..].find(atom.as_str()) {
                let start = from + found;
                let end = start + atom.len();
                if start < self.cursor && self.cursor < end {
                    self.cursor = end;
                    return;
                }
                from = end;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(text: &str, cursor: usize) -> TextBuffer {
        let mut b = TextBuffer::default();
        b.set_text(text);
        b.cursor = cursor;
        b
    }

    #[test]
    fn words_jump_and_delete() {
        let mut b = buffer("fix the  parser_bug now", 23);
        b.word_left();
        assert_eq!(b.cursor(), 20);
        b.word_left();
        assert_eq!(b.cursor(), 9);
        b.word_right();
        assert_eq!(b.cursor(), 19);
        let mut b = buffer("fix the  parser ", 16);
        b.delete_word_before();
        assert_eq!(b.text(), "fix the  ");
        b.delete_word_before();
        assert_eq!(b.text(), "fix ");
    }

    #[test]
    fn kills_stop_at_lines() {
        let mut b = buffer("one\ntwo three", 8);
        b.kill_to_line_start();
        assert_eq!((b.text(), b.cursor()), ("one\nthree", 4));
        b.kill_to_line_start();
        assert_eq!((b.text(), b.cursor()), ("onethree", 3));
        b.kill_to_line_end();
        assert_eq!(b.text(), "one");
    }

    #[test]
    fn up_and_down_keep_the_column() {
        let mut b = buffer("abcdef\nx\nabcdef", 5);
        assert!(!b.up());
        assert!(b.down());
        assert_eq!(b.cursor(), 8);
        assert!(b.down());
        assert_eq!(b.cursor(), 14);
        assert!(!b.down());
    }

    #[test]
    fn atoms_move_and_delete_whole() {
        let chip = "[pasted 9 lines #1]";
        let mut b = buffer(&format!("see {chip} ok"), 4 + chip.len());
        b.set_atoms(vec![chip.to_string()]);
        b.left();
        assert_eq!(b.cursor(), 4);
        b.right();
        assert_eq!(b.cursor(), 4 + chip.len());
        b.backspace();
        assert_eq!(b.text(), "see  ok");
        let mut b = buffer(&format!("{chip}x"), 0);
        b.set_atoms(vec![chip.to_string()]);
        b.delete();
        assert_eq!(b.text(), "x");
    }

    #[test]
    fn multibyte_text_is_safe() {
        let mut b = buffer("héllo wörld", 0);
        b.end();
        b.backspace();
        b.left();
        b.left();
        b.insert_char('é');
        assert_eq!(b.text(), "héllo wöérl");
        b.word_left();
        b.backspace();
        assert_eq!(b.text(), "héllowöérl");
    }
}
