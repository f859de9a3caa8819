//! Prompt-prefix reuse on the real model: a warm request answers exactly like a cold one while
//! decoding fewer tokens, and the static prefix's state file is written, reused by a fresh
//! model, and ignored then replaced when truncated or made for another prompt. Each test works
//! on a link to the cached model inside its own directory, so state files stay there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common::{self, complete};
use braincode_llm::{ChatMessage, ChatRequest};
use braincode_llm_local::{LocalClientOptions, LocalModel, LocalModelClient, LocalModelOptions};

const SYSTEM: &str = "You are Braincode's rush agent, a careful coding assistant working in the \
user's repository. You answer briefly and precisely. You never invent files, commands or APIs; \
when unsure you say so. Environment: a Linux workstation, the project is a Rust workspace built \
with cargo, tests run with cargo test. Tools are not available in this conversation. Keep \
answers under five sentences unless the user asks for code.";

/// A fresh directory holding a link (or copy) of the cached model under a neutral name.
fn private_model() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.gguf");
    if std::fs::hard_link(common::model_path(), &path).is_err() {
        std::fs::copy(common::model_path(), &path).unwrap();
    }
    (dir, path)
}

/// A freshly loaded model (empty in-memory cache): what a new process sees.
fn fresh(path: &Path, persist: bool) -> Arc<LocalModel> {
    let options = LocalModelOptions {
        persist_prefix_state: persist,
        ..LocalModelOptions::default()
    };
    Arc::new(LocalModel::load(path, &options).unwrap())
}

fn client(model: &Arc<LocalModel>) -> LocalModelClient {
    LocalModelClient::new(
        Arc::clone(model),
        LocalClientOptions {
            threads: 2,
            ..LocalClientOptions::default()
        },
    )
}

fn request(system: &str, messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        system: Some(system.into()),
        messages,
        max_tokens: Some(24),
        ..ChatRequest::default()
    }
}

fn say(text: &str) -> ChatRequest {
    request(SYSTEM, vec![ChatMessage::user_text(text)])
}

/// Runs `request` on `model`; returns the answer and the prompt tokens it decoded.
async fn run(model: &Arc<LocalModel>, request: ChatRequest) -> (String, u64) {
    let before = model.evaluated_prompt_tokens();
    let done = complete(&client(model), request).await.unwrap();
    (done.text, model.evaluated_prompt_tokens() - before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_request_answers_like_a_cold_one_and_decodes_only_the_new_part() {
    let (_dir, path) = private_model();
    let warm = fresh(&path, false);
    let hello = say("Say hello");
    let haiku = say("Write a haiku about the Rust borrow checker.");
    let haiku_tokens = warm.count_prompt_tokens(&haiku).unwrap() as u64;

    let (first_hello, decoded) = run(&warm, hello.clone()).await;
    assert_eq!(decoded, warm.count_prompt_tokens(&hello).unwrap() as u64);
    let (warm_haiku, decoded) = run(&warm, haiku.clone()).await;
    let (cold_haiku, cold_decoded) = run(&fresh(&path, false), haiku.clone()).await;
    assert_eq!(warm_haiku, cold_haiku, "a reused prefix changed the answer");
    assert_eq!(cold_decoded, haiku_tokens);
    assert!(
        decoded * 3 < haiku_tokens,
        "the shared system prompt was decoded again ({decoded} of {haiku_tokens})"
    );

    // The same prompt again: only its last segment is decoded, the answer is unchanged.
    let (again, decoded) = run(&warm, haiku.clone()).await;
    assert_eq!(again, cold_haiku);
    assert!(
        decoded < 10,
        "{decoded} tokens decoded for a repeated prompt"
    );

    // A conversation that grows: everything through the earlier user message is reused.
    let follow_up = request(
        SYSTEM,
        vec![
            ChatMessage::user_text("Say hello"),
            ChatMessage::Assistant {
                text: first_hello.clone(),
                tool_calls: Vec::new(),
            },
            ChatMessage::user_text("Now say it in French."),
        ],
    );
    run(&warm, hello.clone()).await;
    let (warm_follow, decoded) = run(&warm, follow_up.clone()).await;
    let (cold_follow, cold_decoded) = run(&fresh(&path, false), follow_up).await;
    assert_eq!(warm_follow, cold_follow);
    let system_and_hello = warm.count_prompt_tokens(&hello).unwrap() as u64;
    assert!(
        decoded + system_and_hello < cold_decoded + 8,
        "the earlier turn was decoded again ({decoded} of {cold_decoded})"
    );
}

/// The single state file of the model at `path`.
fn state_file(model: &LocalModel) -> PathBuf {
    let files = model.prefix_state_files();
    assert_eq!(files.len(), 1, "{files:?}");
    files.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prefix_state_file_is_reused_and_replaced_when_damaged_or_foreign() {
    let (dir, path) = private_model();
    let hello = say("Say hello");
    let first = fresh(&path, true);
    let total = first.count_prompt_tokens(&hello).unwrap() as u64;
    let (cold, decoded) = run(&first, hello.clone()).await;
    assert_eq!(decoded, total);
    let file = state_file(&first);
    let good = std::fs::read(&file).unwrap();
    assert!(good.len() > 1024, "a state file of {} bytes", good.len());

    // A new process: the system prompt comes from the file.
    let (warm, decoded) = run(&fresh(&path, true), hello.clone()).await;
    assert_eq!(warm, cold, "a state loaded from file changed the answer");
    assert!(
        decoded * 3 < total,
        "{decoded} of {total} decoded with a state file"
    );

    // Truncated: ignored (cold, same answer) and replaced.
    std::fs::write(&file, &good[..good.len() / 2]).unwrap();
    let (text, decoded) = run(&fresh(&path, true), hello.clone()).await;
    assert_eq!((text.as_str(), decoded), (cold.as_str(), total));
    assert_eq!(
        std::fs::read(&file).unwrap().len(),
        good.len(),
        "not replaced"
    );
    let (_, decoded) = run(&fresh(&path, true), hello.clone()).await;
    assert!(decoded < total, "the replaced file is not used");

    // Another prompt's file under this prompt's name: ignored and replaced too.
    let other = request(
        "You are a terse assistant for shell questions.",
        vec![ChatMessage::user_text("Say hello")],
    );
    let model = fresh(&path, true);
    run(&model, other).await;
    let files = model.prefix_state_files();
    let foreign = files
        .iter()
        .find(|f| **f != file)
        .expect("a second state file");
    std::fs::copy(foreign, &file).unwrap();
    let (text, decoded) = run(&fresh(&path, true), hello.clone()).await;
    assert_eq!((text.as_str(), decoded), (cold.as_str(), total));
    let (text, decoded) = run(&fresh(&path, true), hello).await;
    assert_eq!(text, cold);
    assert!(decoded < total, "the replaced file is not used");
    drop(dir);
}
