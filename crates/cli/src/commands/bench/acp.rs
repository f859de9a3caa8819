//! `braincode bench acp`: what an editor waits for from `braincode acp` (issue 36).
//!
//! A real `braincode acp` process (this executable) with a temporary home whose brain sends
//! every role to a scripted OpenAI-compatible model on loopback that answers at once (the
//! router plans a backend primary, the primary says hello). The bench speaks JSON-RPC lines on
//! the process's stdin/stdout as an editor does. Measured:
//! 1. from writing `session/prompt` to reading its first `session/update` (median, p90);
//! 2. from writing `session/prompt` to reading its response (the whole turn);
//! 3. the process's RSS after `initialize` and `session/new`, idle for a second, and again
//!    idle after the prompts.

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use braincode_protocol::Role;
use braincode_scripted::{CallKind, Reply, Script, ScriptedServer, router_decision_json};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use super::overhead::fixture;
use super::{median, status_kib};

/// Options of `braincode bench acp`.
#[derive(Debug, clap::Args)]
pub struct AcpBenchArgs {
    /// Prompts timed, one after the other in one session.
    #[arg(long, default_value_t = 20)]
    pub prompts: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Goal: median from `session/prompt` to the first `session/update`, in ms.
const FIRST_UPDATE_GOAL_MS: f64 = 15.0;
/// Goal: RSS of an idle `braincode acp`, in MB.
const IDLE_RSS_GOAL_MB: f64 = 25.0;
/// How long a reply may take before the bench gives up.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    prompts: usize,
    first_update_median_ms: f64,
    first_update_p90_ms: f64,
    turn_median_ms: f64,
    idle_rss_mb: f64,
    idle_rss_after_prompts_mb: f64,
    first_update_goal_ms: f64,
    idle_rss_goal_mb: f64,
}

/// Runs the benchmark.
pub fn execute(args: AcpBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.prompts > 0, "--prompts must be at least 1");
    super::super::tokio_runtime()?.block_on(bench(args))
}

/// The editor's side of the pipe.
struct Editor {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Editor {
    async fn send(&mut self, method: &str, params: Value) -> anyhow::Result<u64> {
        self.next_id += 1;
        let line =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(self.next_id)
    }

    async fn read(&mut self) -> anyhow::Result<Value> {
        let line = tokio::time::timeout(READ_TIMEOUT, self.lines.next_line())
            .await
            .context("braincode acp said nothing for a minute")??
            .context("braincode acp closed its stdout")?;
        serde_json::from_str(&line).with_context(|| format!("not JSON-RPC: {line}"))
    }

    /// Reads until the response to `id`; errors name what the agent answered.
    async fn response(&mut self, id: u64) -> anyhow::Result<Value> {
        loop {
            let message = self.read().await?;
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    bail!("request {id} failed: {error}");
                }
                return Ok(message["result"].clone());
            }
        }
    }
}

async fn bench(args: AcpBenchArgs) -> anyhow::Result<ExitCode> {
    let script = Script::from_fn(|request| match request.kind() {
        CallKind::Router => Reply::json(&router_decision_json(Role::Backend, &[])),
        CallKind::Primary | CallKind::Support => Reply::text("Hello."),
        CallKind::Review => Reply::json(&json!({"decision": "approved", "summary": "ok"})),
    });
    let server = ScriptedServer::bind(script)
        .await
        .context("cannot start the scripted model")?;
    let (_dir, home, repo) = fixture(&server.base_url())?;
    let exe = std::env::current_exe().context("cannot find the braincode executable")?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("acp")
        .current_dir(&repo)
        .env("BRAINCODE_HOME", &home)
        .env("BRAINCODE_MODEL_CACHE", home.join("no-model-cache"))
        .env("BRAINCODE_LOCAL_SERVERS", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    braincode_sandbox::die_with_parent(&mut command);
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let mut child = command.spawn().context("cannot start braincode acp")?;
    let pid = child.id().context("braincode acp exited at once")?;
    let mut editor = Editor {
        stdin: child.stdin.take().context("no stdin")?,
        lines: BufReader::new(child.stdout.take().context("no stdout")?).lines(),
        next_id: 0,
    };
    let id = editor
        .send(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await?;
    editor.response(id).await?;
    let id = editor
        .send("session/new", json!({"cwd": repo, "mcpServers": []}))
        .await?;
    let session = editor.response(id).await?["sessionId"].clone();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss = |pid: u32| {
        status_kib(&format!("/proc/{pid}/status"), "VmRSS:").unwrap_or(0) as f64 / 1024.0
    };
    let idle_rss = rss(pid);

    let mut first_update = Vec::with_capacity(args.prompts);
    let mut turns = Vec::with_capacity(args.prompts);
    for n in 0..args.prompts {
        let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": format!("Say hello ({n})")}]});
        let started = Instant::now();
        let id = editor.send("session/prompt", prompt).await?;
        let mut first = None;
        loop {
            let message = editor.read().await?;
            if first.is_none() && message["method"] == "session/update" {
                first = Some(started.elapsed());
            }
            if message["id"] == id {
                if let Some(error) = message.get("error") {
                    bail!("prompt {n} failed: {error}");
                }
                break;
            }
        }
        turns.push(started.elapsed().as_secs_f64() * 1000.0);
        first_update.push(
            first
                .context("a prompt was answered without any update")?
                .as_secs_f64()
                * 1000.0,
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_after = rss(pid);
    drop(editor);
    let _ = tokio::time::timeout(Duration::from_secs(15), child.wait()).await;

    let mut sorted = first_update.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted[((sorted.len() * 9).div_ceil(10)).saturating_sub(1)];
    let figures = Figures {
        prompts: args.prompts,
        first_update_median_ms: median(&mut first_update),
        first_update_p90_ms: p90,
        turn_median_ms: median(&mut turns),
        idle_rss_mb: idle_rss,
        idle_rss_after_prompts_mb: idle_after,
        first_update_goal_ms: FIRST_UPDATE_GOAL_MS,
        idle_rss_goal_mb: IDLE_RSS_GOAL_MB,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        let mark = |ok: bool| if ok { "ok" } else { "over the goal" };
        println!(
            "braincode acp, {} prompts to an instant model",
            figures.prompts
        );
        println!(
            "  prompt → first session/update: median {:.1} ms, p90 {:.1} ms (goal ≤ {FIRST_UPDATE_GOAL_MS} ms: {})",
            figures.first_update_median_ms,
            figures.first_update_p90_ms,
            mark(figures.first_update_median_ms <= FIRST_UPDATE_GOAL_MS)
        );
        println!(
            "  prompt → response (whole turn): median {:.1} ms",
            figures.turn_median_ms
        );
        println!(
            "  idle RSS: {:.1} MB after session/new (goal ≤ {IDLE_RSS_GOAL_MB} MB: {}), {:.1} MB idle after the prompts",
            figures.idle_rss_mb,
            mark(figures.idle_rss_mb <= IDLE_RSS_GOAL_MB),
            figures.idle_rss_after_prompts_mb
        );
    }
    Ok(ExitCode::SUCCESS)
}
