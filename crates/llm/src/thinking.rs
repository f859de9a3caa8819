//! Thinking level → provider reasoning settings (spec 1.5, thinking-level mapping).

use braincode_protocol::ThinkingLevel;

/// OpenAI `reasoning_effort` / `reasoning.effort` for a level.
///
/// `off` → omitted; `xhigh`/`max` → `high`; `minimal` stays `minimal` on the official OpenAI
/// API and becomes `low` on custom endpoints (most compatible servers only know
/// low/medium/high).
pub fn openai_reasoning_effort(level: ThinkingLevel, official: bool) -> Option<&'static str> {
    match level.clamp_to_high() {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal if official => Some("minimal"),
        ThinkingLevel::Minimal | ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => Some("high"),
    }
}

/// Smallest thinking budget Anthropic accepts.
pub const ANTHROPIC_MIN_THINKING_BUDGET: u32 = 1_024;

/// Anthropic `thinking.budget_tokens` for a level and output cap, or `None` when thinking is
/// off or cannot fit: the budget must be at least 1,024 and below `max_tokens`, so it is
/// clamped to `max_tokens - 1`, and thinking is left off when that is under 1,024.
pub fn anthropic_thinking_budget(level: ThinkingLevel, max_tokens: u32) -> Option<u32> {
    let wanted = match level {
        ThinkingLevel::Off => return None,
        ThinkingLevel::Minimal => 1_024,
        ThinkingLevel::Low => 4_096,
        ThinkingLevel::Medium => 10_240,
        ThinkingLevel::High => 24_576,
        ThinkingLevel::Xhigh => 32_768,
        ThinkingLevel::Max => 63_999,
    };
    let budget = wanted.min(max_tokens.saturating_sub(1));
    (budget >= ANTHROPIC_MIN_THINKING_BUDGET).then_some(budget)
}

/// Smallest Gemini thinking budget used: every Gemini 2.5 model accepts 512 (Flash-Lite
/// accepts nothing lower).
pub const GEMINI_MIN_THINKING_BUDGET: u32 = 512;

/// Gemini `thinkingConfig.thinkingBudget` for a level and output cap, or `None` when thinking
/// is off (the model's own default then applies) or cannot fit.
///
/// Gemini counts thoughts inside `maxOutputTokens`, so with a cap the budget takes at most
/// half of it, leaving the other half for the answer; `xhigh`/`max` clamp to `high`, whose
/// 24,576 is the largest budget every 2.5 model accepts.
pub fn gemini_thinking_budget(level: ThinkingLevel, max_tokens: Option<u32>) -> Option<u32> {
    let wanted = match level.clamp_to_high() {
        ThinkingLevel::Off => return None,
        ThinkingLevel::Minimal => GEMINI_MIN_THINKING_BUDGET,
        ThinkingLevel::Low => 2_048,
        ThinkingLevel::Medium => 8_192,
        ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 24_576,
    };
    let budget = max_tokens.map_or(wanted, |max| wanted.min(max / 2));
    (budget >= GEMINI_MIN_THINKING_BUDGET).then_some(budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_effort_mapping() {
        use ThinkingLevel::*;
        let custom: Vec<_> = ThinkingLevel::ALL
            .iter()
            .map(|l| openai_reasoning_effort(*l, false))
            .collect();
        assert_eq!(
            custom,
            vec![
                None,
                Some("low"),
                Some("low"),
                Some("medium"),
                Some("high"),
                Some("high"),
                Some("high")
            ]
        );
        assert_eq!(openai_reasoning_effort(Minimal, true), Some("minimal"));
        assert_eq!(openai_reasoning_effort(Max, true), Some("high"));
        assert_eq!(openai_reasoning_effort(Off, true), None);
    }

    #[test]
    fn anthropic_budget_is_clamped() {
        use ThinkingLevel::*;
        assert_eq!(anthropic_thinking_budget(Off, 64_000), None);
        assert_eq!(anthropic_thinking_budget(Medium, 64_000), Some(10_240));
        assert_eq!(anthropic_thinking_budget(High, 8_192), Some(8_191));
        assert_eq!(anthropic_thinking_budget(Minimal, 1_025), Some(1_024));
        assert_eq!(anthropic_thinking_budget(Low, 1_024), None);
        assert_eq!(anthropic_thinking_budget(Max, 16), None);
    }

    #[test]
    fn gemini_budget_leaves_room_for_the_answer() {
        use ThinkingLevel::*;
        assert_eq!(gemini_thinking_budget(Off, None), None);
        assert_eq!(gemini_thinking_budget(Minimal, None), Some(512));
        assert_eq!(gemini_thinking_budget(Medium, None), Some(8_192));
        assert_eq!(gemini_thinking_budget(Max, None), Some(24_576));
        assert_eq!(gemini_thinking_budget(High, Some(8_192)), Some(4_096));
        assert_eq!(gemini_thinking_budget(Low, Some(1_000)), None);
        assert_eq!(gemini_thinking_budget(High, Some(16)), None);
    }
}
