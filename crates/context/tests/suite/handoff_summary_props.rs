//! Property tests for the bounded handoff summary: every promise of the ADR, checked on
//! generated summaries (multi-byte text included).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_context::text::{ELLIPSIS, char_len};
use braincode_context::{
    HandoffSummary, HandoffTurn, TURN_LINE_MAX_CHARS, bound_handoff_summary, is_turn_line,
    turn_prefix,
};
use proptest::prelude::*;

const CASES: u32 = 1_024;

/// Text mixing ASCII, accented Latin, CJK, emoji and newlines.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => "[a-z ]{1,12}",
            1 => "[éüß]{1,4}",
            1 => "[改一下优化看]{1,6}",
            1 => Just("🦀".to_string()),
            1 => Just("\n".to_string()),
        ],
        0..16,
    )
    .prop_map(|parts| parts.concat())
}

fn turn() -> impl Strategy<Value = HandoffTurn> {
    (
        prop_oneof![
            Just("user".to_string()),
            Just("assistant".to_string()),
            "[a-zA-Z*]{0,12}"
        ],
        text(),
    )
        .prop_map(|(role, text)| HandoffTurn { role, text })
}

fn summary() -> impl Strategy<Value = HandoffSummary> {
    ("[a-z改 ]{0,80}", prop::collection::vec(turn(), 0..16))
        .prop_map(|(objective, turns)| HandoffSummary { objective, turns })
}

/// Arbitrary markdown, not necessarily produced by `render` (legacy summaries).
fn markdown() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => ("[a-z]{1,8}", text()).prop_map(|(r, t)| format!("- **{r}:** {t}")),
            1 => text(),
            1 => Just(String::new()),
            1 => Just("- **unclosed".to_string()),
        ],
        0..14,
    )
    .prop_map(|lines| lines.join("\n"))
}

/// Every output line, once a trailing ellipsis is removed, must be a prefix of an input line:
/// nothing is invented and no character is mangled.
fn lines_come_from(output: &str, input: &str) -> bool {
    let input_lines: Vec<&str> = input.split('\n').collect();
    output.split('\n').all(|line| {
        let kept = line.strip_suffix(ELLIPSIS).unwrap_or(line);
        input_lines.iter().any(|source| source.starts_with(kept))
    })
}

fn turn_lines(md: &str) -> Vec<&str> {
    md.split('\n').filter(|l| is_turn_line(l)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn never_exceeds_the_budget(md in markdown(), max in 0usize..400) {
        prop_assert!(char_len(&bound_handoff_summary(&md, max)) <= max);
    }

    #[test]
    fn is_idempotent(md in markdown(), max in 0usize..400) {
        let once = bound_handoff_summary(&md, max);
        prop_assert_eq!(bound_handoff_summary(&once, max), once.clone());
    }

    #[test]
    fn leaves_fitting_summaries_untouched(md in markdown()) {
        let len = char_len(&md);
        prop_assert_eq!(bound_handoff_summary(&md, len), md.clone());
        prop_assert_eq!(bound_handoff_summary(&md, len + 10), md);
    }

    #[test]
    fn never_invents_or_splits_text(md in markdown(), max in 0usize..400) {
        let bounded = bound_handoff_summary(&md, max);
        prop_assert!(lines_come_from(&bounded, &md), "{:?} -> {:?}", md, bounded);
    }

    #[test]
    fn keeps_the_objective_when_it_fits(s in summary(), max in 0usize..1_200) {
        let md = s.render();
        let bounded = bound_handoff_summary(&md, max);
        // Everything before the separator that precedes the first turn line.
        let head = &md[..md.find("\n- **").unwrap_or(md.len())];
        if char_len(head) <= max {
            prop_assert!(bounded.starts_with(head), "{:?}", bounded);
        } else {
            // Clipped, but still the start of the objective.
            let kept = bounded.strip_suffix(ELLIPSIS).unwrap_or(&bounded);
            prop_assert!(head.starts_with(kept));
        }
    }

    #[test]
    fn keeps_the_newest_turns_and_drops_the_oldest(s in summary(), max in 0usize..1_200) {
        let md = s.render();
        let bounded = bound_handoff_summary(&md, max);
        let all = turn_lines(&md);
        let kept = turn_lines(&bounded);
        prop_assert!(kept.len() <= all.len());
        // The kept turns are the newest ones, in order, forming a contiguous suffix.
        let suffix = &all[all.len() - kept.len()..];
        for (index, (kept_line, source)) in kept.iter().zip(suffix).enumerate() {
            if kept_line != source {
                // Only a lone newest turn may be truncated, and it keeps its prefix.
                prop_assert_eq!(kept.len(), 1, "truncated turn at {}", index);
                prop_assert!(kept_line.ends_with(ELLIPSIS));
                prop_assert!(kept_line.starts_with(turn_prefix(source)));
                let stem = kept_line.strip_suffix(ELLIPSIS).unwrap();
                prop_assert!(source.starts_with(stem));
            }
        }
    }

    #[test]
    fn truncation_keeps_the_turn_prefix(
        role in "[a-z]{1,10}",
        body in "[a-zé改]{50,300}",
        max in 0usize..200,
    ) {
        let md = format!("**Objective:** x\n\n- **{role}:** {body}");
        let bounded = bound_handoff_summary(&md, max);
        let prefix = format!("- **{role}:**");
        if let Some(line) = bounded.split('\n').find(|l| is_turn_line(l)) {
            prop_assert!(line.starts_with(&prefix), "{:?}", line);
        }
        // The newest turn survives whenever its prefix and one ellipsis fit after the head.
        let room = max.saturating_sub("**Objective:** x\n".chars().count() + 1);
        if room > prefix.chars().count() {
            prop_assert!(bounded.contains(&prefix));
        }
    }

    #[test]
    fn rendered_turn_text_is_clipped_to_the_line_budget(t in turn()) {
        let line = t.render();
        prop_assert!(!line.contains('\n'));
        let prefix = turn_prefix(&line);
        prop_assert!(line.starts_with("- **") && prefix.ends_with(":**"));
        let body = line[prefix.len()..].trim_start();
        prop_assert!(char_len(body) <= TURN_LINE_MAX_CHARS);
    }
}
