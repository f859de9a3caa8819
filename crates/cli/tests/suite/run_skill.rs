//! `braincode run --skill <id>` through the binary, with a real skill file in a real
//! repository: the model gets the skill (named, its body between delimiter lines) then the
//! task; without a task the skill is applied to the project; an unknown id fails before
//! anything runs, naming the close skills.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{
    all_requests_text, braincode_env, configure_one_model, hello_server, repo, run_json,
};
use braincode_test_support::TempHome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_a_skill_sends_the_skill_then_the_task() {
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let project = repo();
    project.write(
        ".agents/skills/review/SKILL.md",
        "# Review\nName each risk with its file and line (SKILL-MARKER-7).\n",
    );
    project.commit("a review skill");

    let report = run_json(
        &home,
        project.path(),
        &["--skill", "review"],
        "check src/lib.rs",
        &[],
    )
    .await;
    assert_eq!(report["status"], "answered", "{report:#}");
    let sent = all_requests_text(&server);
    let header = sent
        .find("Use the skill `review` (project skill, ")
        .unwrap_or_else(|| panic!("no skill header in:\n{sent}"));
    let body = sent[header..].find("SKILL-MARKER-7").unwrap() + header;
    let end = sent[header..]
        .find("----- end of skill review -----")
        .unwrap()
        + header;
    let task = sent[header..].find("Task: check src/lib.rs").unwrap() + header;
    assert!(header < body && body < end && end < task, "{sent}");

    // No task: the skill is applied to the project.
    let out = braincode_env(
        &home,
        project.path(),
        &["run", "--json", "--heuristic", "--skill", "review"],
        &[],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        all_requests_text(&server).contains("Task: apply this skill to the current project"),
        "no default task"
    );

    // An unknown id: a clear error, and no request reaches the model.
    let before = server.chat_requests().len();
    let out = braincode_env(
        &home,
        project.path(),
        &[
            "run",
            "--heuristic",
            "--skill",
            "reveiw",
            "check src/lib.rs",
        ],
        &[],
    )
    .await;
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("unknown skill `reveiw`: did you mean `review`? (skills: review)"),
        "{}",
        out.stderr
    );
    assert_eq!(server.chat_requests().len(), before);
}
