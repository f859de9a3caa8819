//! `braincode bench tokens`: what context isolation saves in input tokens and request bytes.
//!
//! One scripted multi-worker task runs in process (router; librarian → security → dba and
//! librarian → qa as support; the backend primary; review), every agent with tools (all but the
//! router and dba, which Braincode gives none) exploring a generated repository of a few
//! dozen 2–10 KB source files with `list_files`, `search_files` and `read_file` before
//! answering. Every request the model receives is captured, and two
//! context strategies are counted from them:
//!
//! * **strict isolation**: the requests as Braincode sent them (what the model received);
//! * **shared transcript**: the counterfactual of one shared conversation, as single-transcript
//!   agents work. The captured requests are grouped into agent sessions (a request continues a
//!   session when its system prompt is the same and the session's last messages are a prefix
//!   of its own); in order of first request, each agent's requests are prefixed with the final
//!   conversation (last request's messages + the reply) of every earlier agent.
//!
//! Input tokens are estimated as characters / 4 of the system prompt, messages, tool schemas
//! and reply schema; the scripted model reports that same estimate as its usage. Request bytes
//! are the serialized request.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use braincode_config::Home;
use braincode_llm::{ChatMessage, ChatRequest};
use braincode_protocol::FinalStatus;
use braincode_runtime::{JournalTarget, RunServices, run};
use braincode_scripted::CallKind;
use serde::Serialize;

use super::overhead::{SameClient, fixture, request};
use super::tokens_cache;
use super::tokens_model::{Captured, TokensModel, asker_and_role, request_chars, tokens_of};
use super::tokens_repo::populate;

/// The isolated/shared input-token ratio the design aims for.
const GOAL_RATIO: f64 = 0.33;

const METHOD: &str = "shared transcript: computed from the same run's requests, each agent \
prefixed with every earlier agent's transcript (its prompts, tool calls, tool outputs and \
answer), agents taken in the order of their first request";

const TOKEN_METHOD: &str = "input tokens estimated as chars/4 of system prompt + messages + \
tool schemas + reply schema (the scripted model reports this estimate as its usage); request \
bytes = the serialized request; neither strategy counts transcript compaction; provider prompt \
caching is counted separately, over a second identical run";

/// The `--help` text of `braincode bench tokens` (set on its subcommand).
pub(super) const LONG_ABOUT: &str = "Input tokens and request bytes of one scripted multi-worker task (router, \
4 support workers with dependencies, primary, review; every agent Braincode gives tools to \
(all but the router and dba) lists, searches and reads files of a generated repository before \
answering), counted for two context strategies:\n\n\
- strict isolation: the requests Braincode actually sent (each worker gets a compact handoff \
and its declared upstream results, never a transcript);\n\
- shared transcript: the counterfactual of one shared conversation, computed from the same \
run's requests, each agent prefixed with every earlier agent's transcript (its prompts, tool \
calls, tool outputs and answer).\n\n\
Input tokens are chars/4 of system prompt, messages and schemas (the scripted model reports \
that estimate as usage); request bytes are the serialized requests. Neither strategy counts \
provider prompt caching or transcript compaction. The goal is an isolated/shared ratio of at \
most 0.33.";

/// Arguments of `braincode bench tokens`.
#[derive(Debug, clap::Args)]
pub struct TokensBenchArgs {
    /// Runs of the task; each figure is the median over the runs.
    #[arg(long, default_value_t = 1)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One agent session of the run.
struct Agent {
    label: String,
    /// Indices into the captured requests, in order.
    requests: Vec<usize>,
}

/// The figures of one strategy.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Strategy {
    strategy: &'static str,
    requests: usize,
    input_tokens: u64,
    request_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentFigures {
    agent: String,
    requests: usize,
    isolated_input_tokens: u64,
    shared_input_tokens: u64,
}

/// The figures of one run.
struct RunFigures {
    isolated: Strategy,
    shared: Strategy,
    agents: Vec<AgentFigures>,
    tool_calls: u64,
    reported_input_tokens: u64,
    /// The run's requests, by agent (label, requests in order).
    captured: Vec<(String, Vec<Captured>)>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    runs: usize,
    method: &'static str,
    token_method: &'static str,
    repo_files: usize,
    repo_source_bytes: usize,
    agents: usize,
    tool_calls: u64,
    strategies: Vec<Strategy>,
    ratio_input_tokens: f64,
    ratio_request_bytes: f64,
    goal_ratio: f64,
    goal_met: bool,
    runtime_reported_input_tokens: u64,
    per_agent: Vec<AgentFigures>,
    prompt_cache: tokens_cache::CacheFigures,
}

/// Runs the benchmark.
pub fn execute(args: TokensBenchArgs) -> anyhow::Result<ExitCode> {
    super::super::tokio_runtime()?.block_on(bench(args))
}

async fn bench(args: TokensBenchArgs) -> anyhow::Result<ExitCode> {
    let runs = args.runs.max(1);
    let (_dir, home, repo) = fixture("http://127.0.0.1:9/v1")?;
    let (repo_files, repo_source_bytes) = populate(&repo)?;
    // The prompt-cache figures need a second identical run, whatever `--runs` says.
    let mut all = Vec::with_capacity(runs.max(2));
    for _ in 0..runs.max(2) {
        all.push(one_run(&home, &repo).await?);
    }
    let prompt_cache = tokens_cache::figures(&grouped(&all[0]), &grouped(&all[1]));
    all.truncate(runs);
    let med = |pick: &dyn Fn(&RunFigures) -> u64| -> u64 {
        let mut values: Vec<u64> = all.iter().map(pick).collect();
        values.sort_unstable();
        values[values.len() / 2]
    };
    let isolated = Strategy {
        strategy: "strict_isolation",
        requests: all[0].isolated.requests,
        input_tokens: med(&|r| r.isolated.input_tokens),
        request_bytes: med(&|r| r.isolated.request_bytes),
    };
    let shared = Strategy {
        strategy: "shared_transcript",
        requests: all[0].shared.requests,
        input_tokens: med(&|r| r.shared.input_tokens),
        request_bytes: med(&|r| r.shared.request_bytes),
    };
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let ratio_input_tokens = ratio(isolated.input_tokens, shared.input_tokens);
    let last = all
        .pop()
        .ok_or_else(|| anyhow::anyhow!("no run was made"))?;
    let figures = Figures {
        runs,
        method: METHOD,
        token_method: TOKEN_METHOD,
        repo_files,
        repo_source_bytes,
        agents: last.agents.len(),
        tool_calls: last.tool_calls,
        ratio_input_tokens,
        ratio_request_bytes: ratio(isolated.request_bytes, shared.request_bytes),
        goal_ratio: GOAL_RATIO,
        goal_met: ratio_input_tokens <= GOAL_RATIO,
        runtime_reported_input_tokens: last.reported_input_tokens,
        strategies: vec![isolated, shared],
        per_agent: last.agents,
        prompt_cache,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        print_table(&figures);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(f: &Figures) {
    println!(
        "braincode bench tokens — router + 4 support workers (with dependencies) + primary + review"
    );
    println!(
        "  scripted instant model; {} agents, {} tool calls over a generated repo of {} files ({:.0} KB of source); {} run(s), medians",
        f.agents,
        f.tool_calls,
        f.repo_files,
        f.repo_source_bytes as f64 / 1024.0,
        f.runs
    );
    println!();
    println!(
        "  {:<20} {:>9} {:>14} {:>15}",
        "strategy", "requests", "input tokens", "request bytes"
    );
    for s in &f.strategies {
        println!(
            "  {:<20} {:>9} {:>14} {:>15}",
            s.strategy, s.requests, s.input_tokens, s.request_bytes
        );
    }
    println!();
    println!(
        "  isolated / shared: {:.3}× input tokens, {:.3}× request bytes — goal ≤ {:.2}×: {}",
        f.ratio_input_tokens,
        f.ratio_request_bytes,
        f.goal_ratio,
        if f.goal_met { "met" } else { "not met" }
    );
    println!();
    println!("  per agent (last run):");
    println!(
        "    {:<22} {:>9} {:>16} {:>16}",
        "agent", "requests", "isolated tokens", "shared tokens"
    );
    for a in &f.per_agent {
        println!(
            "    {:<22} {:>9} {:>16} {:>16}",
            a.agent, a.requests, a.isolated_input_tokens, a.shared_input_tokens
        );
    }
    println!();
    println!("  method: {}.", f.method);
    println!("  tokens: {}.", f.token_method);
    println!(
        "  the runtime's own tally of the usage the model reported: {} input tokens.",
        f.runtime_reported_input_tokens
    );
    tokens_cache::print(&f.prompt_cache);
}

/// One run of the task; its requests counted both ways.
async fn one_run(home: &Path, repo: &Path) -> anyhow::Result<RunFigures> {
    let model = Arc::new(TokensModel::default());
    let mut services = RunServices::new(Home::at(home));
    services.client_override = Some(Arc::new(SameClient(model.clone())));
    services.journal = JournalTarget::Disabled;
    let report = run(request(repo), services).await;
    anyhow::ensure!(
        report.status == FinalStatus::Approved,
        "the bench run ended {}: {}",
        report.status.as_str(),
        report.error.unwrap_or_default()
    );
    let captured = model
        .captured
        .lock()
        .map_err(|_| anyhow::anyhow!("the scripted model's log is poisoned"))?
        .clone();
    let agents = sessions(&captured);
    let mut isolated = Strategy {
        strategy: "strict_isolation",
        ..Strategy::default()
    };
    let mut shared = Strategy {
        strategy: "shared_transcript",
        ..Strategy::default()
    };
    let mut per_agent = Vec::with_capacity(agents.len());
    let mut transcript: Vec<ChatMessage> = Vec::new();
    for agent in &agents {
        let mut figures = AgentFigures {
            agent: agent.label.clone(),
            requests: agent.requests.len(),
            isolated_input_tokens: 0,
            shared_input_tokens: 0,
        };
        for &i in &agent.requests {
            let own = &captured[i].request;
            let (tokens, bytes) = measure(own)?;
            isolated.requests += 1;
            isolated.input_tokens += tokens;
            isolated.request_bytes += bytes;
            figures.isolated_input_tokens += tokens;

            let mut counterfactual = own.clone();
            counterfactual.messages = transcript.iter().chain(&own.messages).cloned().collect();
            let (tokens, bytes) = measure(&counterfactual)?;
            shared.requests += 1;
            shared.input_tokens += tokens;
            shared.request_bytes += bytes;
            figures.shared_input_tokens += tokens;
        }
        // This agent's final conversation joins the shared transcript of the later ones.
        if let Some(&last) = agent.requests.last() {
            transcript.extend(captured[last].request.messages.iter().cloned());
            transcript.push(captured[last].reply.clone());
        }
        per_agent.push(figures);
    }
    let by_agent = agents
        .iter()
        .map(|agent| {
            let requests = agent
                .requests
                .iter()
                .map(|&i| captured[i].clone())
                .collect();
            (agent.label.clone(), requests)
        })
        .collect();
    Ok(RunFigures {
        captured: by_agent,
        isolated,
        shared,
        agents: per_agent,
        tool_calls: report.metrics.as_ref().map_or(0, |m| m.tool_calls.total),
        reported_input_tokens: report.metrics.as_ref().map_or(0, |m| m.tokens.total.input),
    })
}

/// (estimated input tokens, serialized bytes) of a request.
fn measure(request: &ChatRequest) -> anyhow::Result<(u64, u64)> {
    let bytes = serde_json::to_vec(request)?.len() as u64;
    Ok((tokens_of(request_chars(request)), bytes))
}

/// Groups the captured requests into agent sessions, in order of their first request: a
/// request continues the session whose last request has the same system prompt and whose
/// messages are a prefix of its own.
fn sessions(captured: &[Captured]) -> Vec<Agent> {
    let mut agents: Vec<Agent> = Vec::new();
    for (i, c) in captured.iter().enumerate() {
        let continues = agents.iter_mut().rev().find(|agent| {
            agent.requests.last().is_some_and(|&last| {
                let before = &captured[last].request;
                before.system == c.request.system
                    && before.messages.len() < c.request.messages.len()
                    && c.request.messages.starts_with(&before.messages)
            })
        });
        match continues {
            Some(agent) => agent.requests.push(i),
            None => agents.push(Agent {
                label: label(&c.request),
                requests: vec![i],
            }),
        }
    }
    agents
}

/// "router", "librarian (support)", "backend (primary)", "review".
fn label(request: &ChatRequest) -> String {
    let (who, role) = asker_and_role(request);
    let role = role.map_or("?", |r| r.as_str());
    match who {
        CallKind::Router => "router".to_string(),
        CallKind::Support => format!("{role} (support)"),
        CallKind::Primary => format!("{role} (primary)"),
        CallKind::Review => format!("{role} (review)"),
    }
}

/// A run's requests by agent, borrowed.
fn grouped(run: &RunFigures) -> Vec<(String, Vec<&Captured>)> {
    run.captured
        .iter()
        .map(|(label, requests)| (label.clone(), requests.iter().collect()))
        .collect()
}
