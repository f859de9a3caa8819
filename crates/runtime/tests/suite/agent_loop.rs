//! The agent loop driven by the scripted model: every tool call gets exactly one answer,
//! whatever the call or the tool does, and the loop never panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use braincode_llm::ChatMessage;
use braincode_protocol::{AgentRef, Phase, Record, Role, RunEvent, ThinkingLevel, ToolCallOrigin};
use braincode_runtime::{AgentError, AgentServices, AgentSetup, OpenGate, ToolStats, run_agent};
use braincode_runtime::{MemoryJournal, RunSink};
use braincode_test_support::{Reply, Script, ScriptedModel, TempRepo};
use braincode_tools::{
    ExecLimits, ExecSessions, SharedTool, Tool, ToolContext, ToolDefinition, ToolMode, ToolOutput,
    ToolPermission, ToolRisk, ToolsConfig, builtin_tools,
};
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

fn definition(name: &str, permission: ToolPermission) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("test tool {name}"),
        parameters: json!({"type": "object"}),
        permission,
        risk: ToolRisk::Low,
    }
}

/// Sleeps far longer than any test timeout.
struct Hangs(ToolDefinition);
#[async_trait]
impl Tool for Hangs {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    async fn call(&self, _arguments: Value, _context: &ToolContext) -> ToolOutput {
        tokio::time::sleep(Duration::from_secs(3_600)).await;
        ToolOutput::ok("never")
    }
}

/// Panics: a bug in a tool must not take the loop down.
struct Panics(ToolDefinition);
#[async_trait]
impl Tool for Panics {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    async fn call(&self, _arguments: Value, _context: &ToolContext) -> ToolOutput {
        panic!("tool bug");
    }
}

/// Meets another call at a barrier: succeeds only if two calls run at the same time.
struct Meets(ToolDefinition, Arc<Barrier>);
#[async_trait]
impl Tool for Meets {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    async fn call(&self, _arguments: Value, _context: &ToolContext) -> ToolOutput {
        match tokio::time::timeout(Duration::from_secs(20), self.1.wait()).await {
            Ok(_) => ToolOutput::ok("met"),
            Err(_) => ToolOutput::error("ran alone"),
        }
    }
}

/// Counts how many calls run at once.
struct Counts(ToolDefinition, Arc<AtomicUsize>, Arc<AtomicUsize>);
#[async_trait]
impl Tool for Counts {
    fn definition(&self) -> &ToolDefinition {
        &self.0
    }
    async fn call(&self, _arguments: Value, _context: &ToolContext) -> ToolOutput {
        let now = self.1.fetch_add(1, Ordering::SeqCst) + 1;
        self.2.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.1.fetch_sub(1, Ordering::SeqCst);
        ToolOutput::ok("counted")
    }
}

struct Harness {
    setup: AgentSetup,
    services: AgentServices,
    journal: MemoryJournal,
    events: Arc<std::sync::Mutex<Vec<RunEvent>>>,
}

struct Collect(Arc<std::sync::Mutex<Vec<RunEvent>>>);
impl braincode_runtime::EventSubscriber for Collect {
    fn on_event(&self, event: &RunEvent) {
        self.0.lock().unwrap().push(event.clone());
    }
}

fn harness(
    model: &ScriptedModel,
    tools: Vec<SharedTool>,
    root: &std::path::Path,
    cancel: CancellationToken,
) -> Harness {
    let journal = MemoryJournal::default();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = RunSink::new(
        "test",
        Some(Box::new(journal.clone())),
        vec![Arc::new(Collect(events.clone()))],
    );
    let setup = AgentSetup {
        agent: AgentRef {
            role: Role::Backend,
            phase: Phase::Primary,
            context_id: "ctx".into(),
            model: Some("scripted".into()),
        },
        origin: ToolCallOrigin {
            phase: Some(Phase::Primary),
            role: Some(Role::Backend),
            agent_session_id: Some("ctx-1".into()),
            ..ToolCallOrigin::default()
        },
        model_id: "scripted".into(),
        provider: "test".into(),
        pricing: None,
        system_prompt: "You are a test agent.".into(),
        tools,
        max_turns: 8,
        thinking: ThinkingLevel::Off,
        max_tokens: None,
        temperature: None,
        response_schema: None,
        tool_timeout: Duration::from_millis(400),
        stream_text: true,
        vision: false,
        resolver: None,
        compaction: None,
        cache_key: None,
    };
    let services = AgentServices {
        client: model.client(),
        gate: Arc::new(OpenGate),
        cache: None,
        sink,
        tool_context: ToolContext {
            project_root: root.to_path_buf(),
            cancel,
            sandbox: None,
            editor: None,
            lazy: None,
        },
        stats: Arc::new(ToolStats::default()),
        tape: None,
        ledger: None,
        hooks: None,
        protected: None,
    };
    Harness {
        setup,
        services,
        journal,
        events,
    }
}

fn tool_answers(message_list: &[ChatMessage]) -> Vec<(String, String, bool)> {
    message_list
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

fn call_ids(message_list: &[ChatMessage]) -> Vec<String> {
    message_list
        .iter()
        .flat_map(|m| match m {
            ChatMessage::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.id.clone()).collect()
            }
            _ => Vec::new(),
        })
        .collect()
}

#[tokio::test]
async fn every_call_gets_one_answer_whatever_goes_wrong() {
    let repo = TempRepo::new();
    repo.write("notes.txt", "hello from the repo\n");
    repo.commit("notes");
    let sessions = Arc::new(ExecSessions::new(ExecLimits::default()));
    let mut tools = builtin_tools(ToolMode::ReadOnly, &ToolsConfig::default(), sessions);
    tools.push(Arc::new(Hangs(definition("hang", ToolPermission::Read))));
    tools.push(Arc::new(Panics(definition(
        "explode",
        ToolPermission::Write,
    ))));
    let model = ScriptedModel::new(Script::replies([
        Reply::tool_calls([
            ("read_file", json!({"path": "notes.txt"})),
            ("no_such_tool", json!({})),
        ])
        .with_tool_call_raw("read_file", "{\"path\": \"notes"),
        Reply::tool_call("hang", json!({})).with_tool_call("explode", json!({})),
        Reply::text("all done"),
    ]));
    let h = harness(&model, tools, repo.path(), CancellationToken::new());
    let outcome = run_agent(&h.setup, &h.services, vec![ChatMessage::user_text("go")])
        .await
        .unwrap();
    assert_eq!(outcome.text, "all done");
    assert_eq!(outcome.tool_calls, 5);
    assert_eq!(outcome.failed_tool_calls, 4);

    let ids = call_ids(&outcome.messages);
    let answers = tool_answers(&outcome.messages);
    assert_eq!(
        ids,
        answers.iter().map(|a| a.0.clone()).collect::<Vec<_>>(),
        "one answer per call id, in order"
    );
    assert!(answers[0].1.contains("hello from the repo") && !answers[0].2);
    assert!(
        answers[1].1.contains("unknown tool") && answers[1].1.contains("read_file") && answers[1].2
    );
    assert!(answers[2].1.contains("invalid arguments") && answers[2].2);
    assert!(
        answers[3].1.contains("did not finish") && answers[3].2,
        "{}",
        answers[3].1
    );
    assert!(answers[4].1.contains("crashed") && answers[4].2);

    // The model saw those answers on its next turn.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_answers(&requests[1].messages).len(), 3);
    assert_eq!(tool_answers(&requests[2].messages).len(), 5);

    // Tool audit records: a start and an end for every executed call.
    let entries = h.journal.entries();
    let summaries = entries
        .iter()
        .filter(|e| matches!(e.record, Record::ToolExecutionSummary(_)))
        .count();
    assert_eq!(
        summaries,
        2 * 3,
        "read_file, hang and explode ran; the unknown and malformed calls did not"
    );
    let usage = entries
        .iter()
        .filter(|e| matches!(e.record, Record::TokenUsage(_)))
        .count();
    assert_eq!(usage, 3, "one token_usage record per assistant message");
    let streamed: String = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, "all done");
}

#[tokio::test]
async fn reads_run_in_parallel_and_writes_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let tools: Vec<SharedTool> = vec![
        Arc::new(Meets(definition("meet", ToolPermission::Read), barrier)),
        Arc::new(Counts(
            definition("write_thing", ToolPermission::Write),
            in_flight,
            peak.clone(),
        )),
    ];
    let model = ScriptedModel::new(Script::replies([
        Reply::tool_calls([("meet", json!({"n": 1})), ("meet", json!({"n": 2}))]),
        Reply::tool_calls([
            ("write_thing", json!({"n": 1})),
            ("write_thing", json!({"n": 2})),
            ("write_thing", json!({"n": 3})),
        ]),
        Reply::text("ok"),
    ]));
    let h = harness(&model, tools, dir.path(), CancellationToken::new());
    let mut setup = h.setup.clone();
    setup.tool_timeout = Duration::from_secs(30);
    let outcome = run_agent(&setup, &h.services, vec![ChatMessage::user_text("go")])
        .await
        .unwrap();
    let answers = tool_answers(&outcome.messages);
    assert_eq!(answers[0].1, "met");
    assert_eq!(
        answers[1].1, "met",
        "two read calls of one turn must run concurrently"
    );
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "writing tools must never overlap"
    );
    assert_eq!(answers.len(), 5);
}

#[tokio::test]
async fn turn_limit_forces_an_answer_without_tools() {
    let dir = tempfile::tempdir().unwrap();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let tools: Vec<SharedTool> = vec![Arc::new(Counts(
        definition("poke", ToolPermission::Read),
        in_flight,
        Arc::new(AtomicUsize::new(0)),
    ))];
    let model = ScriptedModel::new(Script::replies([
        Reply::tool_call("poke", json!({"i": 1})),
        Reply::tool_call("poke", json!({"i": 2})),
        Reply::text("summary after the limit"),
    ]));
    let h = harness(&model, tools, dir.path(), CancellationToken::new());
    let mut setup = h.setup.clone();
    setup.max_turns = 2;
    let outcome = run_agent(&setup, &h.services, vec![ChatMessage::user_text("go")])
        .await
        .unwrap();
    assert!(outcome.hit_turn_limit);
    assert_eq!(outcome.text, "summary after the limit");
    let last = model.requests().pop().unwrap();
    assert!(
        last.tools.is_empty(),
        "no tools are offered after the limit"
    );
}

#[tokio::test]
async fn model_errors_end_the_loop_with_a_classified_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(Script::replies([Reply::http_error(
        401,
        "{\"error\":{\"message\":\"bad key\"}}",
    )]));
    let h = harness(&model, Vec::new(), dir.path(), CancellationToken::new());
    let err = run_agent(&h.setup, &h.services, vec![ChatMessage::user_text("go")])
        .await
        .unwrap_err();
    match err {
        AgentError::Model(err) => assert_eq!(err.kind, braincode_llm::ErrorKind::Auth),
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[tokio::test]
async fn cancellation_stops_the_loop_and_kills_the_tool_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let sessions = Arc::new(ExecSessions::new(ExecLimits::default()));
    let tools = builtin_tools(ToolMode::All, &ToolsConfig::default(), sessions);
    let command = format!("sleep 60 & echo $! > {}; wait", pid_file.display());
    let model = ScriptedModel::new(Script::replies([Reply::tool_call(
        "shell",
        json!({"command": command}),
    )]));
    let cancel = CancellationToken::new();
    let h = harness(&model, tools, dir.path(), cancel.clone());
    let mut setup = h.setup.clone();
    setup.tool_timeout = Duration::from_secs(120);
    let watcher = {
        let pid_file = pid_file.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            for _ in 0..400 {
                if std::fs::read_to_string(&pid_file).is_ok_and(|s| !s.trim().is_empty()) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            cancel.cancel();
        })
    };
    let err = run_agent(&setup, &h.services, vec![ChatMessage::user_text("go")])
        .await
        .unwrap_err();
    watcher.await.unwrap();
    assert!(matches!(err, AgentError::Cancelled), "{err:?}");
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    let mut alive = true;
    for _ in 0..100 {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting for its (killed) parent to be reaped.
        if state.is_empty() || state.split_whitespace().nth(2) == Some("Z") {
            alive = false;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !alive,
        "the background child of the cancelled tool survived"
    );
}
