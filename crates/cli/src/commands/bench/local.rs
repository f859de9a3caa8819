//! `braincode bench local`: load time, prompt and generation speed and peak RSS of the
//! embedded model, as medians over several runs, printed with the conditions they were
//! measured under. Nothing is asserted: the figures are for people and CI logs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use braincode_llm::{ChatMessage, ChatRequest};
use braincode_llm_local::{
    DEFAULT_BATCH_SIZE, DEFAULT_MODEL_FILE, LocalModel, LocalModelOptions, cached_default_model,
};
use braincode_protocol::Role;

/// Tokens generated per run (end-of-turn tokens are ignored so every run generates them all).
const GENERATED_TOKENS: u32 = 128;

/// A ~300-token code-review request (with the chat template): the shape of a real worker
/// prompt.
const PROMPT: &str = "Please review the following Rust function from our command-line tool. \
It reads a configuration file, merges it with defaults and returns the settings. I am worried \
about error handling, performance on large files and whether the code is easy to test.\n\n\
```rust\n\
pub fn load_settings(path: &Path) -> Result<Settings, Error> {\n\
    let text = std::fs::read_to_string(path)?;\n\
    let mut settings = Settings::default();\n\
    for (number, line) in text.lines().enumerate() {\n\
        let line = line.trim();\n\
        if line.is_empty() || line.starts_with('#') {\n\
            continue;\n\
        }\n\
        let (key, value) = line.split_once('=').ok_or(Error::Syntax(number + 1))?;\n\
        match key.trim() {\n\
            \"threads\" => settings.threads = value.trim().parse()?,\n\
            \"model\" => settings.model = value.trim().to_string(),\n\
            \"timeout\" => settings.timeout = Duration::from_secs(value.trim().parse()?),\n\
            other => return Err(Error::UnknownKey(other.to_string())),\n\
        }\n\
    }\n\
    Ok(settings)\n\
}\n\
```\n\n\
Point out bugs first, then risky behaviour, then style. For each point, quote the line, \
explain the problem in one or two sentences and propose a fix. Mention whether unknown keys \
should be errors or warnings, how line numbers are reported, and whether parsing errors keep \
enough context for the user to fix the file. Finish with a short summary of the most \
important change.";

/// Arguments of `braincode bench local`.
#[derive(Debug, clap::Args)]
pub struct LocalBenchArgs {
    /// Inference threads (pinned, as in production).
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// Number of runs; figures are medians.
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// GGUF file to measure (default: the pulled default model).
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Instead: time `braincode run "explain what this repository does"` in DIR offline on
    /// the embedded model, as a newcomer's first run, and check what the answer claims.
    #[arg(long, value_name = "DIR")]
    pub first_run: Option<PathBuf>,
}

/// Figures of one run.
struct Run {
    load: Duration,
    context: Duration,
    prompt_tokens: u32,
    prompt_time: Duration,
    generated: u32,
    generation_time: Duration,
    peak_rss_kib: Option<u64>,
    /// llama.cpp's bare decode of the same prompt (the ceiling).
    raw_prompt_time: Duration,
    /// "Say hello" wall times: no state file, state file in a new model, same model again.
    hello_cold: Duration,
    hello_file: Duration,
    hello_memory: Duration,
    hello_tokens: (u32, u32),
}

/// The "Say hello" request a rush worker sends: the role's real system prompt, then the
/// greeting; answers are short, so 48 tokens cap it.
fn hello_request() -> ChatRequest {
    ChatRequest {
        system: Some(braincode_brain::composed_role_prompt(
            braincode_brain::role_profile(Role::Rush),
        )),
        messages: vec![ChatMessage::user_text("Say hello")],
        max_tokens: Some(HELLO_MAX_TOKENS),
        ..ChatRequest::default()
    }
}

const HELLO_MAX_TOKENS: u32 = 48;

/// Cold, warm-from-file and warm-in-process wall times, then (prompt tokens, tokens decoded
/// when warm from the file).
type HelloTimes = (Duration, Duration, Duration, (u32, u32));

/// Times "Say hello" cold (its state files removed), from the state file in a freshly loaded
/// model (a new process but for the OS file cache), and again in that model (in-memory cache).
fn hello_runs(path: &Path, threads: u32) -> anyhow::Result<HelloTimes> {
    let request = hello_request();
    let humanize = |err: braincode_llm::ModelError| anyhow::anyhow!(err.humanized());
    let load = || LocalModel::load(path, &LocalModelOptions::default()).map_err(humanize);
    for file in load()?.prefix_state_files() {
        let _ = std::fs::remove_file(file);
    }
    // Both new-process figures include loading the model: a fresh model, one "Say hello".
    let fresh = || -> anyhow::Result<_> {
        let started = Instant::now();
        let model = load()?;
        let reply = model
            .bench_chat(&request, HELLO_MAX_TOKENS, threads)
            .map_err(humanize)?;
        Ok((model, reply, started.elapsed()))
    };
    let (_, cold, cold_time) = fresh()?;
    let (model, file, file_time) = fresh()?;
    let memory = model
        .bench_chat(&request, HELLO_MAX_TOKENS, threads)
        .map_err(humanize)?;
    if cold.text != file.text || cold.text != memory.text {
        anyhow::bail!("a warm \"Say hello\" answered differently from the cold one");
    }
    Ok((
        cold_time,
        file_time,
        memory.wall_time,
        (cold.prompt_tokens, file.evaluated_prompt_tokens),
    ))
}

/// Runs the benchmark.
pub fn execute(args: LocalBenchArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.first_run {
        return super::first_run::execute(dir, args.runs.min(3), args.json);
    }
    let path = match &args.model {
        Some(path) => path.clone(),
        None => default_model()?,
    };
    let runs = args.runs.max(1);
    let threads = args.threads.max(1);
    let mut results = Vec::new();
    for index in 0..runs {
        reset_peak_rss();
        let started = Instant::now();
        let model = LocalModel::load(&path, &LocalModelOptions::default())
            .map_err(|err| anyhow::anyhow!(err.humanized()))?;
        let load = started.elapsed();
        let run = model
            .bench(PROMPT, GENERATED_TOKENS, threads)
            .map_err(|err| anyhow::anyhow!(err.humanized()))?;
        let (_, raw_prompt_time) = model
            .bench_raw_prompt(PROMPT, threads)
            .map_err(|err| anyhow::anyhow!(err.humanized()))?;
        let (hello_cold, hello_file, hello_memory, hello_tokens) = hello_runs(&path, threads)?;
        let result = Run {
            load,
            context: run.context_time,
            prompt_tokens: run.prompt_tokens,
            prompt_time: run.prompt_time,
            generated: run.generated_tokens,
            generation_time: run.generation_time,
            peak_rss_kib: peak_rss_kib(),
            raw_prompt_time,
            hello_cold,
            hello_file,
            hello_memory,
            hello_tokens,
        };
        drop(model);
        if !args.json {
            eprintln!(
                "run {}/{runs}: load {:.0} ms, prompt {:.0} tok/s (llama.cpp {:.0}), generation {:.1} tok/s, \
                 hello {:.0}/{:.0}/{:.0} ms",
                index + 1,
                ms(result.load),
                rate(result.prompt_tokens, result.prompt_time),
                rate(result.prompt_tokens, result.raw_prompt_time),
                rate(result.generated, result.generation_time),
                ms(result.hello_cold),
                ms(result.hello_file),
                ms(result.hello_memory),
            );
        }
        results.push(result);
    }

    let load_ms = median(results.iter().map(|r| ms(r.load)));
    let context_ms = median(results.iter().map(|r| ms(r.context)));
    let prompt_tps = median(results.iter().map(|r| rate(r.prompt_tokens, r.prompt_time)));
    let generation_tps = median(results.iter().map(|r| rate(r.generated, r.generation_time)));
    let raw_prompt_tps = median(
        results
            .iter()
            .map(|r| rate(r.prompt_tokens, r.raw_prompt_time)),
    );
    let hello_cold_ms = median(results.iter().map(|r| ms(r.hello_cold)));
    let hello_file_ms = median(results.iter().map(|r| ms(r.hello_file)));
    let hello_memory_ms = median(results.iter().map(|r| ms(r.hello_memory)));
    let (hello_prompt, hello_decoded_warm) = results.first().map_or((0, 0), |r| r.hello_tokens);
    let rss: Vec<f64> = results
        .iter()
        .filter_map(|r| r.peak_rss_kib)
        .map(|kib| kib as f64 / 1024.0)
        .collect();
    let peak_rss_mib = (!rss.is_empty()).then(|| median(rss.into_iter()));
    let prompt_tokens = results.first().map_or(0, |r| r.prompt_tokens);
    let generated = results.first().map_or(0, |r| r.generated);
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let cpu = cpu_name();

    if args.json {
        let report = serde_json::json!({
            "model": path,
            "threads": threads,
            "runs": runs,
            "batchSize": DEFAULT_BATCH_SIZE,
            "promptTokens": prompt_tokens,
            "generatedTokens": generated,
            "helloPromptTokens": hello_prompt,
            "helloWarmDecodedTokens": hello_decoded_warm,
            "sampling": "greedy, end-of-turn ignored",
            "build": profile,
            "cpu": cpu,
            "median": {
                "loadMs": load_ms,
                "contextMs": context_ms,
                "promptTokensPerSecond": prompt_tps,
                "llamaCppPromptTokensPerSecond": raw_prompt_tps,
                "generationTokensPerSecond": generation_tps,
                "helloColdMs": hello_cold_ms,
                "helloWarmFromFileMs": hello_file_ms,
                "helloWarmInProcessMs": hello_memory_ms,
                "peakRssMiB": peak_rss_mib,
            },
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("braincode bench local — medians of {runs} run(s)");
        println!("  model:       {}", path.display());
        println!(
            "  conditions:  {threads} thread(s), batch {DEFAULT_BATCH_SIZE}, {prompt_tokens}-token prompt, \
             {generated} generated tokens (greedy, end-of-turn ignored), {profile} build, {cpu}"
        );
        println!("  load:        {load_ms:.0} ms (validation + memory-mapped load)");
        println!("  context:     {context_ms:.1} ms (per request)");
        println!(
            "  prompt:      {prompt_tps:.0} tok/s (llama.cpp's bare decode of the same tokens: {raw_prompt_tps:.0} tok/s)"
        );
        println!("  generation:  {generation_tps:.1} tok/s");
        println!(
            "  say hello:   cold {hello_cold_ms:.0} ms, warm from state file {hello_file_ms:.0} ms \
             (incl. model load), warm in-process {hello_memory_ms:.0} ms \
             ({hello_prompt}-token prompt, {hello_decoded_warm} decoded when warm, \
             up to {HELLO_MAX_TOKENS} answer tokens)"
        );
        match peak_rss_mib {
            Some(mib) => println!("  peak RSS:    {mib:.0} MiB"),
            None => println!("  peak RSS:    unavailable on this system"),
        }
        if cfg!(debug_assertions) {
            println!(
                "  note: a debug build of braincode; use `cargo build --release` for real figures"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn default_model() -> anyhow::Result<PathBuf> {
    let home = braincode_config::Home::from_env().context("cannot locate the Braincode home")?;
    let pulled = home.models_dir().join(DEFAULT_MODEL_FILE);
    if pulled.is_file() {
        return Ok(pulled);
    }
    cached_default_model().ok_or_else(|| {
        anyhow::anyhow!(
            "the local model is not installed ({} is missing); run `braincode models pull` first",
            pulled.display()
        )
    })
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn rate(tokens: u32, time: Duration) -> f64 {
    let seconds = time.as_secs_f64();
    if seconds > 0.0 {
        f64::from(tokens) / seconds
    } else {
        0.0
    }
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Resets the kernel's peak-RSS mark so each run reports its own peak (Linux; elsewhere the
/// figure is the process-wide peak).
fn reset_peak_rss() {
    let _ = std::fs::write(Path::new("/proc/self/clear_refs"), "5");
}

/// Peak resident set size of this process in KiB (see [`super::proc_status_kib`]).
fn peak_rss_kib() -> Option<u64> {
    super::proc_status_kib("VmHWM:")
}

fn cpu_name() -> String {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let name = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{name}, {cores} core(s)")
}
