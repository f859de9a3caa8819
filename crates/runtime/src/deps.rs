//! Dependencies set up once, in the sandbox: before the first checks of a project, one step per
//! ecosystem the selected checks use — `cargo fetch`; a project `.venv` with the test
//! dependencies the project declares; `npm ci` / `pnpm install --frozen-lockfile` / `yarn
//! install --immutable`; `go mod download` — with the network limited to the package registries
//! (plus `sandbox.networkAllow`) through the allowlist proxy. A step is not run again while its
//! inputs (manifest, lockfile, requirement files) are as they were when it last passed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use braincode_config::Home;
use braincode_protocol::CheckResult;
use braincode_sandbox::netbridge::NetRoute;
use braincode_tools::checks::{CheckSpec, Ecosystem};
use braincode_tools::exec::netproxy::{Allowlist, NetDecision, NetProxy};
use braincode_tools::exec::process::run_captured;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// How long one step may take (a cold `cargo fetch` or `npm ci` is slow).
const STEP_TIMEOUT: Duration = Duration::from_secs(900);

/// Output kept per step.
const STEP_OUTPUT_BYTES: usize = 16 * 1024;

/// One dependency step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepsStep {
    /// Ecosystem.
    pub ecosystem: Ecosystem,
    /// Directory, relative to the project root (empty: the root).
    pub dir: String,
    /// What it runs, shown (`cargo fetch`).
    pub label: String,
    /// The `sh -c` script.
    pub script: String,
    /// Directories outside the project it writes (package caches).
    pub writable: Vec<PathBuf>,
    /// Files whose contents decide whether it must run again.
    pub inputs: Vec<String>,
    /// What must exist for an earlier run to count (`node_modules`, `.venv`).
    pub output: Option<String>,
}

/// What setting up gave.
#[derive(Debug, Clone, Default)]
pub struct DepsReport {
    /// One result per step (`deps: cargo fetch`), cached ones included (0 ms, "up to date").
    pub results: Vec<CheckResult>,
    /// Every connection the proxy was asked for, as lines (`allowed pypi.org:443`,
    /// `refused 10.0.0.1:80: … is an IP address …`).
    pub network: Vec<String>,
}

impl DepsReport {
    /// Whether every step passed (or was up to date).
    pub fn ok(&self) -> bool {
        self.results.iter().all(|r| r.passed)
    }

    /// Whether a step ran (rather than all being up to date): what the checks find may then
    /// have changed (a new `.venv`).
    pub fn ran(&self) -> bool {
        self.results.iter().any(|r| r.duration_ms > 0 || !r.passed)
    }
}

/// The steps the `checks` need, one per (directory, ecosystem), in order.
pub fn steps_for(root: &Path, checks: &[CheckSpec]) -> Vec<DepsStep> {
    let mut steps: Vec<DepsStep> = Vec::new();
    for check in checks {
        if steps
            .iter()
            .any(|s| s.dir == check.dir && s.ecosystem == check.ecosystem)
        {
            continue;
        }
        if let Some(step) = step_for(root, &check.dir, check.ecosystem) {
            steps.push(step);
        }
    }
    steps
}

fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

fn step_for(root: &Path, dir: &str, ecosystem: Ecosystem) -> Option<DepsStep> {
    let here = root.join(dir);
    let has = |name: &str| here.join(name).is_file();
    let step = |label: &str, script: String, writable: Vec<PathBuf>, inputs: &[&str]| DepsStep {
        ecosystem,
        dir: dir.to_string(),
        label: label.to_string(),
        script,
        writable,
        inputs: inputs.iter().map(|s| (*s).to_string()).collect(),
        output: None,
    };
    match ecosystem {
        Ecosystem::Cargo => {
            let cargo_home = std::env::var_os("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| user_home().map(|h| h.join(".cargo")))?;
            let caches = vec![cargo_home.join("registry"), cargo_home.join("git")];
            for cache in &caches {
                let _ = std::fs::create_dir_all(cache);
            }
            Some(step(
                "cargo fetch",
                "cargo fetch".into(),
                caches,
                &["Cargo.toml", "Cargo.lock"],
            ))
        }
        Ecosystem::Python => {
            let requirements: Vec<&str> = [
                "requirements-dev.txt",
                "requirements-test.txt",
                "requirements-tests.txt",
                "test-requirements.txt",
                "test_requirements.txt",
                "dev-requirements.txt",
                "requirements.txt",
                "tests/requirements.txt",
                "requirements/test.txt",
                "requirements/tests.txt",
                "requirements/dev.txt",
            ]
            .into_iter()
            .filter(|name| has(name))
            .collect();
            let mut install = Vec::new();
            if has("pyproject.toml") || has("setup.py") || has("setup.cfg") {
                let extras = python_test_names(&here, "project.optional-dependencies");
                install.push(if extras.is_empty() {
                    "-e .".to_string()
                } else {
                    format!("-e '.[{}]'", extras.join(","))
                });
            }
            for name in &requirements {
                install.push(format!("-r {name}"));
            }
            // Dependency groups (PEP 735) need pip 25.1 or later.
            let groups = python_test_names(&here, "dependency-groups");
            for group in &groups {
                install.push(format!("--group {group}"));
            }
            for dep in tox_deps(&here) {
                install.push(format!("'{}'", dep.replace('\'', "")));
            }
            if install.is_empty() {
                return None;
            }
            // The checks run pytest from the `.venv` once there is one.
            install.push("pytest".into());
            let pip = ".venv/bin/python -m pip install --disable-pip-version-check --no-input --no-cache-dir";
            let upgrade = if groups.is_empty() {
                String::new()
            } else {
                format!("{pip} -U 'pip>=25.1'; ")
            };
            let script = format!(
                "set -e; [ -x .venv/bin/python ] || python3 -m venv .venv; {upgrade}{pip} {}",
                install.join(" ")
            );
            let mut inputs = vec!["pyproject.toml", "setup.py", "setup.cfg", "tox.ini"];
            inputs.extend(requirements.iter().copied());
            let mut step = step(
                "python -m venv .venv + pip install",
                script,
                Vec::new(),
                &inputs,
            );
            step.output = Some(".venv".into());
            Some(step)
        }
        Ecosystem::Node => {
            let (label, script) = if has("pnpm-lock.yaml") {
                (
                    "pnpm install --frozen-lockfile",
                    "pnpm install --frozen-lockfile",
                )
            } else if has("yarn.lock") {
                ("yarn install --immutable", "yarn install --immutable")
            } else if has("package-lock.json") || has("npm-shrinkwrap.json") {
                ("npm ci", "npm ci --no-audit --no-fund")
            } else {
                ("npm install", "npm install --no-audit --no-fund")
            };
            let mut step = step(
                label,
                // The package managers' caches are kept in the sandbox's private /tmp.
                format!("npm_config_cache=/tmp/npm-cache; export npm_config_cache; {script}"),
                Vec::new(),
                &[
                    "package.json",
                    "package-lock.json",
                    "npm-shrinkwrap.json",
                    "pnpm-lock.yaml",
                    "yarn.lock",
                ],
            );
            step.output = Some("node_modules".into());
            Some(step)
        }
        Ecosystem::Go => {
            let modcache = std::env::var_os("GOMODCACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("GOPATH")
                        .map(PathBuf::from)
                        .or_else(|| user_home().map(|h| h.join("go")))
                        .map(|p| p.join("pkg").join("mod"))
                })?;
            let _ = std::fs::create_dir_all(&modcache);
            Some(step(
                "go mod download",
                "go mod download".into(),
                vec![modcache],
                &["go.mod", "go.sum"],
            ))
        }
        Ecosystem::Make | Ecosystem::Configured => None,
    }
}

/// The test-related names (`test`, `tests`, `testing`, `dev`) of a `pyproject.toml` table:
/// `[project.optional-dependencies]` (extras) or `[dependency-groups]` (PEP 735 groups).
fn python_test_names(dir: &Path, table: &str) -> Vec<String> {
    let Some(text) = braincode_tools::paths::read_project_text(dir, "pyproject.toml") else {
        return Vec::new();
    };
    let header = format!("[{table}]");
    let mut inside = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') && !line.starts_with("[\"") {
            inside = line == header;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((name, _)) = line.split_once('=') {
            let name = name.trim().trim_matches('"');
            if ["test", "tests", "testing", "dev"].contains(&name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// The requirements of tox's `[testenv] deps` (one per line; substitutions such as
/// `{[base]deps}` are skipped).
fn tox_deps(dir: &Path) -> Vec<String> {
    let Some(text) = braincode_tools::paths::read_project_text(dir, "tox.ini") else {
        return Vec::new();
    };
    let mut in_testenv = false;
    let mut in_deps = false;
    let mut deps = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with('[') {
            in_testenv = line == "[testenv]";
            in_deps = false;
            continue;
        }
        if !in_testenv {
            continue;
        }
        let continuation = raw.starts_with([' ', '\t']);
        if let Some(value) = line.strip_prefix("deps").map(str::trim_start)
            && let Some(value) = value.strip_prefix('=')
        {
            in_deps = true;
            let value = value.trim();
            if !value.is_empty() {
                deps.push(value.to_string());
            }
            continue;
        }
        if in_deps && continuation && !line.is_empty() {
            deps.push(line.to_string());
        } else if !continuation {
            in_deps = false;
        }
    }
    deps.retain(|d| {
        !d.contains('{')
            && !d.starts_with('#')
            && d.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.[],<>=!~ :;'\"/".contains(c))
    });
    deps
}

/// The fingerprint of a step's inputs: each input file's contents (not the command, which
/// may change with them: `npm install` writes the lockfile that makes the next step `npm ci`).
fn fingerprint(root: &Path, step: &DepsStep) -> String {
    let mut hash = Sha256::new();
    for input in &step.inputs {
        let relative = Path::new(&step.dir).join(input);
        hash.update(input.as_bytes());
        // Read without following links (a lockfile is at most a few MB).
        if let Ok(bytes) = braincode_sandbox::beneath::read_file(root, &relative, 64 << 20) {
            hash.update(&bytes);
        }
    }
    format!("{:x}", hash.finalize())
}

/// Where a step's last passing fingerprint is kept: one per directory and ecosystem.
fn marker(home: &Home, root: &Path, step: &DepsStep) -> PathBuf {
    let mut hash = Sha256::new();
    hash.update(root.join(&step.dir).to_string_lossy().as_bytes());
    hash.update(format!("{:?}", step.ecosystem).as_bytes());
    home.root()
        .join("deps")
        .join(format!("{:.24x}", hash.finalize()))
}

fn up_to_date(home: &Home, root: &Path, step: &DepsStep) -> bool {
    let stored = std::fs::read_to_string(marker(home, root, step)).unwrap_or_default();
    stored.trim() == fingerprint(root, step)
        && step
            .output
            .as_ref()
            .is_none_or(|out| root.join(&step.dir).join(out).exists())
}

fn answer_path(home: &Home, root: &Path) -> PathBuf {
    let mut hash = Sha256::new();
    hash.update(root.to_string_lossy().as_bytes());
    home.root()
        .join("deps")
        .join(format!("{:.24x}.answer", hash.finalize()))
}

/// The person's kept answer for `root` (`checks.fetchDependencies: ask`), if they gave one.
pub fn kept_answer(home: &Home, root: &Path) -> Option<bool> {
    match std::fs::read_to_string(answer_path(home, root))
        .ok()?
        .trim()
    {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Keeps the person's answer for `root`.
pub fn keep_answer(home: &Home, root: &Path, yes: bool) {
    let path = answer_path(home, root);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, if yes { "yes\n" } else { "no\n" });
}

/// The allowlist of the dependency step: the registries and the user's additions.
pub fn registries_allowlist(settings: &braincode_config::Settings) -> Allowlist {
    Allowlist::registries().with(&settings.sandbox.network_allow)
}

/// Runs `steps` in `root`'s sandbox, the network limited to `allow`. Steps already up to date
/// are reported as such and not run.
pub async fn set_up(
    home: &Home,
    root: &Path,
    settings: &braincode_config::Settings,
    steps: &[DepsStep],
    allow: Allowlist,
    cancel: &CancellationToken,
) -> Result<DepsReport, String> {
    let mut report = DepsReport::default();
    let pending: Vec<&DepsStep> = steps
        .iter()
        .filter(|step| {
            let fresh = up_to_date(home, root, step);
            if fresh {
                report.results.push(result(
                    step,
                    true,
                    0,
                    "up to date: not fetched again".into(),
                ));
            }
            !fresh
        })
        .collect();
    if pending.is_empty() {
        return Ok(report);
    }
    let decisions: Arc<Mutex<Vec<NetDecision>>> = Arc::default();
    let sink = decisions.clone();
    let proxy = NetProxy::start(
        allow,
        Arc::new(move |decision| {
            if let Ok(mut all) = sink.lock() {
                all.push(decision);
            }
        }),
    )
    .map_err(|err| format!("the network allowlist proxy could not start: {err}"))?;
    let writable: Vec<PathBuf> = pending.iter().flat_map(|s| s.writable.clone()).collect();
    let route = NetRoute {
        socket: proxy.socket(),
        bridge: std::env::current_exe()
            .map_err(|err| format!("cannot find the braincode binary for the bridge: {err}"))?,
    };
    let sandbox = crate::run::fetch_sandbox(home, root, settings, route, &writable)
        .map_err(|err| err.to_string())?;
    for step in pending {
        let started = Instant::now();
        let command = sandbox.command(
            "sh".as_ref(),
            &["-c".into(), step.script.clone().into()],
            &root.join(&step.dir),
        );
        let outcome = run_captured(
            tokio::process::Command::from(command),
            STEP_TIMEOUT,
            cancel,
            STEP_OUTPUT_BYTES,
        )
        .await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let (passed, output) = match outcome {
            Ok(outcome) if outcome.cancelled => return Err("cancelled".into()),
            Ok(outcome) => {
                let mut output = outcome.stdout.to_text();
                output.push_str(&outcome.stderr.to_text());
                if outcome.timed_out {
                    output.push_str("\n[timed out]");
                }
                let code = outcome.exit.and_then(|e| e.code);
                (code == Some(0) && !outcome.timed_out, output)
            }
            Err(err) => (false, format!("cannot run {}: {err}", step.label)),
        };
        if passed {
            let path = marker(home, root, step);
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(&path, fingerprint(root, step));
        }
        report
            .results
            .push(result(step, passed, duration_ms, output));
    }
    drop(proxy);
    report.network = decisions
        .lock()
        .map(|all| all.iter().map(describe).collect())
        .unwrap_or_default();
    Ok(report)
}

fn result(step: &DepsStep, passed: bool, duration_ms: u64, output: String) -> CheckResult {
    let tail = if output.len() > STEP_OUTPUT_BYTES {
        let mut start = output.len() - STEP_OUTPUT_BYTES;
        while !output.is_char_boundary(start) {
            start += 1;
        }
        output[start..].to_string()
    } else {
        output
    };
    CheckResult {
        name: format!("deps: {}", step.label),
        command: step.script.clone(),
        passed,
        exit_code: None,
        timed_out: false,
        duration_ms,
        output_tail: tail,
        environment: None,
    }
}

/// One decision as a line.
pub fn describe(decision: &NetDecision) -> String {
    match (decision.allowed, &decision.reason) {
        (true, None) => format!("allowed {}:{}", decision.host, decision.port),
        (true, Some(failure)) => format!("allowed {}:{} ({failure})", decision.host, decision.port),
        (false, reason) => format!(
            "refused {}:{}: {}",
            decision.host,
            decision.port,
            reason.as_deref().unwrap_or("not allowed")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(ecosystem: Ecosystem, dir: &str) -> CheckSpec {
        CheckSpec {
            name: "test".into(),
            ecosystem,
            kind: braincode_tools::checks::CheckKind::Test,
            program: "true".into(),
            args: Vec::new(),
            display: "test".into(),
            dir: dir.into(),
        }
    }

    #[test]
    fn one_step_per_directory_and_ecosystem_from_what_the_project_declares() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("package.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("api")).unwrap();
        std::fs::write(
            root.join("api/pyproject.toml"),
            "[project]\nname = \"api\"\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\ndocs = [\"sphinx\"]\n",
        )
        .unwrap();
        std::fs::write(root.join("api/requirements-dev.txt"), "hypothesis\n").unwrap();
        std::fs::write(
            root.join("api/tox.ini"),
            "[tox]\nenvlist = py3\n\n[testenv]\ndeps =\n    pretend\n    {[base]deps}\n    coverage[toml]>=5\ncommands = pytest\n",
        )
        .unwrap();
        let checks = [
            spec(Ecosystem::Node, ""),
            spec(Ecosystem::Node, ""),
            spec(Ecosystem::Python, "api"),
            spec(Ecosystem::Make, ""),
        ];
        let steps = steps_for(root, &checks);
        assert_eq!(steps.len(), 2, "{steps:#?}");
        assert_eq!(steps[0].label, "npm install");
        assert!(
            steps[1].script.contains("-e '.[tests]'"),
            "{}",
            steps[1].script
        );
        assert!(
            steps[1].script.contains("-r requirements-dev.txt"),
            "{}",
            steps[1].script
        );
        assert!(!steps[1].script.contains("docs"), "{}", steps[1].script);
        assert!(
            steps[1].script.contains("'pretend' 'coverage[toml]>=5'"),
            "{}",
            steps[1].script
        );
        assert!(!steps[1].script.contains("base"), "{}", steps[1].script);
        assert!(!steps[1].script.contains("--group"), "{}", steps[1].script);
        std::fs::write(
            root.join("api/pyproject.toml"),
            "[project]\nname = \"api\"\n\n[dependency-groups]\ntest = [\"pytest\"]\nlint = [\"ruff\"]\n",
        )
        .unwrap();
        let grouped = steps_for(root, &checks);
        assert!(
            grouped[1].script.contains("-U 'pip>=25.1'"),
            "{}",
            grouped[1].script
        );
        assert!(
            grouped[1].script.contains("--group test "),
            "{}",
            grouped[1].script
        );
        assert!(!grouped[1].script.contains("lint"), "{}", grouped[1].script);
        // A lockfile turns the Node step into `npm ci`, under the same marker.
        let home = Home::at(root.join("home"));
        let before = marker(&home, root, &steps[0]);
        std::fs::write(root.join("package-lock.json"), "{}").unwrap();
        let locked = steps_for(root, &checks);
        assert_eq!(locked[0].label, "npm ci");
        assert_eq!(marker(&home, root, &locked[0]), before);
    }

    #[test]
    fn a_persons_answer_is_kept_per_project() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        assert_eq!(kept_answer(&home, &one), None);
        keep_answer(&home, &one, false);
        keep_answer(&home, &two, true);
        assert_eq!(kept_answer(&home, &one), Some(false));
        assert_eq!(kept_answer(&home, &two), Some(true));
    }
}
