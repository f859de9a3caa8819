//! Small text helpers every crate uses to keep prompts and records within budget.
//!
//! All of them count Unicode scalar values (`char`s) or bytes explicitly and never split a
//! UTF-8 character.

/// The clippers live in the protocol crate so that crates below this one use the same ones.
pub use braincode_protocol::{ELLIPSIS, clip_chars};

/// The longest prefix of `text` that is at most `max_bytes` bytes long and ends on a
/// character boundary. No marker is added: callers say what was cut in their own words.
pub fn clip_bytes(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Collapses every run of whitespace (newlines included) into one space and trims the ends,
/// so a multi-line text fits on one line.
pub fn flatten_whitespace(text: &str) -> String {
    let mut flat = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !flat.is_empty() {
            flat.push(' ');
        }
        flat.push_str(word);
    }
    flat
}

/// Number of characters in `text` (not bytes).
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn clip_bytes_never_splits_a_character() {
        assert_eq!(clip_bytes("abc", 10), "abc");
        assert_eq!(clip_bytes("abc", 2), "ab");
        // "é" is two bytes: cutting at 2 would land inside it.
        assert_eq!(clip_bytes("aé", 2), "a");
        assert_eq!(clip_bytes("改改", 4), "改");
        assert_eq!(clip_bytes("改", 0), "");
    }

    #[test]
    fn flatten_whitespace_joins_lines() {
        assert_eq!(flatten_whitespace("  a\n\tb   c \r\n"), "a b c");
        assert_eq!(flatten_whitespace(" \n "), "");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn clip_bytes_returns_a_prefix_within_budget(text in "\\PC{0,64}", max in 0usize..200) {
            let clipped = clip_bytes(&text, max);
            prop_assert!(clipped.len() <= max);
            prop_assert!(text.starts_with(clipped));
            // Nothing more could have fit: the next character would exceed the budget.
            if let Some(next) = text[clipped.len()..].chars().next() {
                prop_assert!(clipped.len() + next.len_utf8() > max);
            }
        }
    }
}
