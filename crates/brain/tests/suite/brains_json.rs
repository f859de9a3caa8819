//! `brains.json` as a user writes it: inheritance from the built-in presets, the four
//! resolution errors, and typos refused at parse time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_brain::{
    BrainError, BrainsDocument, default_brains, role_system_prompt, select_brain,
};
use braincode_protocol::{Role, ThinkingLevel};

fn with_defaults(json: &str) -> Vec<braincode_brain::BrainPreset> {
    let doc: BrainsDocument = serde_json::from_str(json).unwrap();
    let mut presets = default_brains();
    presets.extend(doc.brains);
    presets
}

#[test]
fn a_child_brain_overrides_only_what_it_names() {
    let presets = with_defaults(
        r#"{"brains": [{
            "id": "mine", "extends": "anthropic", "name": "Mine",
            "roles": {
                "review": {"modelId": "openai/gpt-5.5", "thinkingLevel": "max"},
                "rush": {"systemPrompt": "Answer in one sentence."}
            },
            "routing": {"maxParallelAgents": 3},
            "context": {"compaction": "aggressive"}
        }]}"#,
    );
    let brain = select_brain(&presets, "mine").unwrap();
    let parent = select_brain(&presets, "anthropic").unwrap();
    assert_eq!(brain.name, "Mine");
    assert_eq!(brain.description, parent.description);
    let review = brain.policy(Role::Review);
    assert_eq!(review.chain(), vec!["openai/gpt-5.5", "local/smollm2"]);
    assert_eq!(review.thinking_level, ThinkingLevel::Max);
    assert_eq!(
        role_system_prompt(Role::Rush, &brain),
        "Answer in one sentence."
    );
    assert_eq!(brain.routing.max_parallel_agents, 3);
    assert!(brain.routing.require_review_for_file_edits);
    assert_eq!(
        brain.context.max_input_tokens,
        parent.context.max_input_tokens
    );
    assert_ne!(brain.context.compaction, parent.context.compaction);
}

#[test]
fn each_resolution_error_is_reported() {
    let presets = with_defaults(
        r#"{"brains": [
            {"id": "orphan", "extends": "nowhere"},
            {"id": "loop-a", "extends": "loop-b"},
            {"id": "loop-b", "extends": "loop-a"},
            {"id": "half", "name": "Half", "description": "d", "planner": {"modelId": "local/smollm2"}}
        ]}"#,
    );
    let unknown = select_brain(&presets, "missing").unwrap_err();
    assert!(matches!(unknown, BrainError::UnknownBrain { .. }));
    assert!(
        unknown.to_string().contains("orphan, loop-a, loop-b, half"),
        "{unknown}"
    );
    assert_eq!(
        select_brain(&presets, "orphan").unwrap_err().to_string(),
        "unknown parent brain id 'nowhere' for brain id 'orphan'"
    );
    assert!(
        select_brain(&presets, "loop-a")
            .unwrap_err()
            .to_string()
            .contains("loop-a -> loop-b -> loop-a")
    );
    let half = select_brain(&presets, "half").unwrap_err().to_string();
    assert_eq!(
        half,
        "brain id 'half' must either extend another brain or define: roles, routing, context"
    );
}

#[test]
fn typos_are_refused_when_parsing() {
    for bad in [
        r#"{"brains": [{"id": "x", "extend": "brain"}]}"#,
        r#"{"brains": [{"id": "x", "roles": {"frontent": {"modelId": "m"}}}]}"#,
        r#"{"brains": [{"id": "x", "planner": {"modelID": "m"}}]}"#,
        r#"{"brains": [{"id": "x", "planner": {"thinkingLevel": "extreme"}}]}"#,
        r#"{"brains": [{"id": "x", "context": {"isolation": "loose"}}]}"#,
        r#"{"brain": []}"#,
    ] {
        assert!(
            serde_json::from_str::<BrainsDocument>(bad).is_err(),
            "{bad}"
        );
    }
}
