//! `braincode bench panel`: how fast the control panel starts and how heavy its pages are.
//!
//! Start: the time `braincode_server::start` takes to bind and serve (in-process), and the
//! time from spawning `braincode config --no-open` to the line with its address (the
//! process as a user starts it). Weight: every page's HTML plus the embedded stylesheet
//! and script, on a home with `--sessions` realistic sessions (one of them journal-sized
//! `--journal-kb`), so the sessions, journal and usage pages carry real content.

use std::io::{BufRead, BufReader};
use std::process::{ExitCode, Stdio};
use std::time::Instant;

use anyhow::Context;
use braincode_config::Home;
use braincode_server::{ServeOptions, start};
use serde_json::json;

use super::journal_gen::write_journal;
use super::median;

/// Options of `braincode bench panel`.
#[derive(Debug, clap::Args)]
pub struct PanelBenchArgs {
    /// Starts to time (each way).
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    /// Sessions in the home the pages are weighed on.
    #[arg(long, default_value_t = 200)]
    pub sessions: u64,
    /// Size of the journal whose page is weighed, in KB.
    #[arg(long, default_value_t = 2_000)]
    pub journal_kb: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

const PAGES: [&str; 9] = [
    "/models",
    "/brains",
    "/brains/brain",
    "/routing",
    "/permissions",
    "/mcp",
    "/sessions",
    "/usage?by=day",
    "/usage?by=model",
];

/// Runs the benchmark.
pub fn execute(args: &PanelBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let dir = tempfile::tempdir().context("a temporary home")?;
    let home = Home::at(dir.path().join("home"));
    let sessions = home.sessions_dir();
    std::fs::create_dir_all(&sessions)?;
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project)?;
    let big = sessions.join("20260102-000000-big000.jsonl");
    write_journal(&big, args.journal_kb * 1_000)?;
    let small = sessions.join("20260101-000000-s00000.jsonl");
    write_journal(&small, 20_000)?;
    for n in 1..args.sessions {
        std::fs::copy(
            &small,
            sessions.join(format!("20260101-000000-s{n:05}.jsonl")),
        )?;
    }

    let runtime = super::super::tokio_runtime()?;
    let options = ServeOptions {
        home: home.clone(),
        project_root: project.clone(),
        port: 0,
        token: None,
    };
    let (mut in_process, weights) = runtime.block_on(async {
        let mut times = Vec::with_capacity(args.runs);
        for _ in 0..args.runs {
            let started = Instant::now();
            let panel = start(options.clone()).await?;
            times.push(started.elapsed().as_secs_f64() * 1e3);
            panel.shutdown().await?;
        }
        let panel = start(options.clone()).await?;
        let weights = weigh(&panel).await?;
        panel.shutdown().await?;
        anyhow::Ok((times, weights))
    })?;

    let exe = std::env::current_exe().context("the braincode binary")?;
    let mut process = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let started = Instant::now();
        let mut child = std::process::Command::new(&exe)
            .args(["config", "--no-open"])
            .current_dir(&project)
            .env("BRAINCODE_HOME", home.root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout).read_line(&mut line)?;
        }
        process.push(started.elapsed().as_secs_f64() * 1e3);
        let _ = child.kill();
        let _ = child.wait();
        anyhow::ensure!(
            line.contains("http://127.0.0.1:"),
            "no address printed: {line:?}"
        );
    }
    let in_process_ms = median(&mut in_process);
    let process_ms = median(&mut process);
    let heaviest = weights
        .iter()
        .max_by_key(|(_, bytes)| *bytes)
        .cloned()
        .unwrap_or_default();
    if args.json {
        let pages: serde_json::Map<String, serde_json::Value> = weights
            .iter()
            .map(|(page, bytes)| (page.clone(), json!(bytes)))
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "startInProcessMsMedian": in_process_ms,
                "startProcessMsMedian": process_ms,
                "runs": args.runs,
                "pageBytes": pages,
                "heaviestPage": heaviest.0,
                "heaviestPageBytes": heaviest.1,
            }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "panel start: {in_process_ms:.2} ms in-process (bind + serve), {process_ms:.1} ms from spawning `braincode config` to its address (medians of {} runs)",
        args.runs
    );
    println!(
        "page weight (HTML + the embedded CSS and JS, uncompressed), {} sessions, journal page of a {} KB journal:",
        args.sessions, args.journal_kb
    );
    for (page, bytes) in &weights {
        println!("  {page:<28} {:>8.1} KB", *bytes as f64 / 1000.0);
    }
    println!(
        "heaviest: {} at {:.1} KB",
        heaviest.0,
        heaviest.1 as f64 / 1000.0
    );
    Ok(ExitCode::SUCCESS)
}

/// Fetches each page with the token and adds the assets every page loads.
async fn weigh(panel: &braincode_server::Panel) -> anyhow::Result<Vec<(String, usize)>> {
    let client = reqwest::Client::new();
    let get = |path: String| {
        let request = client
            .get(format!("{}{path}", panel.base_url()))
            .bearer_auth(&panel.token);
        async move {
            let response = request.send().await?;
            anyhow::ensure!(
                response.status().is_success(),
                "{path}: {}",
                response.status()
            );
            anyhow::Ok(response.bytes().await?.len())
        }
    };
    let assets = get("/assets/app.css".into()).await? + get("/assets/app.js".into()).await?;
    let mut pages: Vec<String> = PAGES.iter().map(|p| (*p).to_string()).collect();
    pages.push("/sessions/20260102-000000-big000".to_string());
    let mut out = Vec::new();
    for page in pages {
        let bytes = get(page.clone()).await?;
        out.push((page, bytes + assets));
    }
    Ok(out)
}
