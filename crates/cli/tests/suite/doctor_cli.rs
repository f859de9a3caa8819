//! End-to-end tests of `braincode doctor`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn doctor(home: &Path, project: &Path, json: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braincode"));
    command
        .arg("doctor")
        .arg("--project")
        .arg(project)
        .env("BRAINCODE_HOME", home)
        .env("HOME", home)
        .env("BRAINCODE_MODEL_CACHE", model_cache(home))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    if json {
        command.arg("--json");
    }
    command.output().unwrap()
}

/// The machine model cache of a test home: beside it, so that reading it changes no home.
fn model_cache(home: &Path) -> std::path::PathBuf {
    home.parent().unwrap().join("model-cache")
}

/// Puts a file of the embedded model's size in the test's model cache, where a run would
/// link it from (doctor only looks for it; nothing loads it).
fn cache_the_model(home: &Path) {
    let cache = model_cache(home);
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::File::create(cache.join(braincode_llm_local::DEFAULT_MODEL_FILE))
        .unwrap()
        .set_len(braincode_llm_local::DEFAULT_MODEL_SIZE)
        .unwrap();
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    (dir, home, project)
}

#[test]
fn fresh_home_has_no_errors() {
    let (_dir, home, project) = setup();
    cache_the_model(&home);
    let out = doctor(&home, &project, false);
    let output = text(&out);
    assert_eq!(out.status.code(), Some(0), "{output}");
    assert!(output.starts_with("Braincode Doctor"), "{output}");
    assert!(output.contains("✓ settings"), "{output}");
    assert!(
        output.contains("runs use brain \"brain\" (Brain): no OpenAI or Anthropic key found"),
        "{output}"
    );
    assert!(output.contains("Result: "), "{output}");
    assert!(!output.contains('✗'), "{output}");
    // The project is not a git repository: a warning with a fix.
    assert!(output.contains("not a git repository"), "{output}");
    assert!(output.contains("→ git init"), "{output}");
    // Reading never created anything in the home.
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
}

#[test]
fn malformed_settings_is_an_error_with_location_and_fix() {
    let (_dir, home, project) = setup();
    std::fs::write(home.join("settings.json"), "{\n  \"mode\": \"turbo\"\n}\n").unwrap();
    let out = doctor(&home, &project, false);
    let output = text(&out);
    assert_eq!(out.status.code(), Some(1), "{output}");
    assert!(output.contains("✗ settings"), "{output}");
    assert!(output.contains("settings.json:2:"), "{output}");
    assert!(output.contains("unknown variant `turbo`"), "{output}");
    assert!(output.contains("→ edit "), "{output}");
    assert!(output.contains("(field mode)"), "{output}");
    assert_eq!(
        std::fs::read_to_string(home.join("settings.json")).unwrap(),
        "{\n  \"mode\": \"turbo\"\n}\n",
        "doctor never rewrites a file"
    );
}

#[test]
fn brain_typo_names_the_field_path() {
    let (_dir, home, project) = setup();
    std::fs::write(
        home.join("brains.json"),
        "{\"brains\": [\n  {\"id\": \"mine\", \"extends\": \"brain\"},\n  {\"id\": \"x\", \"extends\": \"brain\", \"roles\": {\"backend\": {\"modelId\": \"local/smollm2\", \"thinkingLevel\": \"hgh\"}}}\n]}",
    )
    .unwrap();
    let out = doctor(&home, &project, true);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "error");
    let brains = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "brains")
        .unwrap();
    let message = brains["message"].as_str().unwrap();
    assert!(message.contains("brains.json:3:"), "{message}");
    assert!(
        message.contains("brains[1].roles.backend.thinkingLevel"),
        "{message}"
    );
    assert!(message.contains("hgh"), "{message}");
}

#[test]
fn unknown_default_brain_and_insecure_auth_are_errors() {
    let (_dir, home, project) = setup();
    std::fs::write(home.join("settings.json"), "{\"defaultBrainId\": \"nope\"}").unwrap();
    std::fs::write(home.join("auth.json"), "{\"providers\": {}}").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        home.join("auth.json"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let out = doctor(&home, &project, false);
    let output = text(&out);
    assert_eq!(out.status.code(), Some(1), "{output}");
    assert!(output.contains("✗ brain"), "{output}");
    assert!(output.contains("nope"), "{output}");
    assert!(output.contains("✗ auth"), "{output}");
    assert!(
        output.contains(&format!("→ chmod 600 {}", home.join("auth.json").display())),
        "{output}"
    );
}

#[test]
fn remote_brain_without_keys_warns_per_model_with_the_fix() {
    let (_dir, home, project) = setup();
    cache_the_model(&home);
    std::fs::write(
        home.join("settings.json"),
        "{\"defaultBrainId\": \"openai\"}",
    )
    .unwrap();
    let out = doctor(&home, &project, true);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    let openai = checks
        .iter()
        .find(|c| {
            c["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("model:openai/"))
        })
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(openai["status"], "warning");
    assert!(
        openai["fix"]
            .as_str()
            .unwrap()
            .contains("braincode auth set openai"),
        "{openai}"
    );
    assert!(
        openai["fix"].as_str().unwrap().contains("OPENAI_API_KEY"),
        "{openai}"
    );
    // Every role still falls back to the local model, so nothing is an error.
    assert_ne!(report["status"], "error", "{report:#}");
}

#[test]
fn a_read_only_home_is_an_error_not_readable() {
    let (_dir, home, project) = setup();
    // A read-only mount (root ignores permission bits, so chmod would prove nothing):
    // bubblewrap is installed with the project's test dependencies.
    let bwrap = Command::new("bwrap")
        .args(["--bind", "/", "/", "--dev", "/dev", "--ro-bind"])
        .arg(&home)
        .arg(&home)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_braincode"))
        .arg("doctor")
        .arg("--project")
        .arg(&project)
        .env("BRAINCODE_HOME", &home)
        .env("HOME", &home)
        .output()
        .expect("bwrap is installed (see .ci/run)");
    let out = text(&bwrap);
    assert!(out.contains("is read-only"), "{out}");
    assert!(out.contains("runs cannot save their sessions"), "{out}");

    let writable = text(&doctor(&home, &project, false));
    assert!(writable.contains("is readable and writable"), "{writable}");
}

#[test]
fn trust_and_sandbox_are_reported() {
    let (_dir, home, project) = setup();
    std::fs::create_dir_all(project.join(".agents")).unwrap();
    std::fs::write(project.join(".agents/hooks.json"), "{\"hooks\": {}}").unwrap();
    let out = text(&doctor(&home, &project, false));
    assert!(out.contains("trust"), "{out}");
    assert!(out.contains(".agents/hooks.json"), "{out}");
    assert!(out.contains("braincode trust"), "{out}");
    assert!(out.contains("sandbox"), "{out}");
}

/// A first run offline: no key, and the embedded model every role needs is not on this
/// machine. Doctor used to say "usable"; no role can run, and it says why and what to do.
#[test]
fn without_the_embedded_model_no_role_can_run_and_doctor_says_so() {
    let (_dir, home, project) = setup();
    let out = doctor(&home, &project, false);
    let output = text(&out);
    assert_eq!(out.status.code(), Some(1), "{output}");
    assert!(!output.contains("usable, with"), "{output}");
    let roles = output
        .lines()
        .skip_while(|l| !l.starts_with("✗ roles"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(roles.contains("no role can run"), "{output}");
    assert!(
        roles.contains("local/smollm2: the embedded model is not pulled yet"),
        "{output}"
    );
    assert!(
        roles.contains("→ Get it with `braincode models pull`"),
        "{output}"
    );
    assert!(roles.contains("braincode auth set openai"), "{output}");
    assert!(output.contains("Result: 1 error(s)"), "{output}");

    // A remote brain without its key and without the embedded fallback: the roles that
    // cannot run are named, with each model's reason.
    std::fs::write(
        home.join("settings.json"),
        "{\"defaultBrainId\": \"openai\"}",
    )
    .unwrap();
    let out = doctor(&home, &project, true);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "error", "{report:#}");
    let roles = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "roles")
        .unwrap_or_else(|| panic!("{report:#}"));
    let message = roles["message"].as_str().unwrap();
    assert!(message.contains("no API key"), "{message}");
    assert!(message.contains("not pulled yet"), "{message}");

    // Once the model is on this machine, every role can run again.
    cache_the_model(&home);
    let out = doctor(&home, &project, false);
    let output = text(&out);
    assert!(output.contains("✓ roles"), "{output}");
}

/// A run killed with `kill -9` leaves its parallel writers' worktrees under
/// `.git/braincode-writers/<run>`: doctor lists them (a warning with the fix); a live run's
/// (its lock held) is not listed.
#[test]
fn worktrees_a_killed_run_left_are_listed_and_a_live_runs_are_not() {
    let (_dir, home, project) = setup();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(args)
            .current_dir(&project)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    let writers = project.join(".git/braincode-writers");
    let killed = writers.join("deadbeef/deadbeef-02");
    std::fs::create_dir_all(&killed).unwrap();
    std::fs::write(killed.join("form.ts"), "x".repeat(2_000_000)).unwrap();
    std::fs::write(writers.join("deadbeef/.alive"), "").unwrap();
    // A FIFO planted as a lock is neither opened nor waited on: doctor answers, and lists it.
    std::fs::create_dir_all(writers.join("f1f0f1f0")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(writers.join("f1f0f1f0/.alive"))
        .status()
        .unwrap();
    assert!(fifo.success());
    // A run in progress holds its lock.
    let live = writers.join("cafe0001");
    std::fs::create_dir_all(live.join("cafe0001-03")).unwrap();
    let lock = std::fs::File::create(live.join(".alive")).unwrap();
    lock.try_lock().unwrap();

    let report: Value = serde_json::from_slice(&doctor(&home, &project, true).stdout).unwrap();
    let check = (report["checks"].as_array().unwrap().iter())
        .find(|c| c["id"] == "writers")
        .unwrap_or_else(|| panic!("no writers check: {report:#}"));
    assert_eq!(check["status"], "warning");
    let message = check["message"].as_str().unwrap();
    assert!(
        message.contains("2 run(s)") && message.contains("1 worktree(s), 2.0 MB"),
        "{message}"
    );
    assert!(message.contains("deadbeef") && message.contains("f1f0f1f0"));
    assert!(!message.contains("cafe0001"), "{message}");
    assert!(check["fix"].as_str().unwrap().contains("worktree prune"));

    // Once it is gone, doctor says nothing of writers.
    std::fs::remove_dir_all(writers.join("deadbeef")).unwrap();
    std::fs::remove_dir_all(writers.join("f1f0f1f0")).unwrap();
    let report: Value = serde_json::from_slice(&doctor(&home, &project, true).stdout).unwrap();
    assert!(
        !(report["checks"].as_array().unwrap().iter()).any(|c| c["id"] == "writers"),
        "{report:#}"
    );
    drop(lock);
}
