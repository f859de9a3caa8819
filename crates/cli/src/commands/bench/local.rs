//! `braincode bench local`: load time, prompt and generation speed and peak RSS of the
//! embedded model, as medians over several runs, printed with the conditions they were
//! measured under. Nothing is asserted: the figures are for people and CI logs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use braincode_llm_local::{
    DEFAULT_BATCH_SIZE, DEFAULT_MODEL_FILE, LocalModel, LocalModelOptions, cached_default_model,
};

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
}

/// Runs the benchmark.
pub fn execute(args: LocalBenchArgs) -> anyhow::Result<ExitCode> {
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
        let result = Run {
            load,
            context: run.context_time,
            prompt_tokens: run.prompt_tokens,
            prompt_time: run.prompt_time,
            generated: run.generated_tokens,
            generation_time: run.generation_time,
            peak_rss_kib: peak_rss_kib(),
        };
        drop(model);
        if !args.json {
            eprintln!(
                "run {}/{runs}: load {:.0} ms, prompt {:.0} tok/s, generation {:.1} tok/s",
                index + 1,
                ms(result.load),
                rate(result.prompt_tokens, result.prompt_time),
                rate(result.generated, result.generation_time),
            );
        }
        results.push(result);
    }

    let load_ms = median(results.iter().map(|r| ms(r.load)));
    let context_ms = median(results.iter().map(|r| ms(r.context)));
    let prompt_tps = median(results.iter().map(|r| rate(r.prompt_tokens, r.prompt_time)));
    let generation_tps = median(results.iter().map(|r| rate(r.generated, r.generation_time)));
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
            "sampling": "greedy, end-of-turn ignored",
            "build": profile,
            "cpu": cpu,
            "median": {
                "loadMs": load_ms,
                "contextMs": context_ms,
                "promptTokensPerSecond": prompt_tps,
                "generationTokensPerSecond": generation_tps,
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
        println!("  prompt:      {prompt_tps:.0} tok/s");
        println!("  generation:  {generation_tps:.1} tok/s");
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
