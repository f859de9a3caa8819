//! Exact integer ranges as GBNF, built digit by digit (the classic range-to-regex
//! construction), so `minimum: 1, maximum: 5000` costs a handful of alternatives instead of
//! 5000 literals (each literal would be a separate grammar stack on every sampling step).

fn digit_class(lo: u8, hi: u8) -> String {
    if lo == hi {
        format!("\"{}\"", lo as char)
    } else if lo == b'0' && hi == b'9' {
        "[0-9]".to_string()
    } else {
        format!("[{}-{}]", lo as char, hi as char)
    }
}

/// Alternatives matching exactly the decimal strings of equal length from `lo` to `hi`.
fn same_length_range(lo: &[u8], hi: &[u8]) -> Vec<String> {
    let Some((&l, lo_rest)) = lo.split_first() else {
        return vec![String::new()];
    };
    let (&h, hi_rest) = hi.split_first().unwrap_or((&l, &[]));
    let join = |head: String, tail: String| {
        if tail.is_empty() {
            head
        } else {
            format!("{head} {tail}")
        }
    };
    if l == h {
        return same_length_range(lo_rest, hi_rest)
            .into_iter()
            .map(|tail| join(digit_class(l, l), tail))
            .collect();
    }
    let n = lo_rest.len();
    let any = |count: usize| match count {
        0 => String::new(),
        1 => "[0-9]".to_string(),
        _ => format!("[0-9]{{{count}}}"),
    };
    let mut out = Vec::new();
    let lo_floor = lo_rest.iter().all(|d| *d == b'0');
    let hi_ceiling = hi_rest.iter().all(|d| *d == b'9');
    let middle_lo = if lo_floor { l } else { l + 1 };
    let middle_hi = if hi_ceiling { h } else { h - 1 };
    if !lo_floor {
        let nines = vec![b'9'; n];
        for tail in same_length_range(lo_rest, &nines) {
            out.push(join(digit_class(l, l), tail));
        }
    }
    if middle_lo <= middle_hi {
        out.push(join(digit_class(middle_lo, middle_hi), any(n)));
    }
    if !hi_ceiling {
        let zeros = vec![b'0'; n];
        for tail in same_length_range(&zeros, hi_rest) {
            out.push(join(digit_class(h, h), tail));
        }
    }
    out
}

/// A parenthesized alternation matching exactly the integers `lo..=hi` (no leading zeros).
pub(super) fn uint_range(lo: u64, hi: u64) -> String {
    let mut alternatives = Vec::new();
    let (lo_len, hi_len) = (lo.to_string().len(), hi.to_string().len());
    for len in lo_len..=hi_len {
        let smallest = if len == 1 {
            0
        } else {
            10u64.pow(len as u32 - 1)
        };
        let largest = 10u64.saturating_pow(len as u32).saturating_sub(1);
        let (a, b) = (lo.max(smallest), hi.min(largest));
        if a <= b {
            alternatives.extend(same_length_range(
                a.to_string().as_bytes(),
                b.to_string().as_bytes(),
            ));
        }
    }
    format!("({})", alternatives.join(" | "))
}

/// Integers `>= lo` (up to 16 digits).
pub(super) fn uint_at_least(lo: u64) -> String {
    let len = lo.to_string().len();
    let top = 10u64.saturating_pow(len as u32).saturating_sub(1);
    if len >= 16 {
        return uint_range(lo, top);
    }
    format!("({} | [1-9] [0-9]{{{len},15}})", uint_range(lo, top))
}

/// Integers `lo..=hi`, signs included.
pub(super) fn int_range(lo: i64, hi: i64) -> String {
    if lo >= 0 {
        uint_range(lo.unsigned_abs(), hi.unsigned_abs())
    } else if hi < 0 {
        format!(
            r#"("-" {})"#,
            uint_range(hi.unsigned_abs(), lo.unsigned_abs())
        )
    } else {
        format!(
            r#"("-" {} | {})"#,
            uint_range(1, lo.unsigned_abs()),
            uint_range(0, hi.unsigned_abs())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force check of the digit-wise range construction against a tiny matcher.
    fn matches(alternatives: &str, text: &str) -> bool {
        let inner = alternatives.trim_start_matches('(').trim_end_matches(')');
        inner.split(" | ").any(|alt| {
            let mut rest = text.as_bytes();
            for atom in alt.split(' ').filter(|a| !a.is_empty()) {
                let (class, count) = match atom.split_once('{') {
                    Some((class, n)) => (class, n.trim_end_matches('}').parse::<usize>().unwrap()),
                    None => (atom, 1),
                };
                let (lo, hi) = if let Some(digit) = class.strip_prefix('"') {
                    (digit.as_bytes()[0], digit.as_bytes()[0])
                } else {
                    (class.as_bytes()[1], class.as_bytes()[3])
                };
                for _ in 0..count {
                    match rest.split_first() {
                        Some((&c, tail)) if (lo..=hi).contains(&c) => rest = tail,
                        _ => return false,
                    }
                }
            }
            rest.is_empty()
        })
    }

    #[test]
    fn integer_ranges_are_exact_digit_by_digit() {
        for (lo, hi) in [
            (0, 9),
            (1, 5000),
            (7, 1234),
            (10, 99),
            (0, 100),
            (95, 105),
            (3, 3),
        ] {
            let grammar = uint_range(lo, hi);
            for n in 0..=6000u64 {
                assert_eq!(
                    matches(&grammar, &n.to_string()),
                    (lo..=hi).contains(&n),
                    "{n} in {lo}..={hi}: {grammar}"
                );
            }
            assert!(!matches(&grammar, "01"), "no leading zeros: {grammar}");
        }
        assert!(
            uint_range(1, 5000).matches(" | ").count() < 12,
            "stays small"
        );
    }
}
