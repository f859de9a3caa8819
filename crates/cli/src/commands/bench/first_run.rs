//! `braincode bench local --first-run DIR`: what a newcomer meets. `braincode run "explain what
//! this repository does"` in DIR, offline on the embedded model (a fresh home with no key and
//! no model server, the model already pulled), timed from start to answer; and how true the
//! answer is: whether it names the main language and a build or test command the checks would
//! run, and how many of the file paths it mentions exist.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use serde_json::{Value, json};

/// The question a newcomer asks first.
pub const QUESTION: &str = "explain what this repository does";

/// One measured run.
struct Measured {
    seconds: f64,
    language: bool,
    command: bool,
    paths: usize,
    existing: usize,
    /// Paths that do not exist and that the answer itself flags as made up.
    flagged: usize,
    status: String,
}

/// Runs the question `runs` times in `dir`; prints the figures.
pub fn execute(dir: &Path, runs: u32, json_out: bool) -> anyhow::Result<ExitCode> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("{} is not a directory", dir.display()))?;
    let binary = std::env::current_exe().context("cannot find the braincode binary")?;
    let mut measured = Vec::new();
    for _ in 0..runs.max(1) {
        let home = tempfile::tempdir().context("cannot create a temporary home")?;
        // The model is pulled first, untimed: what is measured is a first run with the model
        // already there (a pull copies it from the machine's model cache when it is there).
        let pulled = std::process::Command::new(&binary)
            .args(["models", "pull"])
            .env("BRAINCODE_HOME", home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot run braincode models pull")?;
        if !pulled.status.success() {
            anyhow::bail!(
                "the embedded model could not be pulled: {}",
                String::from_utf8_lossy(&pulled.stderr).trim()
            );
        }
        let started = Instant::now();
        let out = std::process::Command::new(&binary)
            .args(["run", "--json", QUESTION])
            .current_dir(&dir)
            .env("BRAINCODE_HOME", home.path())
            .env("BRAINCODE_LOCAL_SERVERS", "0")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(std::process::Stdio::null())
            .output()
            .context("cannot run braincode")?;
        let seconds = started.elapsed().as_secs_f64();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        let answer = report["modelSummary"].as_str().unwrap_or_default();
        let (paths, existing, flagged) = path_claims(&dir, answer);
        measured.push(Measured {
            seconds,
            language: answer.contains("Main language:"),
            command: answer.contains("Build and test commands"),
            paths,
            existing,
            flagged,
            status: report["status"].as_str().unwrap_or("no report").to_string(),
        });
    }
    let mut times: Vec<f64> = measured.iter().map(|m| m.seconds).collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    if json_out {
        let runs: Vec<Value> = measured
            .iter()
            .map(|m| {
                json!({"seconds": m.seconds, "status": m.status, "namesLanguage": m.language,
                       "namesCommand": m.command, "pathsMentioned": m.paths, "pathsThatExist": m.existing,
                       "madeUpPathsFlagged": m.flagged})
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"project": dir, "question": QUESTION, "medianSeconds": median, "runs": runs})
            )?
        );
    } else {
        println!("first run in {}: \"{QUESTION}\"", dir.display());
        for (n, m) in measured.iter().enumerate() {
            println!(
                "  run {}: {:.1} s, {}, main language {}, build/test command {}, paths {} of {} exist ({} of the others flagged as made up)",
                n + 1,
                m.seconds,
                m.status,
                if m.language { "named" } else { "missing" },
                if m.command { "named" } else { "missing" },
                m.existing,
                m.paths,
                m.flagged
            );
        }
        println!("median wall time: {median:.1} s (goal ≤ 20 s on 2 cores)");
    }
    Ok(ExitCode::SUCCESS)
}

/// The paths the model's own words mention (not the facts, not the line that lists made-up
/// ones): how many, how many exist, and how many of those that do not are flagged as made up.
fn path_claims(dir: &Path, answer: &str) -> (usize, usize, usize) {
    const FLAG: &str = "Not in this repository (the model made these paths up): ";
    const MODEL: &str = "check it against the facts above):\n";
    // The model's own words: after the facts and the label that names the model.
    let answer = answer
        .find(MODEL)
        .map_or(answer, |at| &answer[at + MODEL.len()..]);
    let (claims, flagged) = match answer.find(FLAG) {
        Some(at) => (&answer[..at], &answer[at + FLAG.len()..]),
        None => (answer, ""),
    };
    let flagged: Vec<&str> = flagged.lines().next().unwrap_or("").split(", ").collect();
    let mentioned = braincode_runtime::mentioned_paths(dir, claims);
    let existing = mentioned.iter().filter(|(_, exists)| *exists).count();
    let caught = mentioned
        .iter()
        .filter(|(path, exists)| !exists && flagged.contains(&path.as_str()))
        .count();
    (mentioned.len(), existing, caught)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_counted_outside_the_flagged_list() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        let answer = "It starts in `src/main.rs` and reads config.toml and lib/x.rs.\n\nNot in this repository (the model made these paths up): config.toml";
        assert_eq!(path_claims(dir.path(), answer), (3, 1, 1));
    }
}
