//! The product's text clippers and its hex encoder: one implementation each, for every crate.
//!
//! Clippers count Unicode scalar values (`char`s), never bytes, so a clipped text is always
//! valid UTF-8. They differ only in how a cut is marked; the name says which.

/// The marker appended when text is clipped.
pub const ELLIPSIS: char = '…';

/// Clips `text` to at most `max_chars` characters, ending with `…` when anything was cut.
///
/// The ellipsis is counted: the result is never longer than `max_chars` characters, so it fits
/// a budget. `max_chars == 0` yields an empty string.
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

/// Keeps the first `max_chars` characters of `text` and appends `…` when anything was cut.
///
/// The ellipsis is not counted (a clipped result has `max_chars + 1` characters): for previews
/// where the kept text matters more than the budget.
pub fn clip_chars_then_ellipsis(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((index, _)) => format!("{}{ELLIPSIS}", &text[..index]),
        None => text.to_string(),
    }
}

/// Keeps the first `max_chars` characters of `text` and, when anything was cut, says how many
/// characters were left out: `hé… [3 more chars]`.
pub fn clip_chars_noting_rest(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((cut, _)) => {
            let omitted = text[cut..].chars().count();
            format!("{}{ELLIPSIS} [{omitted} more chars]", &text[..cut])
        }
    }
}

/// Lower-case hex of `bytes` (two digits a byte), as digests are written.
pub fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbouring characters each cost one; letters compare case-insensitively. What "did you
/// mean" suggestions (commands, skills) are measured with.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let width = b.len() + 1;
    let mut table = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        for j in 0..=b.len() {
            table[i * width + j] = if i == 0 || j == 0 {
                i + j
            } else {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                let mut best = (table[(i - 1) * width + j] + 1)
                    .min(table[i * width + j - 1] + 1)
                    .min(table[(i - 1) * width + j - 1] + cost);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    best = best.min(table[(i - 2) * width + j - 2] + 1);
                }
                best
            };
        }
    }
    table[a.len() * width + b.len()]
}

/// The `candidates` close to `word`, closest first (ties in the candidates' order): those it
/// is a prefix of, or at most a third of its length (at least one) edits away.
pub fn close_names<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let lower = word.to_lowercase();
    let allowed = (word.chars().count() / 3).max(1);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            let distance = if candidate.to_lowercase().starts_with(&lower) && !lower.is_empty() {
                0
            } else {
                edit_distance(&lower, candidate)
            };
            (distance <= allowed).then_some((distance, candidate))
        })
        .collect();
    scored.sort_by_key(|(distance, _)| *distance);
    scored.into_iter().map(|(_, name)| name).collect()
}

/// `name` with every character but ASCII letters, digits, `-` and `_` made `_`: fit for a
/// file or directory name, a key-value key, a provider's tool name.
pub fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
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
    fn clip_chars_then_ellipsis_keeps_the_whole_budget() {
        assert_eq!(clip_chars_then_ellipsis("héllo", 2), "hé…");
        assert_eq!(clip_chars_then_ellipsis("hé", 2), "hé");
        assert_eq!(clip_chars_then_ellipsis("abc", 0), "…");
    }

    #[test]
    fn clip_chars_noting_rest_counts_what_was_cut() {
        assert_eq!(clip_chars_noting_rest("héllo", 2), "hé… [3 more chars]");
        assert_eq!(clip_chars_noting_rest("abc", 3), "abc");
    }

    #[test]
    fn lower_hex_is_lower_case_two_digits_a_byte() {
        assert_eq!(lower_hex(&[]), "");
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn clip_chars_respects_the_budget(text in "\\PC{0,64}", max in 0usize..70) {
            let clipped = clip_chars(&text, max);
            prop_assert!(clipped.chars().count() <= max);
            if text.chars().count() <= max {
                prop_assert_eq!(&clipped, &text);
            } else if max > 0 {
                prop_assert!(clipped.ends_with(ELLIPSIS));
                let kept = clipped.trim_end_matches(ELLIPSIS);
                prop_assert!(text.starts_with(kept));
            }
        }

        #[test]
        fn lower_hex_matches_the_format_macro(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let formatted: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            prop_assert_eq!(lower_hex(&bytes), formatted);
        }
    }

    #[test]
    fn close_names_prefer_prefixes_then_few_edits() {
        assert_eq!(edit_distance("replya", "replay"), 1);
        assert_eq!(edit_distance("Doctor", "doctor"), 0);
        let skills = ["review", "release-notes", "refactor", "docs"];
        assert_eq!(close_names("reveiw", skills), ["review"]);
        assert_eq!(
            close_names("re", skills),
            ["review", "release-notes", "refactor"]
        );
        assert!(close_names("zzzz", skills).is_empty());
    }
}
