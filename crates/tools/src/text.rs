//! Bounding text: tail and head caps on UTF-8 boundaries, and a tail-keeping byte buffer for
//! process output.

/// Default cap on the output a tool returns (bytes); the tail is kept.
pub const DEFAULT_OUTPUT_BYTES: u64 = 96_000;
/// Smallest allowed output cap (bytes).
pub const MIN_OUTPUT_BYTES: u64 = 1_000;
/// Largest allowed output cap (bytes).
pub const MAX_OUTPUT_BYTES: u64 = 512_000;

/// The largest index `<= index` that lies on a char boundary of `text`.
pub fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut index = index;
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// The smallest index `>= index` that lies on a char boundary of `text`.
pub fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while index < text.len() && !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// Keeps at most `max_bytes` of the end of `text`, with a marker saying how much was dropped.
pub fn tail(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let start = ceil_char_boundary(text, text.len() - max_bytes);
    format!("[… {start} earlier bytes omitted …]\n{}", &text[start..])
}

/// Keeps at most `max_bytes` of the start of `text`, with a marker saying how much was dropped.
pub fn head(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let end = floor_char_boundary(text, max_bytes);
    format!(
        "{}\n[… {} more bytes omitted …]",
        &text[..end],
        text.len() - end
    )
}

/// A byte buffer that keeps only the last `capacity` bytes written, counting what it dropped.
#[derive(Debug, Clone)]
pub struct TailBuffer {
    bytes: std::collections::VecDeque<u8>,
    capacity: usize,
    total: u64,
}

impl TailBuffer {
    /// An empty buffer keeping at most `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: std::collections::VecDeque::new(),
            capacity: capacity.max(1),
            total: 0,
        }
    }

    /// Appends bytes, dropping the oldest beyond the capacity.
    pub fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let data = if data.len() > self.capacity {
            &data[data.len() - self.capacity..]
        } else {
            data
        };
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.bytes.extend(data);
    }

    /// Bytes ever written.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes written but no longer kept.
    pub fn dropped(&self) -> u64 {
        self.total - self.bytes.len() as u64
    }

    /// The bytes written since stream position `from` that are still kept, and how many bytes
    /// after `from` were already dropped.
    pub fn since(&self, from: u64) -> (Vec<u8>, u64) {
        let dropped = self.dropped();
        let skip_lost = dropped.saturating_sub(from);
        let start = from.saturating_sub(dropped) as usize;
        let kept: Vec<u8> = self.bytes.iter().skip(start).copied().collect();
        (kept, skip_lost)
    }

    /// Everything kept, decoded lossily, with a marker when bytes were dropped.
    pub fn to_text(&self) -> String {
        let (bytes, lost) = self.since(0);
        render_tail_bytes(&bytes, lost)
    }
}

/// Decodes kept tail bytes (lossily, skipping a split leading char) and marks dropped bytes.
pub fn render_tail_bytes(bytes: &[u8], lost: u64) -> String {
    let mut start = 0;
    if lost > 0 {
        // The cut may have split a multi-byte char: skip continuation bytes.
        while start < bytes.len() && start < 3 && (bytes[start] & 0b1100_0000) == 0b1000_0000 {
            start += 1;
        }
    }
    let text = String::from_utf8_lossy(&bytes[start..]);
    if lost > 0 {
        format!(
            "[… {} earlier bytes omitted …]\n{text}",
            lost + start as u64
        )
    } else {
        text.into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_and_head_respect_char_boundaries() {
        let text = "ééééé"; // 10 bytes
        let kept = tail(text, 3);
        assert!(kept.ends_with('é'));
        assert!(kept.starts_with("[… 8 earlier bytes omitted …]"));
        let kept = head(text, 3);
        assert!(kept.starts_with("é\n"));
    }

    #[test]
    fn tail_buffer_keeps_the_end() {
        let mut buffer = TailBuffer::new(4);
        buffer.push(b"abc");
        buffer.push(b"defg");
        assert_eq!(buffer.total(), 7);
        assert_eq!(buffer.dropped(), 3);
        assert_eq!(buffer.since(0), (b"defg".to_vec(), 3));
        assert_eq!(buffer.since(5), (b"fg".to_vec(), 0));
        assert_eq!(buffer.since(7), (Vec::new(), 0));
        buffer.push(b"0123456789");
        assert_eq!(buffer.since(0), (b"6789".to_vec(), 13));
        assert!(buffer.to_text().ends_with("6789"));
    }
}
