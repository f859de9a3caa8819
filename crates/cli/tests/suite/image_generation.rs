//! Image generation end to end, against a scripted server that speaks OpenAI's Images API
//! beside the chat models: imageMaker as the primary saves the image in the project (and
//! `braincode undo` removes it), a text primary's `generate_image` call gets the saved path
//! back, a failing images API is a tool result the run survives, and a symlink planted at the
//! images directory is never written through.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine;
use braincode_test_support::{
    Matcher, RawReply, Reply, Script, ScriptedServer, TempHome, TempRepo, scripted_model_entry,
};
use serde_json::{Value, json};

use crate::run_harness::{
    Output, braincode, configure_one_model, doctor_check, hello_server, journal, repo,
};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR scripted icon pixels";

/// The images endpoint's success reply: the PNG inline, with a revised prompt.
fn image_reply() -> Reply {
    let b64 = base64::engine::general_purpose::STANDARD.encode(PNG);
    Reply::from(RawReply::json(
        &json!({"created": 1, "data": [{"b64_json": b64, "revised_prompt": "A small flat icon."}]})
            .to_string(),
    ))
}

/// A one-model home whose imageMaker is the `test/painter` image model on `server`.
fn configure_painter(home: &TempHome, server: &ScriptedServer) {
    configure_one_model(home, server);
    let mut painter = scripted_model_entry("test/painter", &server.base_url());
    painter.api = braincode_protocol::ModelApi::OpenaiImages;
    painter.supports_tools = false;
    home.write_models(&[
        scripted_model_entry("test/any", &server.base_url()),
        painter,
    ]);
    let path = home.path().join("brains.json");
    let mut brains: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    brains["brains"][0]["roles"]["imageMaker"] = json!({"modelId": "test/painter"});
    home.write_brains(&brains);
}

/// The images requests the server received (their JSON bodies).
fn image_requests(server: &ScriptedServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/images/generations"))
        .map(|r| r.body)
        .collect()
}

/// Files under `dir` (none when it does not exist).
fn files_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn image_maker_run(project: &TempRepo, home: &TempHome) -> crate::run_harness::Output {
    braincode(
        home,
        project.path(),
        &[
            "run",
            "--heuristic",
            "--allow-edits",
            "make a small icon image",
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_maker_primary_saves_the_image_names_it_and_undo_removes_it() {
    let server = ScriptedServer::start(
        Script::new()
            .always(Matcher::model("painter"), image_reply())
            .always(Matcher::model("any"), Reply::text("ok")),
    )
    .await;
    let home = TempHome::new();
    configure_painter(&home, &server);
    let project = repo();
    let out = image_maker_run(&project, &home).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);

    let saved = files_in(&project.path().join("generated-images"));
    assert_eq!(saved.len(), 1, "{saved:?}");
    let name = &saved[0];
    assert!(
        name.starts_with("image-") && name.ends_with(".png"),
        "{name}"
    );
    let relative = format!("generated-images/{name}");
    assert_eq!(std::fs::read(project.path().join(&relative)).unwrap(), PNG);
    assert!(out.stdout.contains(&relative), "{}", out.stdout);
    assert!(
        out.stdout.contains("Revised prompt: A small flat icon."),
        "{}",
        out.stdout
    );
    // One image request, built from the request; no text model ran as the primary.
    let sent = image_requests(&server);
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0]["model"], "painter");
    assert_eq!(sent[0]["n"], 1);
    let prompt = sent[0]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("make a small icon image") && prompt.contains("raster image"),
        "{prompt}"
    );
    assert!(
        (server.chat_requests().iter()).all(|r| !r.tool_names().iter().any(|t| t == "edit_file")),
        "a text primary ran"
    );
    let session = out.session();
    let changes: Vec<Value> = journal(&home, &session)
        .into_iter()
        .filter(|r| r["type"] == "file_change")
        .collect();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0]["path"], relative.as_str());

    let undo = braincode(&home, project.path(), &["undo"]).await;
    assert_eq!(undo.code, 0, "{}\n{}", undo.stderr, undo.stdout);
    assert!(!project.path().join(&relative).exists(), "{}", undo.stdout);
}

/// A text primary that calls `generate_image` once with `arguments`, then answers.
async fn tool_calling_server(arguments: Value, images: Reply) -> ScriptedServer {
    ScriptedServer::start(
        Script::new()
            .always(Matcher::model("painter"), images)
            .when(
                Matcher::tool_offered("generate_image"),
                [
                    Reply::tool_call("generate_image", arguments),
                    Reply::text("Done: the logo is in the project."),
                ],
            )
            .always(Matcher::model("any"), Reply::text("ok")),
    )
    .await
}

/// The text the primary's second request carried back from the tool.
fn tool_result_text(server: &ScriptedServer) -> String {
    server
        .chat_requests()
        .iter()
        .filter(|r| r.tool_names().iter().any(|t| t == "generate_image"))
        .nth(1)
        .map(braincode_test_support::RecordedRequest::all_text)
        .unwrap_or_else(|| panic!("the primary was not asked again after its tool call"))
}

/// A text primary asked for `assets/logo.png` with edits allowed, against `server` as both
/// the text and the image model: the home, the project and what the run printed.
async fn ask_for_the_logo(server: &ScriptedServer) -> (TempHome, TempRepo, Output) {
    let home = TempHome::new();
    configure_painter(&home, server);
    let project = repo();
    let out = braincode(
        &home,
        project.path(),
        &[
            "run",
            "--heuristic",
            "--allow-edits",
            "Add assets/logo.png to the project",
        ],
    )
    .await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    (home, project, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_primary_generates_an_image_with_the_tool_and_gets_its_path() {
    let server = tool_calling_server(
        json!({"prompt": "a tiny red square logo", "size": "1024x1024", "path": "assets/logo"}),
        image_reply(),
    )
    .await;
    let (home, project, out) = ask_for_the_logo(&server).await;
    // The requested path got the image's extension.
    assert_eq!(
        std::fs::read(project.path().join("assets/logo.png")).unwrap(),
        PNG
    );
    let result = tool_result_text(&server);
    assert!(
        result.contains("Generated image saved to assets/logo.png"),
        "{result}"
    );
    let sent = image_requests(&server);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["prompt"], "a tiny red square logo");
    assert_eq!(sent[0]["size"], "1024x1024");
    let changes: Vec<Value> = journal(&home, &out.session())
        .into_iter()
        .filter(|r| r["type"] == "file_change")
        .collect();
    let paths: Vec<&str> = changes.iter().filter_map(|c| c["path"].as_str()).collect();
    assert_eq!(paths, ["assets/logo.png"], "{changes:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_images_api_is_a_tool_result_and_the_run_still_answers() {
    let limited = r#"{"error":{"message":"Rate limit reached for images per minute.","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = tool_calling_server(
        json!({"prompt": "a tiny red square logo"}),
        Reply::from(RawReply::error(429, limited)),
    )
    .await;
    let (_home, project, out) = ask_for_the_logo(&server).await;
    let result = tool_result_text(&server);
    assert!(
        result.contains("generate_image failed")
            && result.contains("Rate limit reached for images per minute."),
        "{result}"
    );
    assert!(
        out.stdout.contains("Done: the logo is in the project."),
        "{}",
        out.stdout
    );
    assert!(!project.path().join("generated-images").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlinked_images_directory_is_not_written_through() {
    let server = ScriptedServer::start(
        Script::new()
            .always(Matcher::model("painter"), image_reply())
            .always(Matcher::model("any"), Reply::text("ok")),
    )
    .await;
    let home = TempHome::new();
    configure_painter(&home, &server);
    let project = repo();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), project.path().join("generated-images")).unwrap();
    let out = image_maker_run(&project, &home).await;
    assert_ne!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(
        files_in(outside.path()).is_empty(),
        "written through the link: {:?}",
        files_in(outside.path())
    );
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("symbolic link"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_says_whether_image_maker_can_generate_images() {
    let server = hello_server().await;
    let home = TempHome::new();
    let project = repo();
    configure_painter(&home, &server);
    let (_, check) = doctor_check(&home, project.path(), "imageMaker").await;
    assert_eq!(check["status"], "ok", "{check:#}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("imageMaker can generate images with test/painter"),
        "{check:#}"
    );

    // The image model on OpenAI with no key: named, with the reason.
    let mut painter = scripted_model_entry("test/painter", "https://api.openai.com/v1");
    painter.api = braincode_protocol::ModelApi::OpenaiImages;
    painter.provider = "openai".into();
    home.write_models(&[
        scripted_model_entry("test/any", &server.base_url()),
        painter,
    ]);
    let (_, check) = doctor_check(&home, project.path(), "imageMaker").await;
    assert_eq!(check["status"], "warning", "{check:#}");
    let message = check["message"].as_str().unwrap();
    assert!(
        message.contains("imageMaker cannot generate images")
            && message.contains("test/painter (missing API key for provider 'openai')"),
        "{check:#}"
    );

    // A text role bound to the image model is called out.
    let path = home.path().join("brains.json");
    let mut brains: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    brains["brains"][0]["roles"]["backend"] = json!({"modelId": "test/painter"});
    home.write_brains(&brains);
    let (_, check) = doctor_check(&home, project.path(), "roles:image-models").await;
    assert_eq!(check["status"], "warning", "{check:#}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("backend → test/painter"),
        "{check:#}"
    );
}
