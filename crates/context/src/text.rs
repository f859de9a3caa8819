//! Small text helpers every crate uses to keep prompts and records within budget.
//!
//! All of them count Unicode scalar values (`char`s) or bytes explicitly and never split a
//! UTF-8 character.

/// The marker appended when text is clipped.
pub const ELLIPSIS: char = '…';

/// Clips `text` to at most `max_chars` characters, ending with `…` when anything was cut.
///
/// Counts `char`s, not bytes, so the result is always valid UTF-8 and never longer than
/// `max_chars` characters (the ellipsis included). `max_chars == 0` yields an empty string.
pub fn clip_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some(_) if max_chars == 0 => String::new(),
        Some(_) => {
            // Keep max_chars - 1 characters and spend the last one on the ellipsis.
            let keep_end = text
                .char_indices()
                .nth(max_chars - 1)
                .map_or(text.len(), |(index, _)| index);
            let mut clipped = String::with_capacity(keep_end + ELLIPSIS.len_utf8());
            clipped.push_str(&text[..keep_end]);
            clipped.push(ELLIPSIS);
            clipped
        }
    }
}

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
    fn clip_chars_keeps_short_text_unchanged() {
        assert_eq!(clip_chars("hello", 5), "hello");
        assert_eq!(clip_chars("hello", 50), "hello");
        assert_eq!(clip_chars("", 0), "");
    }

    #[test]
    fn clip_chars_counts_chars_and_adds_an_ellipsis() {
        assert_eq!(clip_chars("hello world", 6), "hello…");
        assert_eq!(clip_chars("héllo wörld", 4), "hél…");
        assert_eq!(clip_chars("改一下这个页面", 3), "改一…");
        assert_eq!(clip_chars("abc", 1), "…");
        assert_eq!(clip_chars("abc", 0), "");
    }

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
        fn clip_chars_respects_the_budget(text in "\\PC{0,64}", max in 0usize..70) {
            let clipped = clip_chars(&text, max);
            prop_assert!(char_len(&clipped) <= max);
            if char_len(&text) <= max {
                prop_assert_eq!(&clipped, &text);
            } else if max > 0 {
                prop_assert!(clipped.ends_with(ELLIPSIS));
                let kept = clipped.trim_end_matches(ELLIPSIS);
                prop_assert!(text.starts_with(kept));
            }
        }

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
