//! The `openai-images` wire against a local server speaking OpenAI's Images API: inline and
//! downloaded images, the provider's error JSON, empty and oversized replies.

use base64::Engine;
use braincode_llm::{ClientOptions, ErrorKind, ImageClient, ImageMime, ImageRequest};
use bytes::Bytes;

use crate::common::{Canned, End, ScriptedServer, definition, serve};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR tiny png body";
const JPEG: &[u8] = &[0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F'];

fn client(server: &ScriptedServer) -> ImageClient {
    ImageClient::new(
        &definition("openai-images", &server.url()),
        Some("sk-img".into()),
        &ClientOptions::default(),
    )
    .unwrap()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn request() -> ImageRequest {
    ImageRequest {
        prompt: "a small red square icon".into(),
        size: Some("1024x1024".into()),
        ..ImageRequest::default()
    }
}

fn binary(content_type: &str, bytes: &[u8]) -> Canned {
    Canned {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        chunks: vec![Bytes::copy_from_slice(bytes)],
        end: End::Complete,
    }
}

#[tokio::test]
async fn inline_image_is_decoded_with_its_revised_prompt() {
    let reply = serde_json::json!({"created": 1, "data": [{"b64_json": b64(PNG), "revised_prompt": "A red square."}]});
    let server = serve(vec![Canned::json(&reply.to_string())]).await;
    let image = client(&server).generate(&request()).await.unwrap();
    assert_eq!(image.bytes, PNG);
    assert_eq!(image.mime, ImageMime::Png);
    assert_eq!(image.revised_prompt.as_deref(), Some("A red square."));
    assert_eq!(image.model, "test/openai-images");
    let sent = &server.requests()[0];
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/images/generations");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-img"));
    assert_eq!(
        sent.body,
        serde_json::json!({"model": "test-model", "prompt": "a small red square icon", "n": 1, "size": "1024x1024"})
    );
}

/// A server whose replies may name its own address: the port is chosen first.
async fn serve_at_own_port(replies: impl FnOnce(&str) -> Vec<Canned>) -> ScriptedServer {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap().to_string();
    drop(probe);
    let script = braincode_test_support::Script::replies(
        replies(&addr)
            .into_iter()
            .map(braincode_test_support::Reply::from),
    );
    ScriptedServer::start_at(&addr, script).await.unwrap()
}

#[tokio::test]
async fn url_image_is_downloaded_from_the_server() {
    let server = serve_at_own_port(|addr| {
        let url = format!("http://{addr}/files/out.jpg?sig=1");
        vec![
            Canned::json(&serde_json::json!({"data": [{"url": url}]}).to_string()),
            binary("application/octet-stream", JPEG),
        ]
    })
    .await;
    let image = client(&server).generate(&request()).await.unwrap();
    assert_eq!(image.bytes, JPEG);
    assert_eq!(image.mime, ImageMime::Jpeg);
    assert_eq!(image.revised_prompt, None);
    let paths: Vec<_> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/images/generations", "/files/out.jpg"]);
}

#[tokio::test]
async fn unknown_bytes_take_the_type_of_the_url_extension() {
    let server = serve_at_own_port(|addr| {
        vec![
            Canned::json(
                &serde_json::json!({"data": [{"url": format!("http://{addr}/a.webp")}]})
                    .to_string(),
            ),
            binary("image/webp", b"not magic at all"),
        ]
    })
    .await;
    let image = client(&server).generate(&request()).await.unwrap();
    assert_eq!(image.mime, ImageMime::Webp);
}

#[tokio::test]
async fn openai_error_json_is_reported_with_the_providers_message() {
    let bad = r#"{"error":{"message":"Your request was rejected by the safety system.","type":"image_generation_user_error","code":"moderation_blocked"}}"#;
    let limited = r#"{"error":{"message":"Rate limit reached for images per minute.","type":"requests","code":"rate_limit_exceeded"}}"#;
    let server = serve(vec![Canned::error(400, bad), Canned::error(429, limited)]).await;
    let client = client(&server);
    let err = client.generate(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert_eq!(err.status, Some(400));
    assert!(
        err.to_string()
            .contains("Your request was rejected by the safety system."),
        "{err}"
    );
    let err = client.generate(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimit);
    assert!(
        err.to_string().contains("Rate limit reached for images"),
        "{err}"
    );
    assert!(err.to_string().contains("test/openai-images"), "{err}");
}

#[tokio::test]
async fn server_errors_and_non_json_bodies_are_clear() {
    let server = serve(vec![
        Canned::error(503, "upstream overloaded"),
        Canned::json("<html>not json</html>"),
    ])
    .await;
    let client = client(&server);
    let err = client.generate(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Server);
    assert!(err.to_string().contains("upstream overloaded"), "{err}");
    let err = client.generate(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidResponse);
    assert!(err.to_string().contains("not its JSON"), "{err}");
}

#[tokio::test]
async fn an_empty_data_array_is_an_error() {
    let server = serve(vec![Canned::json(r#"{"created":1,"data":[]}"#)]).await;
    let err = client(&server).generate(&request()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::EmptyReply);
    assert!(err.to_string().contains("empty `data` array"), "{err}");
}

#[tokio::test]
async fn oversized_images_are_refused_inline_and_downloaded() {
    let big = vec![7u8; 4096];
    let server = serve_at_own_port(|addr| {
        vec![
            Canned::json(&serde_json::json!({"data": [{"b64_json": b64(&big)}]}).to_string()),
            Canned::json(
                &serde_json::json!({"data": [{"url": format!("http://{addr}/big.png")}]})
                    .to_string(),
            ),
            binary("image/png", &big),
        ]
    })
    .await;
    let client = client(&server).with_max_bytes(1024);
    for _ in 0..2 {
        let err = client.generate(&request()).await.unwrap_err();
        assert!(
            err.to_string().contains("larger than the 1024-byte limit"),
            "{err}"
        );
    }
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn only_http_urls_are_downloaded() {
    let server = serve(vec![Canned::json(
        r#"{"data":[{"url":"file:///etc/passwd"}]}"#,
    )])
    .await;
    let err = client(&server).generate(&request()).await.unwrap_err();
    assert!(err.to_string().contains("only http and https"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_text_model_is_not_an_image_client() {
    let err = ImageClient::new(
        &definition("openai-completions", "http://127.0.0.1:9/v1"),
        None,
        &ClientOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot generate images"), "{err}");
}
