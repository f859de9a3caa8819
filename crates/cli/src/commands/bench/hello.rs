//! `braincode bench hello`: what a newcomer's first "Say hello" costs against a remote model:
//! the bytes of the request the model gets, the time from starting `braincode run` to that
//! request reaching the server, the whole run and the run process's peak RSS, each as a fresh
//! process on a fresh home and repository, against an instant OpenAI-compatible server on
//! loopback.

use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use braincode_scripted::{Matcher, Reply, Script, ScriptedServer};
use serde_json::json;

use super::overhead::fixture;
use super::{median, proc_status_kib, status_kib};

/// Options of `braincode bench hello`.
#[derive(Debug, clap::Args)]
pub struct HelloBenchArgs {
    /// Timed runs (after one warm-up run).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// The prompt.
    #[arg(long, default_value = "Say hello")]
    pub prompt: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn execute(args: &HelloBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    let runtime = super::super::tokio_runtime()?;
    runtime.block_on(bench(args))
}

async fn bench(args: &HelloBenchArgs) -> anyhow::Result<ExitCode> {
    // An instant model: every request is answered "Hello!" at once; the server keeps each
    // request's body size and arrival time.
    let script = Script::new().always(Matcher::Any, Reply::text("Hello!"));
    let server = ScriptedServer::bind(script).await?;
    let base_url = server.base_url();
    let exe = std::env::current_exe()?;
    let (mut bytes, mut first_ms, mut wall_ms, mut calls, mut rss_kib) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..=args.runs {
        let (_dir, home, repo) = fixture(&base_url)?;
        server.clear_requests();
        let started = Instant::now();
        let child = tokio::process::Command::new(&exe)
            .args(["run", &args.prompt])
            .current_dir(&repo)
            .env("BRAINCODE_HOME", &home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let (status, peak_kib) = wait_watching_peak_rss(child).await?;
        let wall = started.elapsed();
        anyhow::ensure!(status.success(), "the measured run failed ({status})");
        let requests = server.chat_requests();
        let Some((size, at)) = requests.first().map(|r| (r.body_len, r.received_at)) else {
            anyhow::bail!("the run sent the model no request");
        };
        if run == 0 {
            continue; // warm-up: page cache, first exec
        }
        bytes.push(size as f64);
        first_ms.push(at.duration_since(started).as_secs_f64() * 1e3);
        wall_ms.push(wall.as_secs_f64() * 1e3);
        calls.push(requests.len() as f64);
        rss_kib.push(peak_kib as f64);
    }
    drop(server);
    let rss_max_kib = rss_kib.iter().copied().fold(0.0, f64::max);
    let (bytes, first, wall, calls, rss) = (
        median(&mut bytes),
        median(&mut first_ms),
        median(&mut wall_ms),
        median(&mut calls),
        median(&mut rss_kib),
    );
    // This process only serves the model and starts the runs; its own peak is beside the
    // point, but said, so that it is never mistaken for the run's.
    let bench_kib = proc_status_kib("VmHWM:");
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "prompt": args.prompt, "runs": args.runs, "requestBytes": bytes,
                "modelCalls": calls, "firstRequestMs": first, "wallMs": wall,
                "runPeakRssKib": rss, "runPeakRssMaxKib": rss_max_kib,
                "benchProcessPeakRssKib": bench_kib,
            }))?
        );
    } else {
        println!(
            "{:?}: {bytes:.0} request bytes, {calls:.0} model call(s), first request {first:.1} ms after start, {wall:.1} ms end to end, peak RSS {:.1} MB (max {:.1} MB) (medians of {} fresh processes)",
            args.prompt,
            rss / 1024.0,
            rss_max_kib / 1024.0,
            args.runs
        );
        if let Some(kib) = bench_kib {
            println!(
                "  (this bench process, server side: peak RSS {:.1} MB)",
                kib as f64 / 1024.0
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How often a run's `VmHWM` is read while it runs.
const RSS_POLL: Duration = Duration::from_millis(1);

/// Waits for `child` to exit, reading its peak RSS (`VmHWM` of `/proc/<pid>/status`, in KiB)
/// every [`RSS_POLL`] meanwhile: the last reading is the peak just before it exited (what it
/// does in its last millisecond may be missed; 0 off Linux). Reading starts after `spawn`
/// returned, that is after the exec: before it, the status would be this process's.
async fn wait_watching_peak_rss(
    mut child: tokio::process::Child,
) -> anyhow::Result<(std::process::ExitStatus, u64)> {
    let path = child.id().map(|pid| format!("/proc/{pid}/status"));
    let mut peak = 0;
    let mut tick = tokio::time::interval(RSS_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            // `Child::wait` is cancel safe: a tick in between loses nothing.
            status = child.wait() => return Ok((status?, peak)),
            _ = tick.tick() => {
                if let Some(kib) = path.as_deref().and_then(|p| status_kib(p, "VmHWM:")) {
                    peak = peak.max(kib);
                }
            }
        }
    }
}
