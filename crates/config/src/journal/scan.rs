//! Low-level line access for large journals: reading lines backwards from the end in blocks,
//! reading lines forwards with a cap on line length, and finding a record's type without
//! parsing the whole record.

use std::fs::File;
use std::io::{self, BufRead, Read, Seek, SeekFrom};

/// Block size of the backward reader.
pub const TAIL_BLOCK_BYTES: usize = 64 * 1024;

/// Lines longer than this (newline included) are not held in memory; they are reported as
/// oversized instead. It is the writer's own limit, [`super::MAX_RECORD_BYTES`], so every line
/// Braincode writes can be read back.
pub const MAX_LINE_BYTES: usize = super::MAX_RECORD_BYTES;

/// One line found by [`ReverseLines`].
#[derive(Debug)]
pub(crate) struct RevLine {
    /// Byte offset of the line start.
    pub offset: u64,
    /// The line without its newline (empty when `oversized`).
    pub bytes: Vec<u8>,
    /// Whether a newline ended the line (false only for the file's last line).
    pub terminated: bool,
    /// Whether the line was longer than [`MAX_LINE_BYTES`] and was dropped.
    pub oversized: bool,
}

/// Yields the lines of a file from the last to the first, reading fixed-size blocks from the
/// end, so the cost depends on how far back the caller goes, not on the file size.
pub(crate) struct ReverseLines {
    file: File,
    /// Bytes before `pos` have not been read yet.
    pos: u64,
    /// Unconsumed bytes `[pos, pos + buf.len())`.
    buf: Vec<u8>,
    /// Whether the next line yielded is the file's last line and has no newline.
    next_unterminated: bool,
    /// Dropping the bytes of an oversized line while looking for its start.
    skipping: bool,
    finished: bool,
    /// Longest line kept in memory.
    max_line: usize,
    /// Bytes read from the file so far.
    pub bytes_read: u64,
}

impl ReverseLines {
    pub(crate) fn new(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        let mut reader = Self {
            file,
            pos: len,
            buf: Vec::new(),
            next_unterminated: false,
            skipping: false,
            finished: len == 0,
            max_line: MAX_LINE_BYTES,
            bytes_read: 0,
        };
        if len > 0 {
            let mut last = [0u8; 1];
            reader.file.seek(SeekFrom::Start(len - 1))?;
            reader.file.read_exact(&mut last)?;
            reader.bytes_read += 1;
            if last[0] == b'\n' {
                reader.pos = len - 1;
            } else {
                reader.next_unterminated = true;
            }
        }
        Ok(reader)
    }

    /// Whether the whole file has been consumed.
    pub(crate) fn at_start(&self) -> bool {
        self.finished
    }

    fn read_block_before(&mut self) -> io::Result<()> {
        let want = TAIL_BLOCK_BYTES.max(self.buf.len()) as u64;
        let start = self.pos.saturating_sub(want);
        let len = (self.pos - start) as usize;
        let mut block = vec![0u8; len];
        self.file.seek(SeekFrom::Start(start))?;
        self.file.read_exact(&mut block)?;
        self.bytes_read += len as u64;
        block.extend_from_slice(&self.buf);
        self.buf = block;
        self.pos = start;
        Ok(())
    }

    pub(crate) fn next_line(&mut self) -> io::Result<Option<RevLine>> {
        loop {
            if self.finished {
                return Ok(None);
            }
            if let Some(i) = self.buf.iter().rposition(|b| *b == b'\n') {
                let offset = self.pos + i as u64 + 1;
                let bytes = self.buf.split_off(i + 1);
                self.buf.truncate(i);
                return Ok(Some(self.emit(offset, bytes)));
            }
            if self.pos == 0 {
                let bytes = std::mem::take(&mut self.buf);
                self.finished = true;
                return Ok(Some(self.emit(0, bytes)));
            }
            if self.buf.len() > self.max_line {
                self.skipping = true;
                self.buf = Vec::new();
            }
            if self.skipping {
                // Read plain blocks; only the part before a newline is ever kept.
                let start = self.pos.saturating_sub(TAIL_BLOCK_BYTES as u64);
                let len = (self.pos - start) as usize;
                let mut block = vec![0u8; len];
                self.file.seek(SeekFrom::Start(start))?;
                self.file.read_exact(&mut block)?;
                self.bytes_read += len as u64;
                self.pos = start;
                if let Some(i) = block.iter().rposition(|b| *b == b'\n') {
                    block.truncate(i + 1);
                    self.buf = block;
                    // The newline at `i` now ends `buf`; the rposition above finds it and
                    // yields an empty remainder, which `emit` marks as the oversized line.
                }
                continue;
            }
            self.read_block_before()?;
        }
    }

    fn emit(&mut self, offset: u64, bytes: Vec<u8>) -> RevLine {
        let terminated = !std::mem::take(&mut self.next_unterminated);
        let oversized = std::mem::take(&mut self.skipping);
        RevLine {
            offset,
            bytes: if oversized { Vec::new() } else { bytes },
            terminated,
            oversized,
        }
    }
}

/// Reads one line (up to and including `\n`) into `buf`, keeping at most `cap` bytes of it.
/// Returns the number of bytes consumed (0 at end of file) and whether the line was cut.
pub(crate) fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<(usize, bool)> {
    let mut consumed = 0;
    let mut cut = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok((consumed, cut));
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = cap.saturating_sub(buf.len());
        if chunk.len() > room {
            cut = true;
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        consumed += used;
        if done {
            return Ok((consumed, cut));
        }
    }
}

/// The top-level `type` of a journal line, found cheaply: writers put `{"timestamp":N,"type":`
/// first, so the common case reads a few bytes; other layouts fall back to a parse that skips
/// every other field.
pub(crate) fn sniff_type(line: &[u8]) -> Option<String> {
    if let Some(rest) = line.strip_prefix(b"{\"timestamp\":") {
        let digits = rest
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'-')
            .count();
        if let Some(after) = rest[digits..].strip_prefix(b",\"type\":\"") {
            let end = after.iter().position(|b| *b == b'"' || *b == b'\\')?;
            if after[end] == b'"' {
                return std::str::from_utf8(&after[..end]).ok().map(str::to_string);
            }
        }
    }
    #[derive(serde::Deserialize)]
    struct TypeOnly {
        #[serde(rename = "type")]
        ty: String,
    }
    serde_json::from_slice::<TypeOnly>(line).ok().map(|t| t.ty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines_backwards(content: &[u8]) -> Vec<(u64, String, bool)> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        let mut reader = ReverseLines::new(file).unwrap();
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            out.push((
                line.offset,
                String::from_utf8(line.bytes).unwrap(),
                line.terminated,
            ));
        }
        assert!(reader.at_start());
        out
    }

    #[test]
    fn reverse_lines_handle_ends_and_blanks() {
        assert!(lines_backwards(b"").is_empty());
        assert_eq!(
            lines_backwards(b"a\nbb\n"),
            vec![(2, "bb".into(), true), (0, "a".into(), true)]
        );
        assert_eq!(
            lines_backwards(b"a\n\ntorn"),
            vec![
                (3, "torn".into(), false),
                (2, "".into(), true),
                (0, "a".into(), true)
            ]
        );
        assert_eq!(lines_backwards(b"\n"), vec![(0, "".into(), true)]);
    }

    #[test]
    fn reverse_lines_cross_block_boundaries() {
        let mut content = Vec::new();
        let mut expected = Vec::new();
        for i in 0..5000 {
            let line = format!("line-{i}-{}", "x".repeat(i % 97));
            expected.push((content.len() as u64, line.clone(), true));
            content.extend_from_slice(line.as_bytes());
            content.push(b'\n');
        }
        // One line far longer than a block.
        let long = "y".repeat(TAIL_BLOCK_BYTES * 3 + 17);
        expected.push((content.len() as u64, long.clone(), true));
        content.extend_from_slice(long.as_bytes());
        content.push(b'\n');
        expected.reverse();
        assert_eq!(lines_backwards(&content), expected);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Backward reading yields exactly the forward lines, reversed, whatever the block
        /// boundaries cut through.
        #[test]
        fn reverse_lines_match_forward_split(
            lengths in proptest::collection::vec(
                proptest::prop_oneof![0usize..4, 0usize..300, 0usize..(TAIL_BLOCK_BYTES * 2)],
                0..12,
            ),
            trailing_newline in proptest::prelude::any::<bool>(),
            seed in proptest::prelude::any::<u8>(),
        ) {
            let mut content = Vec::new();
            for (n, len) in lengths.iter().enumerate() {
                content.extend((0..*len).map(|i| match (i + n + seed as usize) % 97 {
                    0 => b'\r',
                    1 => 0xff,
                    k => b'a' + (k % 26) as u8,
                }));
                content.push(b'\n');
            }
            if !trailing_newline && !content.is_empty() {
                content.pop();
            }
            let mut expected: Vec<(u64, Vec<u8>)> = Vec::new();
            let mut start = 0usize;
            for (i, byte) in content.iter().enumerate() {
                if *byte == b'\n' {
                    expected.push((start as u64, content[start..i].to_vec()));
                    start = i + 1;
                }
            }
            if start < content.len() {
                expected.push((start as u64, content[start..].to_vec()));
            }
            expected.reverse();
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(&content).unwrap();
            let mut reader = ReverseLines::new(file).unwrap();
            let mut got = Vec::new();
            while let Some(line) = reader.next_line().unwrap() {
                got.push((line.offset, line.bytes));
            }
            proptest::prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn oversized_lines_are_reported_not_held() {
        let mut content = b"a\n".to_vec();
        content.extend(std::iter::repeat_n(b'x', TAIL_BLOCK_BYTES * 4 + 5));
        content.extend_from_slice(b"\nb\n");
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&content).unwrap();
        let mut reader = ReverseLines::new(file).unwrap();
        reader.max_line = 1000;
        let b = reader.next_line().unwrap().unwrap();
        assert_eq!(
            (b.offset, b.bytes.as_slice(), b.oversized),
            (content.len() as u64 - 2, &b"b"[..], false)
        );
        let big = reader.next_line().unwrap().unwrap();
        assert!(big.oversized && big.bytes.is_empty());
        assert_eq!(big.offset, 2);
        let a = reader.next_line().unwrap().unwrap();
        assert_eq!(
            (a.offset, a.bytes.as_slice(), a.oversized),
            (0, &b"a"[..], false)
        );
        assert!(reader.next_line().unwrap().is_none());
    }

    #[test]
    fn capped_forward_reads_cut_long_lines() {
        let data = b"short\nthis line is long\nend";
        let mut reader = io::BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 8).unwrap(),
            (6, false)
        );
        assert_eq!(buf, b"short\n");
        buf.clear();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 8).unwrap(),
            (18, true)
        );
        assert_eq!(buf, b"this lin");
        buf.clear();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 8).unwrap(),
            (3, false)
        );
        buf.clear();
        assert_eq!(
            read_line_capped(&mut reader, &mut buf, 8).unwrap(),
            (0, false)
        );
    }

    #[test]
    fn sniffs_types() {
        assert_eq!(
            sniff_type(br#"{"timestamp":12,"type":"run_end","summary":"x"}"#).as_deref(),
            Some("run_end")
        );
        assert_eq!(
            sniff_type(br#"{"summary":{"type":"nested"},"type":"handoff"}"#).as_deref(),
            Some("handoff")
        );
        assert_eq!(sniff_type(b"garbage"), None);
    }
}
