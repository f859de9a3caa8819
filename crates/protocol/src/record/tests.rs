//! Journal record tests: every type round-trips and is listed, unknown and malformed records
//! are kept verbatim, and the payloads keep their wire shape.

use super::*;
use crate::{Phase, Role, Usage};
use serde_json::json;

fn handoff_json() -> Value {
    json!({"fromLayer": "brain", "toLayer": "agent", "id": "t1:handoff",
           "task": {"id": "t1", "parentId": "b1", "layer": "agent", "agentRole": "qa",
                    "goal": "test", "progress": {"status": "pending"}, "contextRefs": []},
           "constraints": ["c"], "expectedResult": "json"})
}

fn result_json() -> Value {
    json!({"fromLayer": "agent", "toLayer": "brain", "handoffId": "t1:handoff",
           "taskId": "t1", "parentId": "b1",
           "progress": {"status": "completed", "summary": "ok"},
           "summary": "done", "artifacts": [], "risks": [], "nextQuestions": []})
}

/// A small but complete record of `ty`, as a journal line body; `None` for a name with no
/// sample (which fails the test below).
fn sample(ty: &str) -> Option<Value> {
    let hook = json!({"eventName": "Stop", "records": [], "additionalContext": ["x"]});
    let body = match ty {
        "run_start" => json!({"prompt": "hi", "runId": "r1", "attempt": 1}),
        "run_end" => json!({"summary": "done", "workerResults": [result_json()],
                            "status": "answered", "durationMs": 12}),
        "run_error" => json!({"error": "boom", "kind": "aborted", "status": "aborted"}),
        "worker_start" => json!({"phase": "support", "worker": "qa", "goal": "test",
                                 "handoff": handoff_json(), "model": "m"}),
        "worker_end" => json!({"phase": "support", "worker": "qa", "result": result_json()}),
        "worker_error" => json!({"phase": "support", "worker": "qa", "error": "e",
                                 "handoff": handoff_json(), "willFallback": true}),
        "agent_message" => json!({"phase": "support", "worker": "qa", "message": {
            "id": "m1", "from": "brain", "to": "agent:qa", "kind": "handoff",
            "payload": handoff_json()}}),
        "todo_plan" => json!({"todos": [], "dependencies": []}),
        "todo_update" => json!({"phase": "support", "status": "completed",
                                "todoIds": ["todo-1"], "todos": []}),
        "context_plan" => json!({"context": {"id": "b1", "layer": "brain", "goal": "g",
            "progress": {"status": "running"}, "childContextIds": ["t1"], "contextRefs": []}}),
        "routing" => json!({"source": "heuristic", "primaryRole": "rush", "reason": "r",
            "workers": [{"role": "qa", "phase": "support", "goal": "g", "contextId": "t1"}],
            "requiresReview": true}),
        "clarification_request" => json!({"clarification": {"required": true,
            "reason": "vague", "question": "which?", "missing": [], "options": []}}),
        "check_summary" => json!({"status": "skipped", "reason": "none",
            "selectedScripts": [], "reviewRequired": false, "results": []}),
        "review_decision" => json!({"decision": "approved", "findings": [],
            "requiredChanges": [], "blockingIssues": [], "residualRisks": []}),
        "review_artifacts_summary" => json!({"changedFiles": ["a.rs"],
                                                "diffTruncated": false}),
        "fix_iteration" => json!({"iteration": 1, "trigger": "checks_failed"}),
        "patch_summary" => json!({"changedFiles": [], "hasPatchActivity": false}),
        "final_report" => json!({"finalReport": {"version": 1, "status": "answered",
            "task": "t", "sessionId": "s", "brain": {"id": "b", "name": "B", "mode": "auto"},
            "routing": {"source": "heuristic", "primaryRole": "rush", "workers": []},
            "todos": [], "modelSummary": "m", "warnings": []}}),
        "mcp_connect" => json!({"report": {"connected": [{"name": "fs", "toolCount": 2}],
                                           "toolCount": 2}}),
        "tool_call_count" => json!({"total": 2, "failed": 0, "byPhase": {}}),
        "model_retry" => json!({"model": "m", "attempt": 1, "kind": "server",
                                "message": "503"}),
        "repo_facts" => json!({"facts": ["Main language: Rust"]}),
        "network_access" => json!({"host": "pypi.org", "port": 443, "allowed": false,
                                   "reason": "pypi.org is not on the network allowlist"}),
        "model_reply" => json!({"agentSessionId": "t1-1", "call": 0, "model": "m",
            "text": "hi", "toolCalls": [{"id": "c1", "name": "read_file",
                                         "arguments": "{}"}]}),
        "warning" => json!({"message": "careful"}),
        "handoff" => json!({"summary": "s", "trigger": "manual", "summarizer": "heuristic",
            "summarizerFallback": "timed out after 20000 ms"}),
        "dynamic_dispatch" => json!({"phase": "request", "role": "dba", "contextId": "d1"}),
        "execution_plan_review" => json!({"planId": "b1:plan", "status": "approved",
            "approver": "mode_policy", "requiredReview": false,
            "proposedSideEffects": [{"kind": "edit", "target": "src", "risk": "low"}],
            "validationPlan": {"checks": [], "evidence": [], "successCriteria": []},
            "riskTriggers": [], "residualPreExecutionRisks": []}),
        "tool_approval_decision" => json!({"toolCallId": "c1", "toolName": "edit_file",
            "decision": "allowed", "approver": "permission_policy", "argsSummary": {}}),
        "tool_execution_summary" => json!({"toolCallId": "c1", "toolName": "read_file",
            "stage": "end", "output": "text", "durationMs": 3}),
        "hook_session_start"
        | "hook_user_prompt_submit"
        | "hook_subagent_start"
        | "hook_subagent_stop"
        | "hook_stop"
        | "hook_pre_compact"
        | "hook_post_compact" => hook,
        "hook_pre_tool_use" | "hook_permission_request" | "hook_post_tool_use" => json!({
            "eventName": "PreToolUse", "matcher": "write_file", "records": [],
            "additionalContext": [], "agentSessionId": "t1-1", "toolCallId": "c1",
            "decision": "ask", "updatedInput": {"path": "a.rs"}}),
        "token_usage" => json!({"usage": {"input": 1, "output": 2, "cacheRead": 0,
                                          "cacheWrite": 0, "total": 3}}),
        "file_change" => json!({"path": "a.rs", "toolCallId": "c1", "toolName": "edit_file",
            "beforeHash": null, "afterHash": "ab", "diff": "+x", "added": 1, "removed": 0,
            "undoable": true}),
        "patch_baseline" => json!({"entries": [{"path": "a.rs", "status": " M",
                                                "hash": "12"}]}),
        "undo" => json!({"runId": "r1", "files": [{"path": "a.rs", "action": "restored"}]}),
        "writer_merge" => json!({"role": "backend", "contextId": "t1", "worktree": "/w/t1",
            "outcome": "conflict", "files": [{"path": "a.rs", "status": "conflict"}],
            "reason": "a.rs changed on both sides", "patchPath": "/h/t1.patch"}),
        "compaction" => {
            json!({"agentSessionId": "a-1", "call": 3, "trigger": "auto", "applied": true,
            "tokensBefore": 10, "tokensAfter": 4, "turnsSummarized": 2, "linesDropped": 0,
            "summary": "- read_file(a.rs) → 10 chars"})
        }
        _ => return None,
    };
    let Value::Object(mut map) = body else {
        return None;
    };
    map.insert("type".into(), Value::from(ty));
    Some(Value::Object(map))
}

/// Compile-time guard: a new variant fails to compile here until it has a sample above.
fn has_sample(record: &Record) -> bool {
    match record {
        Record::RunStart(_)
        | Record::RunEnd(_)
        | Record::RunError(_)
        | Record::WorkerStart(_)
        | Record::WorkerEnd(_)
        | Record::WorkerError(_)
        | Record::AgentMessage(_)
        | Record::TodoPlan(_)
        | Record::TodoUpdate(_)
        | Record::ContextPlan(_)
        | Record::Routing(_)
        | Record::ClarificationRequest(_)
        | Record::CheckSummary(_)
        | Record::ReviewDecision(_)
        | Record::ReviewArtifactsSummary(_)
        | Record::FixIteration(_)
        | Record::PatchSummary(_)
        | Record::FinalReport(_)
        | Record::McpConnect(_)
        | Record::ToolCallCount(_)
        | Record::ModelRetry(_)
        | Record::NetworkAccess(_)
        | Record::RepoFacts(_)
        | Record::ModelReply(_)
        | Record::Warning(_)
        | Record::Handoff(_)
        | Record::DynamicDispatch(_)
        | Record::ExecutionPlanReview(_)
        | Record::ToolApprovalDecision(_)
        | Record::ToolExecutionSummary(_)
        | Record::HookSessionStart(_)
        | Record::HookUserPromptSubmit(_)
        | Record::HookSubagentStart(_)
        | Record::HookSubagentStop(_)
        | Record::HookStop(_)
        | Record::HookPreToolUse(_)
        | Record::HookPermissionRequest(_)
        | Record::HookPostToolUse(_)
        | Record::HookPreCompact(_)
        | Record::HookPostCompact(_)
        | Record::TokenUsage(_)
        | Record::FileChange(_)
        | Record::PatchBaseline(_)
        | Record::Undo(_)
        | Record::WriterMerge(_)
        | Record::Compaction(_) => true,
        Record::Unknown(_) => false,
    }
}

#[test]
fn every_known_type_round_trips_typed_and_is_listed() {
    let mut seen = Vec::new();
    let mut rewritten = Vec::new();
    for ty in Record::KNOWN_TYPES {
        let value = sample(ty).unwrap_or_else(|| panic!("no sample for {ty}"));
        let record: Record = serde_json::from_value(value.clone()).unwrap();
        assert!(has_sample(&record), "{ty} parsed as {record:?}");
        assert_eq!(record.type_name(), *ty);
        assert!(!record.is_malformed_known());
        assert_eq!(record.parse_error(), None);
        // The typed record writes back exactly the sample (no field lost or invented).
        let written = serde_json::to_value(&record).unwrap();
        if written != value {
            rewritten.push(format!("{ty}: {value} was written back as {written}"));
        }
        let entry = JournalEntry::new(7, record.clone());
        let line = serde_json::to_string(&entry).unwrap();
        assert!(line.starts_with(&format!("{{\"timestamp\":7,\"type\":\"{ty}\"")));
        let back: JournalEntry = serde_json::from_str(&line).unwrap();
        assert_eq!(back, entry);
        seen.push(std::mem::discriminant(&record));
    }
    assert!(rewritten.is_empty(), "{rewritten:#?}");
    // Distinct names, and as many distinct variants as names (the five hook records share a
    // payload but not a variant).
    let mut names = Record::KNOWN_TYPES.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Record::KNOWN_TYPES.len());
    seen.dedup();
    assert_eq!(seen.len(), Record::KNOWN_TYPES.len());
    assert!(Record::KNOWN_TYPES.contains(&"model_retry"));
}

#[test]
fn entries_round_trip_with_timestamp_and_type_first() {
    let records = vec![
        Record::RunStart(RunStart {
            prompt: "hello".into(),
            project_support: Some(ProjectSupportSummary {
                root: "/p".into(),
                ..Default::default()
            }),
            attempt: Some(1),
            ..RunStart::default()
        }),
        Record::TokenUsage(TokenUsage {
            role: Some(Role::Backend),
            phase: Some(Phase::Support),
            brain_id: Some("brain".into()),
            model_id: Some("local/smollm2".into()),
            provider: Some("local".into()),
            agent_session_id: None,
            task_id: None,
            parent_id: None,
            turn_id: Some("t:0:0".into()),
            attempt: Some(1),
            usage: Usage::new(1, 2, 3, 4),
            cost_micro_usd: Some(42),
            duration_ms: Some(1_250),
        }),
        Record::Warning(Warning {
            message: "w".into(),
        }),
    ];
    for record in records {
        let entry = JournalEntry::new(1_700_000_000_000, record.clone());
        let line = serde_json::to_string(&entry).unwrap();
        assert!(
            line.starts_with(&format!(
                "{{\"timestamp\":1700000000000,\"type\":\"{}\"",
                record.type_name()
            )),
            "{line}"
        );
        let back: JournalEntry = serde_json::from_str(&line).unwrap();
        assert_eq!(back, entry);
    }
}

#[test]
fn unknown_types_are_kept_verbatim() {
    let line = r#"{"timestamp":5,"type":"future_thing","nested":{"a":[1,2]},"x":"y"}"#;
    let entry: JournalEntry = serde_json::from_str(line).unwrap();
    assert_eq!(entry.record.type_name(), "future_thing");
    assert!(matches!(entry.record, Record::Unknown(_)));
    assert!(!entry.record.is_malformed_known());
    assert_eq!(entry.record.parse_error(), None);
    assert_eq!(serde_json::to_string(&entry).unwrap(), line);
}

#[test]
fn known_type_with_bad_fields_is_kept_and_flagged() {
    let line = r#"{"timestamp":5,"type":"run_start","prompt":42}"#;
    let entry: JournalEntry = serde_json::from_str(line).unwrap();
    assert!(entry.record.is_malformed_known());
    assert_eq!(entry.record.type_name(), "run_start");
    let reason = entry.record.parse_error().unwrap();
    assert!(reason.contains("string"), "{reason}");
    assert_eq!(serde_json::to_string(&entry).unwrap(), line);
}

#[test]
fn a_packet_that_does_not_parse_keeps_the_whole_record() {
    // A worker_end whose result is not a WorkerResult (here: it claims the brain layer).
    let mut result = result_json();
    result["fromLayer"] = json!("brain");
    let line = json!({"timestamp": 1, "type": "worker_end", "phase": "support",
                      "worker": "qa", "result": result});
    let entry: JournalEntry = serde_json::from_value(line.clone()).unwrap();
    assert!(entry.record.is_malformed_known());
    let reason = entry.record.parse_error().unwrap();
    assert!(reason.contains("wrong context layer tag"), "{reason}");
    assert_eq!(serde_json::to_value(&entry).unwrap(), line);
}

#[test]
fn typed_packets_are_reachable() {
    let Some(value) = sample("worker_start") else {
        panic!("no sample");
    };
    let Record::WorkerStart(start) = serde_json::from_value(value).unwrap() else {
        panic!("not a worker_start");
    };
    let handoff = start.handoff.unwrap();
    assert_eq!(handoff.role(), Role::Qa);
    assert_eq!(handoff.task.id.as_str(), "t1");

    let Some(value) = sample("run_end") else {
        panic!("no sample");
    };
    let Record::RunEnd(end) = serde_json::from_value(value).unwrap() else {
        panic!("not a run_end");
    };
    let results = end.worker_results.unwrap();
    assert_eq!(results[0].display_summary(), Some("done"));
    assert!(!results[0].is_failed());
}

#[test]
fn lines_without_a_type_are_errors() {
    assert!(serde_json::from_str::<JournalEntry>(r#"{"timestamp":5}"#).is_err());
    assert!(serde_json::from_str::<JournalEntry>(r#"{"timestamp":"x","type":"a"}"#).is_err());
    assert!(serde_json::from_str::<JournalEntry>("[1]").is_err());
}

#[test]
fn durability_points_are_run_end_error_and_handoff() {
    let durable = |ty: &str| -> bool {
        let record: Record = serde_json::from_value(sample(ty).unwrap()).unwrap();
        record.is_durability_point()
    };
    assert!(!durable("run_start"));
    assert!(durable("run_end"));
    assert!(durable("run_error"));
    assert!(durable("handoff"));
    assert!(!durable("worker_end"));
}

/// A `tool_approval_decision` line as the runtime writes it for `FOO=1 /usr/bin/git push`
/// (the evaluation is `braincode permissions check --json`'s, byte for byte).
const DENIED_PUSH_LINE: &str = concat!(
    r#"{"timestamp":1700000000000,"type":"tool_approval_decision","toolCallId":"c1","#,
    r#""toolName":"exec_command","decision":"denied","approver":"permission_policy","#,
    r#""phase":"primary","role":"backend","agentSessionId":"t1-1","#,
    r#""reason":"Permission policy denied tool call: command git push matched git push: "#,
    r#"pushing publishes work outside this machine","#,
    r#""argsSummary":{"cmd":"FOO=1 /usr/bin/git push"},"#,
    r#""permissionPolicy":{"decision":"deny","matches":[{"kind":"command","#,
    r#""target":"git push","pattern":"git push","action":"deny","#,
    r#""reason":"pushing publishes work outside this machine","reviewRequired":false,"#,
    r#""defaultRule":true}],"reviewRequired":false,"paths":[],"commands":[{"#,
    r#""origin":"command","text":"FOO=1 /usr/bin/git push","subcommands":["git push"],"#,
    r#""writes":[],"uncertain":[]}],"notes":[],"unanalysable":[],"protected":[]}}"#
);

#[test]
fn permission_policy_round_trips_typed() {
    let entry: JournalEntry = serde_json::from_str(DENIED_PUSH_LINE).unwrap();
    let Record::ToolApprovalDecision(decision) = &entry.record else {
        panic!("not typed: {:?}", entry.record);
    };
    let policy = decision.permission_policy.as_ref().unwrap();
    assert!(policy.is_denied());
    assert_eq!(policy.decision, Some(crate::PolicyDecision::Deny));
    assert_eq!(policy.matches[0].kind, crate::TargetKind::Command);
    assert_eq!(policy.matches[0].target, "git push");
    assert!(policy.matches[0].default_rule);
    assert_eq!(policy.commands[0].subcommands, ["git push"]);
    assert!(!policy.is_unanalysable() && !policy.is_protected());
    assert_eq!(serde_json::to_string(&entry).unwrap(), DENIED_PUSH_LINE);
}

#[test]
fn permission_policy_written_before_later_fields_reads_typed() {
    // Before the policy reported unanalysable and protected reasons.
    let mut line: Value = serde_json::from_str(DENIED_PUSH_LINE).unwrap();
    let policy = line["permissionPolicy"].as_object_mut().unwrap();
    policy.shift_remove("unanalysable");
    policy.shift_remove("protected");
    let entry: JournalEntry = serde_json::from_value(line).unwrap();
    let Record::ToolApprovalDecision(decision) = entry.record else {
        panic!("not typed");
    };
    let policy = decision.permission_policy.unwrap();
    assert!(policy.is_denied());
    assert!(policy.unanalysable.is_empty() && policy.protected.is_empty());
}

#[test]
fn permission_policy_of_another_shape_keeps_the_line_verbatim() {
    let shapes = [
        json!("deny: git push"),
        json!({"decision": "block", "matches": []}),
        json!({"decision": "deny", "matches": [{"kind": "network", "target": "x",
                                                 "pattern": "x", "action": "deny"}]}),
        json!({"decision": "ask", "matches": "git push"}),
    ];
    for shape in shapes {
        let mut line: Value = serde_json::from_str(DENIED_PUSH_LINE).unwrap();
        line["permissionPolicy"] = shape.clone();
        let text = serde_json::to_string(&line).unwrap();
        let entry: JournalEntry = serde_json::from_str(&text).unwrap();
        assert!(matches!(entry.record, Record::Unknown(_)), "{shape}");
        assert!(entry.record.is_malformed_known(), "{shape}");
        assert_eq!(entry.record.type_name(), "tool_approval_decision");
        assert!(entry.record.parse_error().is_some(), "{shape}");
        assert_eq!(serde_json::to_string(&entry).unwrap(), text, "{shape}");
    }
}
