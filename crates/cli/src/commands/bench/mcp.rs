//! `braincode bench mcp`: what MCP costs a run.
//!
//! 1. Time from run start to the first model request, with no MCP server and with one slow
//!    server (it takes `--slow-ms` to start) under the default `background` loading: the
//!    first request must not wait for it.
//! 2. With `-- <command…>` (any stdio MCP server, e.g. one with 10+ tools): the size of
//!    the primary's first request when its tools are offered lazily (`mcp_search` +
//!    `mcp_call`) and with every schema up front, and the median round trip of a tool call
//!    through the hub (`--tool`, `--args`).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_config::Home;
use braincode_runtime::{JournalTarget, RunServices, run};
use braincode_scripted::{CallKind, ScriptedModel};
use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::median;
use super::overhead::{SameClient, fixture, instant_script, request};

/// Arguments of `braincode bench mcp`.
#[derive(Debug, clap::Args)]
pub struct McpBenchArgs {
    /// Timed runs per measurement (after 2 warm-up runs).
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    /// How long the slow server takes to start, in milliseconds.
    #[arg(long, default_value_t = 3000)]
    pub slow_ms: u64,
    /// A stdio MCP server to measure request bytes and call latency with: its program and
    /// arguments, after `--` (`braincode bench mcp --calls 200 -- npx -y some-server`).
    #[arg(last = true, value_name = "COMMAND")]
    pub server: Vec<String>,
    /// The tool to call for the latency figure.
    #[arg(long, default_value = "echo")]
    pub tool: String,
    /// Its arguments (JSON object).
    #[arg(long, default_value = r#"{"text":"ping"}"#)]
    pub args: String,
    /// Tool calls timed for the latency figure (after 20 warm-up calls).
    #[arg(long, default_value_t = 500)]
    pub calls: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// One run; returns (ms to the first model request, bytes of the primary's first request).
async fn one_run(home: &Path, repo: &Path) -> anyhow::Result<(f64, usize)> {
    // The instant model; its log says when the first request came and how big the
    // primary's first request was.
    let model = ScriptedModel::new(instant_script(Duration::ZERO));
    let mut services = RunServices::new(Home::at(home));
    services.client_override = Some(Arc::new(SameClient(model.client())));
    services.journal = JournalTarget::Disabled;
    let started = Instant::now();
    let report = run(request(repo), services).await;
    anyhow::ensure!(
        report.error.is_none(),
        "the bench run failed: {}",
        report.error.unwrap_or_default()
    );
    let calls = model.calls();
    let first = calls.first().map_or(f64::NAN, |call| {
        (call.received_at - started).as_secs_f64() * 1000.0
    });
    let bytes = (calls.iter())
        .find(|call| call.kind() == CallKind::Primary)
        .map_or(0, |call| {
            serde_json::to_vec(&call.request).map_or(0, |b| b.len())
        });
    Ok((first, bytes))
}

fn write_mcp(home: &Path, servers: Value) -> anyhow::Result<()> {
    std::fs::write(
        home.join("mcp.json"),
        json!({ "mcpServers": servers }).to_string(),
    )?;
    Ok(())
}

/// Run start → first model request without MCP and with `slow` configured, the two
/// interleaved run by run so that drift in the machine's load hits both alike.
async fn first_request_ms(
    home: &Path,
    repo: &Path,
    runs: usize,
    slow: &Value,
) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let mcp = home.join("mcp.json");
    let (mut without, mut with) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for round in 0..runs + 2 {
        let _ = std::fs::remove_file(&mcp);
        let plain = one_run(home, repo).await?.0;
        write_mcp(home, slow.clone())?;
        let slowed = one_run(home, repo).await?.0;
        // The first two rounds warm up.
        if round >= 2 {
            without.push(plain);
            with.push(slowed);
        }
    }
    let _ = std::fs::remove_file(&mcp);
    Ok((without, with))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    runs: usize,
    first_request_without_mcp_median_ms: f64,
    slow_server_start_ms: u64,
    first_request_with_slow_background_server_median_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<ServerFigures>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ServerFigures {
    tools: usize,
    primary_request_bytes_lazy_schemas: usize,
    primary_request_bytes_all_schemas: usize,
    call_round_trip_median_us: f64,
    call_round_trip_p90_us: f64,
    calls: usize,
}

/// Runs the benchmark.
pub fn execute(args: McpBenchArgs) -> anyhow::Result<ExitCode> {
    super::super::tokio_runtime()?.block_on(bench(args))
}

async fn bench(args: McpBenchArgs) -> anyhow::Result<ExitCode> {
    let runs = args.runs.max(1);
    let (_dir, home, repo) = fixture("http://127.0.0.1:9/v1")?;
    let slow = format!("sleep {}", args.slow_ms as f64 / 1000.0);
    let slow = json!({"slow": {"command": "sh", "args": ["-c", slow], "sandbox": false}});
    let (mut without, mut with_slow) = first_request_ms(&home, &repo, runs, &slow).await?;
    let server = match args.server.split_first() {
        Some((program, rest)) => Some(server_figures(&home, &repo, program, rest, &args).await?),
        None => None,
    };
    let figures = Figures {
        runs,
        first_request_without_mcp_median_ms: median(&mut without),
        slow_server_start_ms: args.slow_ms,
        first_request_with_slow_background_server_median_ms: median(&mut with_slow),
        server,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("MCP benchmark ({runs} runs per figure, instant scripted model)");
    println!(
        "  run start → first model request, no MCP server:           {:.2} ms (median)",
        figures.first_request_without_mcp_median_ms
    );
    println!(
        "  run start → first model request, one {} ms background server: {:.2} ms (median)",
        figures.slow_server_start_ms, figures.first_request_with_slow_background_server_median_ms
    );
    if let Some(server) = &figures.server {
        println!("  server with {} tools:", server.tools);
        println!(
            "    primary's first request, lazy schemas (mcp_search + mcp_call): {} bytes",
            server.primary_request_bytes_lazy_schemas
        );
        println!(
            "    primary's first request, every schema up front:               {} bytes",
            server.primary_request_bytes_all_schemas
        );
        println!(
            "    tool call round trip through the hub: {:.0} µs median, {:.0} µs p90 ({} calls)",
            server.call_round_trip_median_us, server.call_round_trip_p90_us, server.calls
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn server_figures(
    home: &Path,
    repo: &Path,
    program: &str,
    rest: &[String],
    args: &McpBenchArgs,
) -> anyhow::Result<ServerFigures> {
    let entry = |schemas: &str| json!({"s": {"command": program, "args": rest, "sandbox": false, "loading": "eager", "schemas": schemas}});
    write_mcp(home, entry("lazy"))?;
    let (_, lazy) = one_run(home, repo).await?;
    write_mcp(home, entry("eager"))?;
    let (_, eager) = one_run(home, repo).await?;

    // Call latency straight through the hub.
    let spec = braincode_mcp::ServerSpec {
        name: "s".into(),
        endpoint: braincode_mcp::Endpoint::Stdio {
            command: Arc::new({
                let program = program.to_string();
                let rest = rest.to_vec();
                move || {
                    let mut command = std::process::Command::new(&program);
                    command.args(&rest);
                    command
                }
            }),
            display: program.to_string(),
        },
        startup_timeout: braincode_mcp::DEFAULT_STARTUP_TIMEOUT,
        call_timeout: braincode_mcp::DEFAULT_CALL_TIMEOUT,
    };
    let hub = braincode_mcp::Hub::new(vec![spec]);
    let state = hub
        .wait("s", Duration::from_secs(30))
        .await
        .ok_or_else(|| anyhow::anyhow!("the server did not start"))?;
    if let Some(err) = &state.error {
        anyhow::bail!("the server failed: {err}");
    }
    let arguments: serde_json::Map<String, Value> = serde_json::from_str(&args.args)
        .map_err(|err| anyhow::anyhow!("--args is not a JSON object: {err}"))?;
    let cancel = CancellationToken::new();
    for _ in 0..20 {
        hub.call("s", &args.tool, arguments.clone(), &cancel)
            .await?;
    }
    let mut times = Vec::with_capacity(args.calls);
    for _ in 0..args.calls.max(1) {
        let started = Instant::now();
        hub.call("s", &args.tool, arguments.clone(), &cancel)
            .await?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    hub.shutdown().await;
    times.sort_by(f64::total_cmp);
    let p90 = times[(times.len() * 9 / 10).min(times.len() - 1)];
    Ok(ServerFigures {
        tools: state.tools.len(),
        primary_request_bytes_lazy_schemas: lazy,
        primary_request_bytes_all_schemas: eager,
        call_round_trip_median_us: median(&mut times),
        call_round_trip_p90_us: p90,
        calls: args.calls.max(1),
    })
}
