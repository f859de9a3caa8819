//! The agent proves its work, end to end through the binary: on small real projects built in
//! temp dirs (a Cargo crate, a Python package with pytest, a Node package with `node --test`),
//! a scripted primary makes an edit that fails the project's check, sees the check's output,
//! fixes it, and the run ends approved with the checks and the fix pass in its report. A fix
//! budget that runs out ends `changes_requested` (exit 3) with a warning. Every run is also
//! replayed (`replay --check`) by the harness: the replay serves the checks from the journal.
//! The projects are trusted (`--trust`): an untrusted project's checks do not run at all
//! (see `untrusted_repo.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::run_harness::{self, BRAIN_ROLES, braincode, journal, review_reply, worker_reply};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo};
use serde_json::{Value, json};

/// A home whose `test` brain sends the primary (the one agent offered `edit_file`) through
/// `edits` in order, the review to an approving reviewer and every other worker to a canned
/// result. Every role uses model `test/any`, the reviewer `test/review`.
async fn scripted(home: &TempHome, edits: Vec<Reply>) -> ScriptedServer {
    scripted_reviews(home, edits, vec![review_reply("approved")]).await
}

/// [`scripted`], with the reviewer's replies in order (the last one repeats).
async fn scripted_reviews(
    home: &TempHome,
    edits: Vec<Reply>,
    reviews: Vec<Reply>,
) -> ScriptedServer {
    let server = ScriptedServer::start(
        Script::new()
            .when(Matcher::tool_offered("edit_file"), edits)
            .rule(
                braincode_test_support::Rule::new(Matcher::model("review"))
                    .replies(reviews)
                    .repeat_last(),
            )
            .always(Matcher::model("any"), worker_reply("looked at the project")),
    )
    .await;
    let models = ["test/any", "test/review"]
        .map(|id| braincode_test_support::scripted_model_entry(id, &server.base_url()));
    home.write_models(&models);
    let mut roles = serde_json::Map::new();
    for role in BRAIN_ROLES {
        let model = if role == "review" {
            "test/review"
        } else {
            "test/any"
        };
        roles.insert(
            role.into(),
            json!({"modelId": model, "fallbackModelIds": []}),
        );
    }
    home.write_brains(&json!({"brains": [{
        "id": "test", "extends": "brain", "name": "Test brain",
        "planner": {"modelId": "test/any", "fallbackModelIds": []},
        "roles": roles,
    }]}));
    home.write_settings(&json!({"version": 1, "mode": "auto", "defaultBrainId": "test"}));
    server
}

fn edit(path: &str, old: &str, new: &str) -> Reply {
    Reply::tool_call(
        "edit_file",
        json!({"path": path, "oldString": old, "newString": new}),
    )
}

/// `braincode run --json --heuristic <flag> <task>`: exit code and report.
async fn run(home: &TempHome, repo: &TempRepo, flag: &str, task: &str) -> (i32, Value) {
    let out = braincode(
        home,
        repo.path(),
        &["run", "--json", "--heuristic", "--trust", flag, task],
    )
    .await;
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    (out.code, report)
}

fn records<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

/// The scripted fix loop on one project: a bad edit, the failing check, the fix, approval.
async fn fails_then_fixes(
    repo: &TempRepo,
    file: &str,
    (good, bad): (&str, &str),
    fixed: &str,
    flag: &str,
    check: &str,
) {
    let home = TempHome::new();
    let server = scripted(
        &home,
        vec![
            edit(file, good, bad),
            Reply::text("Changed it."),
            edit(file, bad, fixed),
            Reply::text("Fixed the failing test."),
        ],
    )
    .await;
    let (code, report) = run(
        &home,
        repo,
        flag,
        &format!("Refactor the function in {file}"),
    )
    .await;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "approved", "{report:#}");
    assert_eq!(report["fixIterations"], 1, "{report:#}");
    let checks = &report["checks"];
    assert_eq!(checks["status"], "passed", "{checks:#}");
    let names: Vec<&str> = checks["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&check), "{names:?}");
    assert_eq!(report["modelSummary"], "Fixed the failing test.");
    assert!(repo.read(file).contains(fixed));

    // The fix pass saw the failing output of the check.
    let fix_request = server
        .requests()
        .into_iter()
        .find(|r| r.last_user_text().contains("Your change is not done yet"))
        .expect("a fix prompt reached the primary");
    let prompt = fix_request.last_user_text();
    assert!(prompt.contains("## Failed checks"), "{prompt}");
    assert!(prompt.contains(check), "{prompt}");

    // The journal: two check summaries (failed, then passed), one fix iteration.
    let session = report["sessionId"].as_str().unwrap();
    let entries = journal(&home, session);
    let summaries = records(&entries, "check_summary");
    assert_eq!(summaries.len(), 2, "{summaries:#?}");
    assert_eq!(summaries[0]["status"], "failed");
    assert_eq!(summaries[0]["fixIteration"], 0);
    assert_eq!(summaries[1]["status"], "passed");
    let fixes = records(&entries, "fix_iteration");
    assert_eq!(fixes.len(), 1);
    assert_eq!(fixes[0]["trigger"], "checks_failed");
    eprintln!(
        "{check}: last edit → check start {} ms",
        edit_to_check_ms(&entries)
    );
}

/// The time from the end of the first pass's last edit to the start of its first check
/// (the check summary's time less the checks' durations): a figure, never asserted.
fn edit_to_check_ms(entries: &[Value]) -> i64 {
    let first_check = entries
        .iter()
        .position(|r| r["type"] == "check_summary")
        .unwrap();
    let last_edit = entries[..first_check]
        .iter()
        .rev()
        .find(|r| r["type"] == "tool_execution_summary" && r["stage"] == "end")
        .unwrap();
    let summary = &entries[first_check];
    let ran: i64 = summary["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["durationMs"].as_i64().unwrap())
        .sum();
    summary["timestamp"].as_i64().unwrap() - ran - last_edit["timestamp"].as_i64().unwrap()
}

fn cargo_project() -> TempRepo {
    let repo = TempRepo::new();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    );
    repo.write(".gitignore", "target/\n");
    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 3), 5);\n    }\n}\n",
    );
    repo.commit("calc");
    repo
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cargo_crate_fails_its_test_then_the_primary_fixes_it() {
    let repo = cargo_project();
    fails_then_fixes(
        &repo,
        "src/lib.rs",
        ("    a + b\n", "    a - b\n"),
        "    a.wrapping_add(b)\n",
        "--allow-edits",
        "cargo test",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_package_fails_pytest_then_the_primary_fixes_it() {
    let repo = TempRepo::new();
    repo.write("pyproject.toml", "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\ntestpaths = [\"tests\"]\n");
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    repo.write(
        "tests/test_calc.py",
        "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n",
    );
    repo.write(
        "conftest.py",
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
    );
    repo.write(".gitignore", "__pycache__/\n.pytest_cache/\n");
    repo.commit("calc");
    fails_then_fixes(
        &repo,
        "calc.py",
        ("    return a + b\n", "    return a * b\n"),
        "    return sum((a, b))\n",
        "--yes",
        "pytest",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_package_fails_node_test_then_the_primary_fixes_it() {
    let repo = TempRepo::new();
    repo.write(
        "package.json",
        "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"scripts\": {\"test\": \"node --test\"}\n}\n",
    );
    repo.write(
        "package-lock.json",
        "{\"name\": \"calc\", \"lockfileVersion\": 3, \"packages\": {}}\n",
    );
    repo.write("calc.js", "exports.add = (a, b) => a + b;\n");
    repo.write(
        "test/calc.test.js",
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc.js');\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n",
    );
    repo.commit("calc");
    fails_then_fixes(
        &repo,
        "calc.js",
        ("(a, b) => a + b", "(a, b) => a - b"),
        "(a, b) => b + a",
        "--allow-edits",
        "npm run test",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_budget_that_runs_out_ends_changes_requested_with_exit_3() {
    let repo = cargo_project();
    let home = TempHome::new();
    let _server = scripted(
        &home,
        vec![
            edit("src/lib.rs", "    a + b\n", "    a - b\n"),
            Reply::text("Changed it."),
            edit("src/lib.rs", "    a - b\n", "    a * b\n"),
            Reply::text("Fixed, I think."),
        ],
    )
    .await;
    let (code, report) = run(
        &home,
        &repo,
        "--allow-edits",
        "Refactor the function in src/lib.rs",
    )
    .await;
    assert_eq!(code, 3, "{report:#}");
    assert_eq!(report["status"], "changes_requested");
    assert_eq!(report["checks"]["status"], "failed");
    assert_eq!(report["fixIterations"], 1);
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("fix budget exhausted after 1"),
        "{warnings}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_docs_only_change_runs_no_check_and_says_why() {
    let repo = cargo_project();
    repo.write("README.md", "# calc\n");
    repo.commit("readme");
    let home = TempHome::new();
    let _server = scripted(
        &home,
        vec![
            edit("README.md", "# calc\n", "# calc\n\nAdds numbers.\n"),
            Reply::text("Documented it."),
        ],
    )
    .await;
    let (code, report) = run(
        &home,
        &repo,
        "--allow-edits",
        "Document the crate in README.md",
    )
    .await;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["checks"]["status"], "skipped");
    assert_eq!(report["checks"]["patchKind"], "docs-only");
    assert_eq!(report["checks"]["riskTier"], "low");
    assert!(report["checks"]["results"].as_array().unwrap().is_empty());
    assert!(!repo.path().join("target").exists(), "no cargo ran");
}

/// A Node package whose test script is the attacker's: it writes a marker outside the
/// project, connects to a 127.0.0.1 server, and copies its environment into the project.
fn hostile_node_project(outside: &std::path::Path, port: u16) -> TempRepo {
    let repo = TempRepo::new();
    repo.write(
        "package.json",
        "{\"name\": \"calc\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node evil.js\"}}\n",
    );
    repo.write(
        "package-lock.json",
        "{\"name\": \"calc\", \"lockfileVersion\": 3, \"packages\": {}}\n",
    );
    repo.write("calc.js", "exports.add = (a, b) => a + b;\n");
    repo.write(
        "evil.js",
        &format!(
            "const fs = require('fs');\n\
             fs.writeFileSync('ran.txt', JSON.stringify(process.env));\n\
             try {{ fs.writeFileSync({marker:?}, 'pwned'); }} catch (e) {{}}\n\
             const s = require('net').connect({port}, '127.0.0.1');\n\
             s.on('error', () => {{}});\n\
             setTimeout(() => process.exit(0), 300);\n",
            marker = outside.join("pwned").display().to_string(),
        ),
    );
    repo.commit("calc");
    repo
}

/// A `--allow-edits` run on a hostile Node project whose primary makes one harmless edit, so
/// the project's own (hostile) test script is the check that would run.
struct HostileRefactor {
    report: Value,
    repo: TempRepo,
    outside: tempfile::TempDir,
    hit: braincode_test_support::HitServer,
}

impl HostileRefactor {
    async fn run(env: &[(&str, &str)]) -> HostileRefactor {
        let hit = braincode_test_support::HitServer::start();
        let outside = tempfile::tempdir().unwrap();
        let repo = hostile_node_project(outside.path(), hit.port());
        let home = TempHome::new();
        let _server = scripted(
            &home,
            vec![
                edit("calc.js", "a + b", "b + a"),
                Reply::text("Swapped the operands."),
            ],
        )
        .await;
        let out = run_harness::braincode_env(
            &home,
            repo.path(),
            &[
                "run",
                "--json",
                "--heuristic",
                "--allow-edits",
                "--trust",
                "Refactor the function in calc.js",
            ],
            env,
        )
        .await;
        let report = serde_json::from_str(&out.stdout).unwrap();
        HostileRefactor {
            report,
            repo,
            outside,
            hit,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_of_a_hostile_repository_run_confined_after_an_allowed_edit() {
    let attack = HostileRefactor::run(&[("MY_SERVICE_TOKEN", "sekrit-value-123")]).await;
    let (report, repo, outside, hit) = (&attack.report, &attack.repo, &attack.outside, &attack.hit);
    // The check ran (it left its file in the project)…
    assert_eq!(report["checks"]["status"], "passed", "{report:#}");
    let env = repo.read("ran.txt");
    // …without the secret, without reaching anything outside the project or the network.
    assert!(
        !env.contains("sekrit-value-123"),
        "a secret reached the check"
    );
    assert!(
        !outside.path().join("pwned").exists(),
        "the check wrote outside the project"
    );
    assert_eq!(hit.hits(), 0, "the check reached the network");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_sandbox_checks_wait_for_a_person_and_nothing_runs() {
    let attack = HostileRefactor::run(&[("BRAINCODE_SANDBOX", "off")]).await;
    let (report, repo, outside, hit) = (&attack.report, &attack.repo, &attack.outside, &attack.hit);
    // Without a sandbox Braincode does not even run its own git: no change is seen, so no
    // check is selected, and the report says why.
    assert!(
        report["checks"].is_null() || report["checks"]["status"] == "skipped",
        "{report:#}"
    );
    assert!(
        report["warnings"]
            .to_string()
            .contains("runs its own git only inside the OS sandbox"),
        "{report:#}"
    );
    assert!(
        !repo.path().join("ran.txt").exists(),
        "the test script ran unconfined"
    );
    assert!(!outside.path().join("pwned").exists());
    assert_eq!(hit.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ci_change_needs_more_than_allow_edits_to_run_checks_and_gets_a_review() {
    let repo = cargo_project();
    // (`.github/workflows` is protected: only a person may edit it at all.)
    repo.write(".gitlab-ci.yml", "test:\n  script: cargo test\n");
    repo.commit("ci");
    let home = TempHome::new();
    let server = scripted(
        &home,
        vec![
            edit("src/lib.rs", "    a + b\n", "    b + a\n"),
            edit(".gitlab-ci.yml", "cargo test\n", "cargo test --all\n"),
            Reply::text("Changed the code and the workflow."),
        ],
    )
    .await;
    let (code, report) = run(
        &home,
        &repo,
        "--allow-edits",
        "Refactor the function in src/lib.rs",
    )
    .await;
    assert_eq!(code, 0, "{report:#}");
    let checks = &report["checks"];
    assert_eq!(checks["patchKind"], "ci-risk", "{checks:#}");
    assert_eq!(checks["riskTier"], "high", "{checks:#}");
    assert_eq!(checks["status"], "skipped", "{checks:#}");
    assert!(checks["reason"].to_string().contains("--yes"), "{checks:#}");
    assert!(!repo.path().join("target").exists(), "no cargo ran");
    // The patch kind asked for an independent review, which saw that checks were skipped.
    let review = server
        .requests()
        .into_iter()
        .find(|r| r.model() == Some("review"))
        .expect("a review ran");
    assert!(review.last_user_text().contains("Checks were skipped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_that_requests_changes_gets_a_fix_pass_and_then_approves() {
    let repo = cargo_project();
    let home = TempHome::new();
    let changes = Reply::json(&json!({
        "taskId": "x", "parentId": "y",
        "progress": {"status": "completed", "summary": "reviewed"},
        "summary": "The swap hurts readability.", "artifacts": [], "risks": [], "nextQuestions": [],
        "decision": "changes_requested", "confidence": 0.8, "rationale": "readability",
        "findings": [], "requiredChanges": ["keep the explicit addition, it reads better"],
        "blockingIssues": [], "residualRisks": []
    }));
    let server = scripted_reviews(
        &home,
        vec![
            edit("src/lib.rs", "    a + b\n", "    b + a\n"),
            Reply::text("Swapped them."),
            edit("src/lib.rs", "    b + a\n", "    a + b\n"),
            Reply::text("Put the addition back."),
        ],
        vec![changes, review_reply("approved")],
    )
    .await;
    let (code, report) = run(
        &home,
        &repo,
        "--allow-edits",
        "Refactor the function in src/lib.rs",
    )
    .await;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "approved", "{report:#}");
    assert_eq!(report["fixIterations"], 1);
    let fix = server
        .requests()
        .into_iter()
        .find(|r| r.last_user_text().contains("Your change is not done yet"))
        .expect("a fix prompt");
    assert!(fix.last_user_text().contains("keep the explicit addition"));
    let entries = journal(&home, report["sessionId"].as_str().unwrap());
    let fixes = records(&entries, "fix_iteration");
    assert_eq!(fixes[0]["trigger"], "changes_requested");
    let reviews = records(&entries, "review_decision");
    assert_eq!(reviews.len(), 2);
    let artifacts = records(&entries, "review_artifacts_summary");
    assert_eq!(artifacts[0]["independent"], true, "{artifacts:#?}");
    assert_eq!(artifacts[0]["checksStatus"], "passed");
}

/// A file the checks themselves write (here `package-lock.json`, as `npm install` would) is
/// theirs: it is not in the run's patch, it does not turn the patch kind into a package
/// change on the fix pass, and a warning says what they wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_the_checks_write_are_theirs_not_the_agents() {
    let repo = TempRepo::new();
    repo.write(
        "package.json",
        "{\"name\": \"calc\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node check.js\"}}\n",
    );
    repo.write(
        "package-lock.json",
        "{\"name\": \"calc\", \"lockfileVersion\": 3, \"packages\": {}}\n",
    );
    repo.write("calc.js", "exports.add = (a, b) => a + b;\n");
    repo.write(
        "check.js",
        "const fs = require('fs');\n\
         const lock = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));\n\
         lock.checkedAt = (lock.checkedAt || 0) + 1;\n\
         fs.writeFileSync('package-lock.json', JSON.stringify(lock) + '\\n');\n\
         process.exit(require('./calc').add(2, 1) === 3 ? 0 : 1);\n",
    );
    repo.commit("calc");
    let home = TempHome::new();
    let _server = scripted(
        &home,
        vec![
            edit("calc.js", "a + b", "a - b"),
            Reply::text("Changed it."),
            edit("calc.js", "a - b", "b + a"),
            Reply::text("Fixed it."),
        ],
    )
    .await;
    let (code, report) = run(
        &home,
        &repo,
        "--allow-edits",
        "Refactor the function in calc.js",
    )
    .await;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["fixIterations"], 1, "{report:#}");
    let changed: Vec<&str> = report["patch"]["changedFiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["calc.js"], "{report:#}");
    assert_ne!(
        report["checks"]["patchKind"], "package-change",
        "{report:#}"
    );
    assert_eq!(
        report["checks"]["writtenFiles"],
        serde_json::json!(["package-lock.json"]),
        "{report:#}"
    );
    assert!(
        report["warnings"]
            .to_string()
            .contains("the checks wrote package-lock.json"),
        "{report:#}"
    );
}

/// A check that could not run (a test dependency is not installed) is not the change's fault:
/// no fix pass, the report says which check could not run and how to fix that, and the
/// reviewer is told so; the run ends with the review's decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_that_could_not_run_gets_no_fix_pass() {
    let repo = TempRepo::new();
    repo.write(
        "pyproject.toml",
        "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n",
    );
    repo.write("calc.py", "def add(a, b):\n    return a + b\n");
    // The suite needs `hypothesis`, which is not installed here.
    repo.write(
        "tests/test_calc.py",
        "import hypothesis_is_not_installed_here\nimport calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n",
    );
    repo.write(".gitignore", "__pycache__/\n.pytest_cache/\n");
    repo.commit("calc");
    let home = TempHome::new();
    let server = scripted(
        &home,
        vec![
            edit("calc.py", "    return a + b\n", "    return b + a\n"),
            Reply::text("Swapped the operands."),
        ],
    )
    .await;
    let (code, report) = run(&home, &repo, "--yes", "Refactor the function in calc.py").await;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "approved", "{report:#}");
    assert_eq!(report["checks"]["status"], "could_not_run", "{report:#}");
    assert!(
        report["fixIterations"].as_u64().unwrap_or(0) == 0,
        "{report:#}"
    );
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("could not run") && warnings.contains("hypothesis_is_not_installed_here"),
        "{warnings}"
    );
    // The reviewer heard it as the environment's, not as a failure to fix.
    let review = run_harness::model_requests(&server, "review").join("\n");
    assert!(review.contains("could not run"), "{review}");
    assert!(!review.contains("Failed checks mean changes are required"));
}

/// `run --fetch-deps`: before the first checks the dependency step runs in the sandbox through
/// the registry allowlist, the checks then pass on the code, and the report carries the step
/// and the connections it made; a replay serves all of it from the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_fetch_deps_sets_dependencies_up_before_its_checks() {
    use run_harness::npm_registry;
    let Some(host) = npm_registry::usable_host() else {
        return;
    };
    let (repo, port, hits) = npm_registry::project_needing_a_package(&host).await;
    let home = TempHome::new();
    let _server = scripted(
        &home,
        vec![
            edit("test.js", "console.log('ok');", "console.log('padded ok');"),
            Reply::text("The test now says what it checked."),
        ],
    )
    .await;
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("settings.json")).unwrap())
            .unwrap();
    settings["sandbox"] = json!({"networkAllow": [host]});
    home.write_settings(&settings);
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "--trust",
            "--yes",
            "--fetch-deps",
            "Refactor the test output in test.js",
        ],
    )
    .await;
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    let checks = &report["checks"];
    assert_eq!(checks["setup"][0]["name"], "deps: npm ci", "{report:#}");
    assert_eq!(checks["setup"][0]["passed"], true, "{checks:#}");
    assert_eq!(checks["status"], "passed", "{checks:#}");
    assert!(
        checks["network"]
            .to_string()
            .contains(&format!("allowed {host}:{port}")),
        "{checks:#}"
    );
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
}
