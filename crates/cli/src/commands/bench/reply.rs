//! `braincode bench reply`: peak memory of a run whose primary model streams a huge reply.
//!
//! A loopback OpenAI-compatible server answers the router, workers and reviewer instantly and
//! streams the primary's answer as `--size-mb` megabytes of text in 64 KiB chunks. A child
//! process (`--child`) runs the whole task against it, journal included, and prints its own
//! peak RSS, so the figure is one real run's, not the server's.

use std::process::ExitCode;

use axum::Json;
use axum::body::Body;
use axum::response::IntoResponse;
use braincode_config::Home;
use braincode_runtime::{RunServices, run};
use serde_json::{Value, json};

use super::overhead::{Asker, asker, fixture, reply_for, request};
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

fn sse_chunk(text: &str) -> String {
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "big",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": Value::Null}]});
    format!("data: {chunk}\n\n")
}

fn sse_end() -> String {
    let stop = json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "big",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {stop}\n\ndata: [DONE]\n\n")
}

async fn serve(size_bytes: u64) -> anyhow::Result<(String, tokio::task::JoinHandle<()>)> {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |Json(body): Json<Value>| async move {
            let name = body
                .pointer("/response_format/json_schema/name")
                .and_then(Value::as_str);
            let first_user = body["messages"]
                .as_array()
                .and_then(|messages| messages.iter().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default();
            let who = asker(name, first_user);
            let headers = [(axum::http::header::CONTENT_TYPE, "text/event-stream")];
            if who != Asker::Primary {
                let text = format!("{}{}", sse_chunk(&reply_for(who)), sse_end());
                return (headers, Body::from(text)).into_response();
            }
            let piece = "lorem ipsum dolor sit amet ".repeat(CHUNK_BYTES / 27 + 1);
            let piece = sse_chunk(&piece[..CHUNK_BYTES]);
            let chunks = size_bytes.div_ceil(CHUNK_BYTES as u64);
            let stream = futures::stream::iter(
                (0..chunks)
                    .map(move |_| piece.clone())
                    .chain(std::iter::once(sse_end()))
                    .map(Ok::<_, std::convert::Infallible>),
            );
            (headers, Body::from_stream(stream)).into_response()
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let handle = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{addr}/v1"), handle))
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
        let (base_url, server) = serve(size_bytes).await?;
        let stdout = super::run_self(&["bench", "reply", "--child", &base_url]).await;
        server.abort();
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
