//! The clarification gate: stop and ask when a request is too vague to hand off safely.

use std::sync::LazyLock;

use braincode_protocol::{Clarification, ClarificationOption};
use regex_lite::Regex;
use serde_json::Value;

/// Markers of injected continuity context: a prompt carrying them refers to earlier work,
/// so "fix it" is not vague there.
pub const CONTINUITY_MARKERS: [&str; 2] = ["Conversation so far", "Referenced session context"];

/// Most options a clarification offers.
pub const MAX_CLARIFICATION_OPTIONS: usize = 3;

/// Fewest valid router-supplied options for them to replace the defaults.
pub const MIN_CLARIFICATION_OPTIONS: usize = 2;

/// Most "missing" items a clarification lists.
pub const MAX_CLARIFICATION_MISSING: usize = 6;

/// English vague requests: a bare verb, optionally with a pronoun object and politeness.
static VAGUE_ENGLISH: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:(?:please|pls|can you|could you|would you|just)\s+)*",
        r"(?:fix|improve|update|change|optimi[sz]e|refactor|clean\s*up|tidy\s*up|check|look\s+at|",
        r"review|tweak|modify|polish|redo|handle|help|do|make\s+(?:it|this|that)\s+better)",
        r"(?:\s+(?:it|this|that|them|these|those|things|stuff|everything|the\s+code|this\s+code|that\s+code))?",
        r"(?:\s+(?:up|please|for\s+me|now|again))*$",
    ))
    .ok()
});

/// Chinese vague requests after politeness prefixes and filler suffixes are stripped.
const VAGUE_CHINESE_CORES: [&str; 18] = [
    "改", "改改", "修改", "优化", "看", "看看", "修", "修修", "修复", "处理", "弄", "搞", "调整",
    "完善", "改进", "检查", "更新", "重构",
];
const CHINESE_PREFIXES: [&str; 9] = [
    "请",
    "帮我",
    "帮忙",
    "麻烦",
    "你",
    "给我",
    "把这个",
    "把它",
    "再",
];
const CHINESE_SUFFIXES: [&str; 10] = [
    "一下",
    "下",
    "吧",
    "呗",
    "呀",
    "啊",
    "这个",
    "它",
    "那个",
    "一下子",
];

/// Whether `text` contains Chinese characters (decides the clarification's language).
pub fn is_chinese(text: &str) -> bool {
    text.chars()
        .any(|c| matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}'))
}

/// Whether the prompt carries injected continuity context.
pub fn has_continuity_context(prompt: &str) -> bool {
    CONTINUITY_MARKERS.iter().any(|m| prompt.contains(m))
}

fn strip_punctuation(text: &str) -> &str {
    text.trim_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '.' | '!' | '?' | '~' | '。' | '！' | '？' | '，' | ',' | '…'
            )
    })
}

fn is_vague_chinese(text: &str) -> bool {
    let mut core = strip_punctuation(text).replace(char::is_whitespace, "");
    // Peel politeness and filler until nothing changes; the loop is bounded by the length.
    loop {
        let before = core.len();
        for prefix in CHINESE_PREFIXES {
            if let Some(rest) = core.strip_prefix(prefix) {
                core = rest.to_string();
            }
        }
        for suffix in CHINESE_SUFFIXES {
            if let Some(rest) = core.strip_suffix(suffix) {
                core = rest.to_string();
            }
        }
        if core.len() == before {
            break;
        }
    }
    VAGUE_CHINESE_CORES.contains(&core.as_str())
}

fn is_vague_english(text: &str) -> bool {
    let normalized = strip_punctuation(&text.to_lowercase())
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    VAGUE_ENGLISH
        .as_ref()
        .is_some_and(|re| re.is_match(&normalized))
}

/// The default options, in Chinese or English.
pub fn default_clarification_options(chinese: bool) -> Vec<ClarificationOption> {
    let option = |id: &str, label: &str, description: &str| ClarificationOption {
        id: id.to_string(),
        label: label.to_string(),
        description: description.to_string(),
    };
    if chinese {
        vec![
            option(
                "make-scoped-change",
                "做一个小范围修改",
                "选最可能的目标，做一个最小、可审查的修改。",
            ),
            option(
                "plan-first",
                "先出方案",
                "先检查项目并给出方案，暂不修改任何内容。",
            ),
            option(
                "provide-details",
                "我来补充细节",
                "等我提供目标文件、期望行为和约束。",
            ),
        ]
    } else {
        vec![
            option(
                "make-scoped-change",
                "Make a small scoped change",
                "Pick the most likely target and make a minimal, reviewable change.",
            ),
            option(
                "plan-first",
                "Plan first",
                "Inspect the project and propose a plan before changing anything.",
            ),
            option(
                "provide-details",
                "I will add details",
                "Wait for the target files, the expected behaviour and the constraints.",
            ),
        ]
    }
}

/// The default clarification (required) in Chinese or English, with `reason`.
pub fn default_clarification(chinese: bool, reason: &str) -> Clarification {
    let (question, missing) = if chinese {
        (
            "具体要改什么、改哪里？",
            vec![
                "目标（文件、功能或组件）",
                "期望的行为或结果",
                "约束或验收标准",
            ],
        )
    } else {
        (
            "What exactly should change, and where?",
            vec![
                "the target (files, feature or component)",
                "the expected behaviour or outcome",
                "constraints or acceptance criteria",
            ],
        )
    };
    Clarification {
        required: true,
        reason: reason.to_string(),
        question: question.to_string(),
        missing: missing.into_iter().map(str::to_string).collect(),
        options: default_clarification_options(chinese),
    }
}

/// Decides whether `prompt` is too vague to hand off.
///
/// Triggers on an empty prompt or a vague standalone request ("fix it", "improve this",
/// "please update", "改一下", "优化一下", "看看"); never when the prompt carries continuity
/// context ([`CONTINUITY_MARKERS`]). The question and options are in Chinese when the prompt
/// contains Chinese, otherwise in English.
pub fn assess_clarification(prompt: &str) -> Clarification {
    if has_continuity_context(prompt) {
        return Clarification::default();
    }
    let chinese = is_chinese(prompt);
    if prompt.trim().is_empty() {
        return default_clarification(false, "The request is empty.");
    }
    let vague = if chinese {
        is_vague_chinese(prompt)
    } else {
        is_vague_english(prompt)
    };
    if !vague {
        return Clarification::default();
    }
    let reason = if chinese {
        "请求过于笼统：没有说明目标或期望结果。"
    } else {
        "The request does not say what to change or what the result should be."
    };
    default_clarification(chinese, reason)
}

/// A model reply's string field, trimmed; nothing when it is missing, not a string or blank.
pub(crate) fn text(value: Option<&Value>) -> Option<String> {
    value
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Reads a router-supplied clarification; `None` when it is missing or not an object with a
/// boolean `required`.
///
/// A required clarification keeps the router's question (or the default one in the
/// question's language), its `missing` items (at most [`MAX_CLARIFICATION_MISSING`]) and its
/// options only when at least [`MIN_CLARIFICATION_OPTIONS`] are valid (an option needs an id
/// and a label; at most [`MAX_CLARIFICATION_OPTIONS`] are kept); otherwise the defaults.
pub fn normalize_clarification(raw: &Value) -> Option<Clarification> {
    let object = raw.as_object()?;
    let required = object.get("required")?.as_bool()?;
    if !required {
        return Some(Clarification::default());
    }
    let question = text(object.get("question"));
    let chinese = question.as_deref().is_some_and(is_chinese);
    let mut clarification = default_clarification(
        chinese,
        &text(object.get("reason")).unwrap_or_else(|| {
            if chinese {
                "路由器认为需要澄清。".to_string()
            } else {
                "The router asked for clarification.".to_string()
            }
        }),
    );
    if let Some(question) = question {
        clarification.question = question;
    }
    let missing: Vec<String> = object
        .get("missing")
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|v| text(Some(v))).collect())
        .unwrap_or_default();
    if !missing.is_empty() {
        clarification.missing = missing
            .into_iter()
            .take(MAX_CLARIFICATION_MISSING)
            .collect();
    }
    let mut options: Vec<ClarificationOption> = Vec::new();
    for item in object
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(id), Some(label)) = (text(item.get("id")), text(item.get("label"))) else {
            continue;
        };
        if options.iter().any(|o| o.id == id) {
            continue;
        }
        options.push(ClarificationOption {
            id,
            label,
            description: text(item.get("description")).unwrap_or_default(),
        });
    }
    if options.len() >= MIN_CLARIFICATION_OPTIONS {
        options.truncate(MAX_CLARIFICATION_OPTIONS);
        clarification.options = options;
    }
    Some(clarification)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vague_english_prompts_ask() {
        for prompt in [
            "fix it",
            "Fix it.",
            "improve this",
            "please update",
            "Please fix this!",
            "can you clean up the code",
            "optimize",
            "look at this",
            "make it better",
        ] {
            let c = assess_clarification(prompt);
            assert!(c.required, "{prompt}");
            assert_eq!(c.options.len(), 3);
            assert_eq!(c.options[0].id, "make-scoped-change");
            assert!(c.question.starts_with("What exactly"));
        }
    }

    #[test]
    fn vague_chinese_prompts_ask_in_chinese() {
        for prompt in [
            "改一下",
            "优化一下",
            "看看",
            "帮我看看这个",
            "请修复一下。",
            "改改吧",
        ] {
            let c = assess_clarification(prompt);
            assert!(c.required, "{prompt}");
            assert_eq!(c.question, "具体要改什么、改哪里？");
            assert_eq!(c.options[1].id, "plan-first");
            assert_eq!(c.options[1].label, "先出方案");
        }
    }

    #[test]
    fn specific_prompts_pass() {
        for prompt in [
            "fix the login redirect in src/auth.rs",
            "improve the error message when the config file is missing",
            "优化一下首页的加载速度",
            "看看这个接口为什么返回 500",
            "hello",
        ] {
            assert!(!assess_clarification(prompt).required, "{prompt}");
        }
    }

    #[test]
    fn empty_prompt_asks_and_continuity_never_does() {
        let empty = assess_clarification("   ");
        assert!(empty.required);
        assert_eq!(empty.reason, "The request is empty.");
        let with_context =
            "Conversation so far (most recent session activity):\n...\nCurrent request:\nfix it";
        assert!(!assess_clarification(with_context).required);
        assert!(!assess_clarification("Referenced session context: x\n改一下").required);
    }

    #[test]
    fn router_clarification_needs_two_valid_options() {
        let raw = json!({"required": true, "question": "Which page?", "missing": ["page"],
            "options": [{"id": "home", "label": "Home"}, {"id": "", "label": "bad"},
                        {"id": "login", "label": "Login", "description": "the login page"},
                        {"id": "x", "label": "X"}, {"id": "y", "label": "Y"}]});
        let c = normalize_clarification(&raw).unwrap();
        assert!(c.required);
        assert_eq!(c.question, "Which page?");
        assert_eq!(c.missing, vec!["page"]);
        let ids: Vec<_> = c.options.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, vec!["home", "login", "x"]);

        let one = json!({"required": true, "question": "哪个页面？", "options": [{"id": "a", "label": "A"}]});
        let c = normalize_clarification(&one).unwrap();
        assert_eq!(c.options, default_clarification_options(true));

        assert_eq!(
            normalize_clarification(&json!({"required": false})),
            Some(Clarification::default())
        );
        assert_eq!(normalize_clarification(&json!({"question": "?"})), None);
        assert_eq!(normalize_clarification(&json!("yes")), None);
    }
}
