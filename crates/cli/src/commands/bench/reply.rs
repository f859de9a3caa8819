//! `braincode bench reply`: peak memory of a run whose primary model streams a huge reply.
//!
//! A loopback OpenAI-compatible server (the scripted server) answers the router, workers and
//! reviewer instantly and streams the primary's answer as `--size-mb` megabytes of text in
//! 64 KiB chunks. A child
//! process (`--child`) runs the whole task against it, journal included, and prints its own
//! peak RSS, so the figure is one real run's, not the server's.

use std::process::ExitCode;

use braincode_config::Home;
use braincode_runtime::{RunServices, run};
use braincode_scripted::{Matcher, Reply, Script, ScriptedServer};
use serde_json::json;

use super::overhead::{fixture, reply_for, request};
use super::proc_status_kib;

/// Arguments of `braincode bench reply`.
#[derive(Debug, clap::Args)]
pub struct ReplyBenchArgs {
    /// Size of the primary's reply, in MB (10^6 bytes).
    #[arg(long, default_value_t = 50)]
    pub size_mb: u64,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: run once against this endpoint and print this process's peak RSS (KiB).
    #[arg(long, hide = true, value_name = "BASE_URL")]
    pub child: Option<String>,
}

const CHUNK_BYTES: usize = 64 * 1024;

/// The loopback server: everyone but the primary is answered at once; the primary's answer
/// is `size_bytes` of text in [`CHUNK_BYTES`] chunks.
async fn serve(size_bytes: u64) -> anyhow::Result<ScriptedServer> {
    let piece = "lorem ipsum dolor sit amet ".repeat(CHUNK_BYTES / 27 + 1);
    let piece = piece[..CHUNK_BYTES].to_string();
    let chunks = size_bytes.div_ceil(CHUNK_BYTES as u64) as usize;
    let script = Script::new()
        .when_fn(Matcher::primary(), move |_| {
            Reply::text_chunks(std::iter::repeat_n(piece.clone(), chunks))
        })
        .when_fn(Matcher::Any, |request| {
            Reply::text(reply_for(request.kind()))
        });
    Ok(ScriptedServer::bind(script).await?)
}

async fn child(base_url: &str) -> anyhow::Result<ExitCode> {
    let (_dir, home, repo) = fixture(base_url)?;
    let report = run(request(&repo), RunServices::new(Home::at(&home))).await;
    let answer_bytes = report.model_summary.len();
    println!(
        "{} {answer_bytes} {}",
        proc_status_kib("VmHWM:").unwrap_or(0),
        report.status.as_str()
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs the benchmark.
pub fn execute(args: ReplyBenchArgs) -> anyhow::Result<ExitCode> {
    let runtime = super::super::tokio_runtime()?;
    if let Some(base_url) = &args.child {
        return runtime.block_on(child(base_url));
    }
    runtime.block_on(async {
        let size_bytes = args.size_mb * 1_000_000;
        let server = serve(size_bytes).await?;
        let stdout = super::run_self(&["bench", "reply", "--child", &server.base_url()]).await;
        drop(server);
        let stdout = stdout?;
        let mut fields = stdout.split_whitespace();
        let peak_kib: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        let answer_bytes: u64 = fields.next().and_then(|f| f.parse().ok()).unwrap_or(0);
        let status = fields.next().unwrap_or("unknown").to_string();
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&json!({
                    "replyBytes": size_bytes,
                    "peakRssKib": peak_kib,
                    "answerBytes": answer_bytes,
                    "status": status,
                }))?
            );
        } else {
            println!(
                "primary reply of {} MB: peak RSS of the run {:.1} MiB; answer kept {} bytes; status {status}",
                args.size_mb,
                peak_kib as f64 / 1024.0,
                answer_bytes
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}
