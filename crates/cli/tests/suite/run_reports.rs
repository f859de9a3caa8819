//! What `braincode run` reports and journals when things go wrong, through the binary: an
//! unavailable reviewer, a failed worker, a run that stops early, a broken configuration,
//! prompts too big for the command line and replies too big for one journal line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{
    self, braincode, braincode_with_input, configure, journal, journal_path, repo, review_reply,
    types, worker_reply,
};
use braincode_config::journal::MAX_RECORD_BYTES;
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo, scripted_model_entry,
};
use serde_json::Value;

/// A prompt the heuristic plans with a librarian, the backend primary and a review.
const REVIEWED_PROMPT: &str = "Refactor the backend handler layout";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_reviewer_means_review_not_done_not_changes_requested() {
    let script = Script::new()
        .always(Matcher::model("librarian"), worker_reply("mapped"))
        .always(Matcher::model("backend"), Reply::text("Refactored."))
        .always(
            Matcher::model("review"),
            Reply::http_error(503, "{\"error\":{\"message\":\"overloaded, try later\"}}"),
        );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();

    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", REVIEWED_PROMPT],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        report["status"], "answered",
        "neither approved nor changes_requested"
    );
    assert!(
        report.get("review").is_none(),
        "no decision was made: {report}"
    );
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    let skipped = warnings
        .iter()
        .find(|w| w.starts_with("review skipped: test/review unavailable ("))
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(skipped.contains("503"), "{skipped}");
    let review = report["routing"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["phase"] == "review")
        .unwrap();
    assert_eq!(review["status"], "skipped");

    let human = braincode(&home, repo.path(), &["run", "--heuristic", REVIEWED_PROMPT]).await;
    assert_eq!(human.code, 0, "{}\n{}", human.stderr, human.stdout);
    let line = human.field("Review").unwrap();
    assert!(
        line.starts_with("not done — test/review unavailable"),
        "{}",
        human.stdout
    );
    assert!(line.contains("nothing was approved or rejected"), "{line}");
    assert!(
        human
            .stdout
            .contains("Warning:  review skipped: test/review unavailable ("),
        "{}",
        human.stdout
    );
    assert!(
        !human.stdout.contains("changes_requested"),
        "{}",
        human.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_worker_shows_its_reason_and_a_warning() {
    let script = Script::new()
        .always(
            Matcher::model("librarian"),
            Reply::http_error(
                400,
                "{\"error\":{\"message\":\"unknown model LIBRARIAN_REASON\"}}",
            ),
        )
        .always(Matcher::model("backend"), Reply::text("Refactored."))
        .always(Matcher::model("review"), review_reply("approved"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let out = braincode(&home, repo.path(), &["run", "--heuristic", REVIEWED_PROMPT]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let workers = out.field("Workers").unwrap();
    let librarian = workers
        .split(" · ")
        .find(|w| w.starts_with("librarian failed"))
        .unwrap_or_else(|| panic!("{workers}"));
    assert!(
        librarian.contains("LIBRARIAN_REASON"),
        "the reason is on the line: {librarian}"
    );
    let warning = out
        .stdout
        .lines()
        .find(|l| l.starts_with("Warning:  librarian worker failed on test/librarian: "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(warning.contains("LIBRARIAN_REASON"), "{warning}");
    assert!(
        warning.contains("the answer was made without its result"),
        "{warning}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_patch_line_says_what_is_true() {
    let script = Script::new()
        .always(
            Matcher::model("broken"),
            Reply::http_error(400, "{\"error\":{\"message\":\"no such model\"}}"),
        )
        .always(
            Matcher::model("backend"),
            Reply::text("The api returns JSON."),
        );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &["test/broken"], &[]);
    let repo = repo();
    let question = "what does the backend api return";

    // A git repository, the run answered: the patch was summarised.
    let out = braincode(&home, repo.path(), &["run", "--heuristic", question]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(out.field("Patch").as_deref(), Some("no patch activity"));

    // Not a git repository: that is what the line says.
    let plain = tempfile::tempdir().unwrap();
    std::fs::write(plain.path().join("notes.txt"), "hello\n").unwrap();
    let out = braincode(&home, plain.path(), &["run", "--heuristic", question]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(
        out.field("Patch").as_deref(),
        Some("not a git repository (changes not tracked)")
    );

    // A git repository, the run stopped before the summary: never "not a git repository".
    configure(
        &home,
        &server,
        &["test/broken"],
        &[("backend", vec!["test/broken"])],
    );
    let out = braincode(&home, repo.path(), &["run", "--heuristic", question]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(
        out.field("Patch").as_deref(),
        Some("not computed (the run stopped before changes were summarised)"),
        "{}",
        out.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_error_prints_only_the_error_and_journals_the_prompt() {
    let server = ScriptedServer::start(Script::new()).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    home.write_file("settings.json", "{ \"mode\": \"auto\", }");
    let repo = repo();
    let prompt = "what does the backend api return";
    let out = braincode(&home, repo.path(), &["run", "--heuristic", prompt]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(out.field("Status").as_deref(), Some("failed"));
    let error = out.field("Error").unwrap();
    assert!(error.contains("settings.json"), "{error}");
    for label in ["Brain", "Routing", "Workers", "Patch", "Review", "Usage"] {
        assert!(
            out.field(label).is_none(),
            "no {label} line:\n{}",
            out.stdout
        );
    }
    assert!(
        !out.stdout.contains("The run did not complete"),
        "{}",
        out.stdout
    );
    assert!(server.requests().is_empty(), "no model was called");

    // The session is not empty: it holds the prompt and the error, and is listed as failed.
    let session = out.session();
    let records = journal(&home, &session);
    let t = types(&records);
    assert_eq!(t.first().map(String::as_str), Some("run_start"), "{t:?}");
    assert_eq!(records[0]["prompt"], prompt);
    assert_eq!(t.last().map(String::as_str), Some("run_error"), "{t:?}");
    assert!(
        records.last().unwrap()["error"]
            .as_str()
            .unwrap()
            .contains("settings.json")
    );
    let listed = braincode(&home, repo.path(), &["sessions", "list", "--json"]).await;
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    let row = rows.iter().find(|r| r["id"] == session.as_str()).unwrap();
    assert_eq!(row["status"], "failed");
    assert_eq!(row["promptPreview"], prompt);
}

/// Checks that every line of a session's journal fits the reader's limit and that
/// `sessions show --verify` reads all of them.
async fn assert_journal_readable(home: &TempHome, cwd: &std::path::Path, session: &str) {
    let bytes = std::fs::read(journal_path(home, session)).unwrap();
    for (index, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        assert!(
            line.len() <= MAX_RECORD_BYTES,
            "line {} is {} bytes, over {MAX_RECORD_BYTES}",
            index + 1,
            line.len()
        );
        serde_json::from_slice::<Value>(line).unwrap();
    }
    let verify = braincode(home, cwd, &["sessions", "show", session, "--verify"]).await;
    assert_eq!(verify.code, 0, "{}", verify.stderr);
    assert!(
        verify.stdout.contains(" 0 unreadable, 0 malformed"),
        "{}",
        verify.stdout
    );
    assert!(verify.stdout.contains("torn tail: no"), "{}", verify.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_bigger_than_the_command_line_come_from_stdin_or_a_file() {
    let server =
        ScriptedServer::start(Script::new().always(Matcher::model("backend"), Reply::text("ok")))
            .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let mut prompt = String::from("what does the backend api return? ");
    while prompt.len() < 2_200_000 {
        prompt.push_str("lorem ipsum dolor sit amet ");
    }
    prompt.push_str("END_OF_PROMPT");
    let file = home.write_file("prompt.txt", &prompt);

    let by_stdin = braincode_with_input(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", "-"],
        Some(prompt.as_bytes()),
    )
    .await;
    let by_file = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "--prompt-file",
            file.to_str().unwrap(),
        ],
    )
    .await;
    for out in [by_stdin, by_file] {
        let report: Value =
            serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stderr));
        assert_eq!(
            report["task"].as_str().unwrap(),
            prompt,
            "the whole prompt arrived"
        );
        // It is bigger than what one request may carry: the run says so instead of sending.
        assert_eq!(report["status"], "failed", "{}", report["error"]);
        assert!(report["error"].as_str().unwrap().contains("request limit"));
        let session = report["sessionId"].as_str().unwrap();
        let records = journal(&home, session);
        let journaled = records[0]["prompt"].as_str().unwrap();
        assert!(journaled.starts_with("what does the backend api return? lorem"));
        assert!(
            journaled.contains("…[clipped: "),
            "the journal keeps a clipped prompt"
        );
        assert_journal_readable(&home, repo.path(), session).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_input_errors_say_what_to_do() {
    let server = ScriptedServer::start(Script::new()).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let latin1 = home.path().join("latin1.txt");
    std::fs::write(&latin1, b"caf\xe9 au lait").unwrap();
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--heuristic",
            "--prompt-file",
            latin1.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("latin1.txt is not UTF-8 text (invalid byte at offset 3)"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("iconv"), "{}", out.stderr);

    let missing = braincode(
        &home,
        repo.path(),
        &["run", "--prompt-file", "/nonexistent/p.txt"],
    )
    .await;
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stderr
            .contains("cannot read prompt file /nonexistent/p.txt"),
        "{}",
        missing.stderr
    );

    let both = braincode(
        &home,
        repo.path(),
        &["run", "--prompt-file", "p.txt", "fix", "it"],
    )
    .await;
    assert_eq!(both.code, 2, "{}", both.stderr);
    let mixed = braincode(&home, repo.path(), &["run", "-", "and", "words"]).await;
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
    assert!(
        mixed.stderr.contains("cannot be mixed with prompt words"),
        "{}",
        mixed.stderr
    );
    let empty = braincode_with_input(&home, repo.path(), &["run", "-"], Some(b"  \n")).await;
    assert_eq!(empty.code, 1);
    assert!(
        empty.stderr.contains("the prompt on stdin is empty"),
        "{}",
        empty.stderr
    );
    assert!(server.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_reply_is_journaled_clipped_and_every_line_stays_readable() {
    // 40 MB of text in 100 KB chunks (a client that caps replies keeps the first chunks; the
    // answer is still larger than a journal line either way).
    let chunk = "All work and no play makes a long answer. ".repeat(2_500);
    let server = ScriptedServer::start(Script::new().always(
        Matcher::model("backend"),
        Reply::text_chunks(std::iter::repeat_n(chunk, 400)),
    ))
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    // No output-token limit on the answering model, so the reply is not cut to a few
    // thousand tokens before it reaches the run.
    let models: Vec<_> = run_harness::ROLES
        .iter()
        .map(|role| braincode_protocol::ModelDefinition {
            max_tokens: None,
            ..scripted_model_entry(&format!("test/{role}"), &server.base_url())
        })
        .collect();
    home.write_models(&models);
    let repo = repo();
    let out = braincode(&home, repo.path(), &["run", "--heuristic", "hello there"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.len() > 2 * MAX_RECORD_BYTES,
        "the answer is printed ({} bytes):\n{}",
        out.stdout.len(),
        &out.stdout[..out.stdout.len().min(2_000)]
    );
    let session = out.session();
    let records = journal(&home, &session);
    assert_eq!(types(&records).last().map(String::as_str), Some("run_end"));
    let report = records
        .iter()
        .find(|r| r["type"] == "final_report")
        .unwrap();
    let answer = report["finalReport"]["modelSummary"].as_str().unwrap();
    assert!(answer.starts_with("All work and no play"));
    assert!(answer.contains("…[clipped: "), "marked as clipped");
    // The cut at the reply cap is said to the person, once.
    let cut = report["finalReport"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("was cut: reply cut at"))
        })
        .count();
    assert_eq!(cut, 1, "{:#}", report["finalReport"]["warnings"]);
    assert_journal_readable(&home, repo.path(), &session).await;
}

/// A reviewer that answers in prose has made no decision: the next review model is asked;
/// when none decides, the review is inconclusive (status answered, exit 6), no fix pass runs,
/// and nothing is called approved or changes_requested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_without_a_decision_is_asked_again_then_inconclusive() {
    let prose = || Reply::text("This looks broadly fine to me, though I have some thoughts.");
    // One review model that only talks: inconclusive.
    let server = ScriptedServer::start(
        Script::new()
            .always(Matcher::model("librarian"), worker_reply("mapped"))
            .always(Matcher::model("backend"), Reply::text("Refactored."))
            .always(Matcher::model("review"), prose()),
    )
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", REVIEWED_PROMPT],
    )
    .await;
    assert_eq!(out.code, 6, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["status"], "answered", "{report:#}");
    assert_eq!(report["review"]["decision"], "inconclusive", "{report:#}");
    assert_eq!(
        report["fixIterations"].as_u64().unwrap_or(0),
        0,
        "no fix pass runs on a review that asked for nothing: {report:#}"
    );
    assert!(
        report["warnings"]
            .to_string()
            .contains("review inconclusive"),
        "{report:#}"
    );

    // A second review model that decides: it is asked, and its decision stands.
    let server = ScriptedServer::start(
        Script::new()
            .always(Matcher::model("librarian"), worker_reply("mapped"))
            .always(Matcher::model("backend"), Reply::text("Refactored."))
            .always(Matcher::model("review"), prose())
            .always(Matcher::model("review2"), review_reply("approved")),
    )
    .await;
    let home = TempHome::new();
    configure(
        &home,
        &server,
        &["test/review2"],
        &[("review", vec!["test/review", "test/review2"])],
    );
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", REVIEWED_PROMPT],
    )
    .await;
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["review"]["decision"], "approved", "{report:#}");
    assert!(
        report["warnings"]
            .to_string()
            .contains("the review by test/review gave no decision; asking test/review2"),
        "{report:#}"
    );
    let asked: Vec<String> = server
        .chat_requests()
        .iter()
        .filter_map(|r| r.model().map(str::to_string))
        .filter(|m| m.starts_with("review"))
        .collect();
    assert_eq!(asked, ["review", "review2"], "{asked:?}");
}

/// A reference the models cannot get (too big, missing) is said to the person in one
/// `Warning:` line each, not only to the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_that_is_not_attached_is_a_warning() {
    let server = ScriptedServer::start(
        Script::new()
            .always(Matcher::model("librarian"), worker_reply("mapped"))
            .always(Matcher::model("backend"), Reply::text("Read it.")),
    )
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let big = braincode_context::AT_FILE_MAX_BYTES + 1;
    repo.write("big.txt", &"x".repeat(big));
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "Summarize @big.txt and @missing.txt please",
        ],
    )
    .await;
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("was not attached"))
        .collect();
    assert_eq!(warnings.len(), 2, "{report:#}");
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("@big.txt was not attached: file is")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("@missing.txt was not attached")),
        "{warnings:?}"
    );
}

/// A question about the repository answered by the embedded model: the facts read from the
/// repository without a model come first, the model's prose is labelled as the model's, and
/// the report says which model answered and how to do better. (The embedded model's id is
/// served here by a scripted model: what is tested is what Braincode adds to its answer.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_models_answer_about_the_repository_comes_with_facts() {
    let server = ScriptedServer::start(Script::new().always(
        Matcher::model("smollm2"),
        Reply::text("It is the braincode gem in lib/gem.rb, started from src/main.rs."),
    ))
    .await;
    let home = TempHome::new();
    home.write_models(&[scripted_model_entry("local/smollm2", &server.base_url())]);
    let repo = TempRepo::new();
    repo.write(
        "Cargo.toml",
        "[package]\nname = \"greeter\"\nversion = \"0.3.1\"\nedition = \"2021\"\n",
    );
    repo.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    repo.write("README.md", "# Greeter\n\nPrints a greeting.\n");
    repo.commit("greeter");
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "explain what this repository does",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let answer = report["modelSummary"].as_str().unwrap();
    assert!(
        answer.starts_with("Facts read from the repository (not from a model):"),
        "{answer}"
    );
    for fact in [
        "Main language: Rust",
        "Rust package greeter 0.3.1",
        "cargo test",
        "Entry points: src/main.rs",
        "README.md: \"Greeter\" — Prints a greeting.",
        "The embedded model's answer (local/smollm2",
        "the braincode gem",
        "Not in this repository (the model made these paths up): lib/gem.rb",
    ] {
        assert!(answer.contains(fact), "{fact}: {answer}");
    }
    assert!(
        report["warnings"]
            .to_string()
            .contains("answered by the embedded model"),
        "{report:#}"
    );
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let facts = records.iter().find(|r| r["type"] == "repo_facts").unwrap();
    assert_eq!(
        facts["missingPaths"],
        serde_json::json!(["lib/gem.rb"]),
        "{facts}"
    );
}
