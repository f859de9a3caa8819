//! `braincode auth login` end to end against a fake authorization server on 127.0.0.1: the
//! GitHub device flow with its failures, the Codex PKCE flow driven through its loopback
//! callback as a browser would, and the renewal of an expired login before a run's request.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use crate::run_harness::{Output, braincode, configure_one_model, hello_server, run_json};
use braincode_test_support::{
    DevicePoll, FakeAuthConfig, FakeAuthServer, ScriptedServer, TempHome, TempRepo,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

fn now_ms() -> i64 {
    braincode_config::journal::now_ms()
}

fn settings_for(home: &TempHome, auth: &FakeAuthServer, redirect: &str) {
    home.write_settings(&json!({
        "version": 1,
        "auth": {"oauth": auth.oauth_settings(redirect)},
    }));
}

fn auth_json(home: &TempHome) -> Option<Value> {
    let text = std::fs::read_to_string(home.path().join("auth.json")).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

fn auth_mode(home: &TempHome) -> u32 {
    std::fs::metadata(home.path().join("auth.json"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

async fn login(home: &TempHome, args: &[&str]) -> Output {
    let mut all = vec!["auth", "login"];
    all.extend_from_slice(args);
    all.push("--no-browser");
    braincode(home, home.path(), &all).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_flow_waits_through_pending_then_stores_a_private_oauth_entry() {
    let auth = FakeAuthServer::start(FakeAuthConfig {
        polls: vec![
            DevicePoll::Pending,
            DevicePoll::Pending,
            DevicePoll::Granted,
        ],
        copilot_api: "https://copilot.example.test".into(),
        ..FakeAuthConfig::default()
    })
    .await;
    let home = TempHome::new();
    settings_for(&home, &auth, "http://localhost:1/auth/callback");

    let out = login(&home, &["github-copilot"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("ABCD-1234"), "{}", out.stderr);
    assert!(
        out.stderr.contains("https://github.com/login/device"),
        "{}",
        out.stderr
    );
    let log = auth.log();
    assert_eq!(log.polls.len(), 3);
    assert_eq!(log.copilot_tokens.len(), 1);
    assert!(
        log.requests
            .contains(&"GET /api.github.com/copilot_internal/v2/token".to_string())
    );

    assert_eq!(auth_mode(&home), 0o600);
    let stored = auth_json(&home).unwrap();
    let entry = &stored["providers"]["github-copilot"]["oauth"];
    assert_eq!(entry["providerId"], "github-copilot");
    assert_eq!(entry["credentials"]["refresh"], "gho_fake_1");
    assert_eq!(
        entry["credentials"]["access"],
        log.copilot_tokens[0].as_str()
    );
    assert_eq!(
        entry["credentials"]["apiBaseUrl"],
        "https://copilot.example.test"
    );
    assert!(entry["credentials"]["expires"].as_i64().unwrap() > now_ms());

    let status = braincode(&home, home.path(), &["auth", "status"]).await;
    assert_eq!(status.code, 0);
    assert!(
        status.stdout.contains("github-copilot  oauth"),
        "{}",
        status.stdout
    );
    assert!(status.stdout.contains("expires at 20"), "{}", status.stdout);
    assert!(!status.stdout.contains("gho_fake"), "a secret was printed");
    let json_status = braincode(&home, home.path(), &["auth", "status", "--json"]).await;
    let parsed: Value = serde_json::from_str(&json_status.stdout).unwrap();
    assert_eq!(parsed["providers"][0]["kind"], "oauth");
    assert_eq!(parsed["providers"][0]["oauthProviderId"], "github-copilot");
    assert!(parsed["providers"][0]["expires"].as_i64().is_some());
    assert!(!json_status.stdout.contains("tid=copilot"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_down_makes_the_next_poll_wait_longer() {
    let auth = FakeAuthServer::start(FakeAuthConfig {
        polls: vec![DevicePoll::SlowDown, DevicePoll::Granted],
        ..FakeAuthConfig::default()
    })
    .await;
    let home = TempHome::new();
    settings_for(&home, &auth, "http://localhost:1/auth/callback");
    let out = login(&home, &["github-copilot"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let log = auth.log();
    assert_eq!(log.announced_intervals, vec![0, 1]);
    // The server asked for 1 s between polls: the second poll honoured it.
    assert!(log.polls[1] - log.polls[0] >= Duration::from_secs(1));
    assert!(out.stderr.contains("poll slower"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_and_expired_device_logins_write_nothing() {
    for (poll, words) in [
        (DevicePoll::Denied, "authorization was denied"),
        (DevicePoll::Expired, "code expired"),
    ] {
        let auth = FakeAuthServer::start(FakeAuthConfig {
            polls: vec![DevicePoll::Pending, poll],
            ..FakeAuthConfig::default()
        })
        .await;
        let home = TempHome::new();
        settings_for(&home, &auth, "http://localhost:1/auth/callback");
        let out = login(&home, &["github-copilot"]).await;
        assert_ne!(out.code, 0);
        assert!(out.stderr.contains(words), "{poll:?}: {}", out.stderr);
        assert!(out.stderr.contains("nothing was saved"), "{}", out.stderr);
        assert!(auth_json(&home).is_none(), "{poll:?} wrote auth.json");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enterprise_domain_uses_its_own_endpoints() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let home = TempHome::new();
    settings_for(&home, &auth, "http://localhost:1/auth/callback");
    let out = login(
        &home,
        &["github-copilot", "--enterprise-domain", "ghe.example.com"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = auth.log().requests;
    for expected in [
        "POST /ghe.example.com/login/device/code",
        "POST /ghe.example.com/login/oauth/access_token",
        "GET /api.ghe.example.com/copilot_internal/v2/token",
    ] {
        assert!(
            requests.iter().any(|r| r == expected),
            "{expected}: {requests:?}"
        );
    }
    assert!(
        !requests.iter().any(|r| r.contains("github.com")),
        "{requests:?}"
    );
    let stored = auth_json(&home).unwrap();
    assert_eq!(
        stored["providers"]["github-copilot"]["oauth"]["credentials"]["enterpriseUrl"],
        "ghe.example.com"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_and_unknown_providers_are_refused_with_the_way_forward() {
    let home = TempHome::new();
    let out = login(&home, &["anthropic"]).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("braincode auth set anthropic"),
        "{}",
        out.stderr
    );
    let out = login(&home, &["acme"]).await;
    assert!(
        out.stderr.contains("github-copilot, openai-codex"),
        "{}",
        out.stderr
    );
    let bad = TempHome::new();
    bad.write_settings(&json!({"auth": {"oauth": {"openai-codex": {"tokenUrl": "not a url"}}}}));
    let out = login(&bad, &["openai-codex"]).await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("auth.oauth.openai-codex.tokenUrl"),
        "{}",
        out.stderr
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What a child writes on stderr, read on a task of its own until the pipe closes.
#[derive(Debug, Clone, Default)]
struct Stderr {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    closed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Stderr {
    fn push(&self, line: &str) {
        self.text.lock().unwrap().push_str(&format!("{line}\n"));
    }

    /// What it wrote so far.
    fn now(&self) -> String {
        self.text.lock().unwrap().clone()
    }

    /// All it wrote, once the pipe closed (the child exited): the reader may still be taking
    /// the last lines when the exit is seen.
    async fn all(&self) -> String {
        for _ in 0..500 {
            if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.now()
    }
}

/// Starts `braincode auth login openai-codex`, and returns it with the authorization URL it
/// printed and its standard error.
async fn start_codex_login(home: &TempHome) -> (tokio::process::Child, String, Stderr) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(["auth", "login", "openai-codex", "--no-browser"])
        .env("BRAINCODE_HOME", home.path())
        .env("HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = Stderr::default();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stderr.push(&line);
            if let Some(url) = line.trim().strip_prefix("http") {
                return format!("http{url}");
            }
        }
        panic!("no authorization URL printed");
    })
    .await
    .unwrap();
    // Keep reading stderr so the child never blocks on a full pipe.
    let collected = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            collected.push(&line);
        }
        collected
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    });
    (child, url, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_a_waiting_login_and_writes_nothing() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let (home, _) = codex_home(&auth);
    let (child, _url, stderr) = start_codex_login(&home).await;
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().await.unwrap();
    // Cancelled by the program (exit 1 with its message), not killed by the signal.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = stderr.all().await;
    assert!(said.contains("login was cancelled"), "{said}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Logged in"));
    assert!(auth_json(&home).is_none());
    assert!(auth.log().codex_tokens.is_empty());
}

/// Follows the authorize URL like a browser: the fake server redirects to the loopback
/// callback, whose answer is returned (status, location's query altered by `tamper`).
async fn browser(url: &str, tamper: impl Fn(String) -> String) -> reqwest::StatusCode {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let reply = http.get(url).send().await.unwrap();
    assert_eq!(reply.status(), reqwest::StatusCode::FOUND);
    let location = reply.headers()["location"].to_str().unwrap().to_string();
    http.get(tamper(location)).send().await.unwrap().status()
}

fn codex_home(auth: &FakeAuthServer) -> (TempHome, String) {
    let home = TempHome::new();
    let redirect = format!("http://localhost:{}/auth/callback", free_port());
    settings_for(&home, auth, &redirect);
    (home, redirect)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pkce_login_through_the_loopback_callback_stores_tokens() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let (home, redirect) = codex_home(&auth);
    let (child, url, _) = start_codex_login(&home).await;
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("codex_cli_simplified_flow=true"), "{url}");
    assert!(
        url.contains(&format!(
            "redirect_uri={}",
            redirect.replace(':', "%3A").replace('/', "%2F")
        )),
        "{url}"
    );
    assert_eq!(browser(&url, |l| l).await, reqwest::StatusCode::OK);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let log = auth.log();
    assert_eq!(log.verifier_mismatches, 0);
    assert_eq!(
        log.codex_tokens.len(),
        1,
        "the code was exchanged once, with the right verifier"
    );
    assert_eq!(auth_mode(&home), 0o600);
    let stored = auth_json(&home).unwrap();
    let creds = &stored["providers"]["openai-codex"]["oauth"]["credentials"];
    assert_eq!(creds["access"], log.codex_tokens[0].as_str());
    assert_eq!(creds["accountId"], "acct-fake-1");
    assert!(
        creds["refresh"]
            .as_str()
            .unwrap()
            .starts_with("codex-refresh-")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pkce_wrong_state_and_denial_write_nothing() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let (home, _) = codex_home(&auth);
    let (child, url, stderr) = start_codex_login(&home).await;
    let status = browser(&url, |l| l.replace("state=", "state=forged")).await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST);
    let out = child.wait_with_output().await.unwrap();
    assert!(!out.status.success());
    let said = stderr.all().await;
    assert!(said.contains("state does not match"), "{said}");
    assert!(auth_json(&home).is_none());
    assert!(
        auth.log().codex_tokens.is_empty(),
        "a forged redirect reached the token endpoint"
    );

    auth.configure(|c| c.authorize_denies = true);
    let (home, _) = codex_home(&auth);
    let (mut child, url, stderr) = start_codex_login(&home).await;
    assert_eq!(browser(&url, |l| l).await, reqwest::StatusCode::BAD_REQUEST);
    let status = child.wait().await.unwrap();
    assert!(!status.success());
    let said = stderr.all().await;
    assert!(
        said.contains("authorization was denied (denied by user)"),
        "{said}"
    );
    assert!(auth_json(&home).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasted_redirect_url_completes_the_login() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let (home, redirect) = codex_home(&auth);
    // Another program holds the redirect port: the login says so and takes a pasted URL.
    let port = redirect
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let _busy = std::net::TcpListener::bind(format!("127.0.0.1:{port}")).unwrap();
    let (mut child, url, stderr) = start_codex_login(&home).await;
    let said = stderr.now();
    assert!(
        said.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{said}"
    );
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let reply = http.get(&url).send().await.unwrap();
    let location = reply.headers()["location"].to_str().unwrap().to_string();
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, format!("{location}\n").as_bytes())
        .await
        .unwrap();
    let status = child.wait().await.unwrap();
    assert!(status.success());
    let stored = auth_json(&home).unwrap();
    assert_eq!(
        stored["providers"]["openai-codex"]["oauth"]["credentials"]["accountId"],
        "acct-fake-1"
    );
}

/// A home whose one model is `github-copilot/any` (no baseUrl: the login's API base), with
/// an expired Copilot login whose GitHub token `gho_old` the fake server accepts.
fn expired_copilot_home(home: &TempHome, auth: &FakeAuthServer, server: &ScriptedServer) {
    configure_one_model(home, server);
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("models.json")).unwrap())
            .unwrap();
    let entry = &mut models["models"][0];
    entry["provider"] = json!("github-copilot");
    entry.as_object_mut().unwrap().remove("baseUrl");
    home.write_json("models.json", &models);
    home.write_settings(&json!({
        "version": 1, "mode": "auto", "defaultBrainId": "test",
        "auth": {"oauth": auth.oauth_settings("http://localhost:1/auth/callback")},
    }));
    home.write_json(
        "auth.json",
        &json!({"providers": {"github-copilot": {"oauth": {
            "providerId": "github-copilot",
            "credentials": {"refresh": "gho_old", "access": "tid=stale", "expires": now_ms() - 1000}
        }}}}),
    );
    std::fs::set_permissions(
        home.path().join("auth.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    auth.accept_github_token("gho_old");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_login_is_renewed_before_the_run_calls_the_model() {
    let server = hello_server().await;
    let auth = FakeAuthServer::start(FakeAuthConfig {
        copilot_api: server.base_url(),
        ..FakeAuthConfig::default()
    })
    .await;
    let home = TempHome::new();
    expired_copilot_home(&home, &auth, &server);
    let repo = TempRepo::new();

    let report = run_json(&home, repo.path(), &[], "say hello", &[]).await;
    assert!(report.to_string().contains("hello!"), "{report}");
    let log = auth.log();
    assert_eq!(
        log.copilot_tokens.len(),
        1,
        "renewed once for the whole run"
    );
    let fresh = &log.copilot_tokens[0];
    let requests = server.chat_requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {fresh}").as_str())
        );
        assert!(request.header("editor-version").is_some());
        assert_eq!(
            request.header("copilot-integration-id"),
            Some("vscode-chat")
        );
        assert_eq!(request.path, "/v1/chat/completions");
    }
    assert_eq!(auth_mode(&home), 0o600);
    let stored = auth_json(&home).unwrap();
    let creds = &stored["providers"]["github-copilot"]["oauth"]["credentials"];
    assert_eq!(creds["access"], fresh.as_str());
    assert_eq!(creds["refresh"], "gho_old");
    assert!(creds["expires"].as_i64().unwrap() > now_ms());

    let doctor = braincode(&home, repo.path(), &["doctor"]).await;
    assert!(
        doctor.stdout.contains("github-copilot subscription login"),
        "{}",
        doctor.stdout
    );
    assert!(
        !doctor
            .stdout
            .contains("no API key for provider github-copilot"),
        "{}",
        doctor.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_renewal_says_to_log_in_again() {
    let server = hello_server().await;
    let auth = FakeAuthServer::start(FakeAuthConfig {
        copilot_api: server.base_url(),
        copilot_refuses: true,
        ..FakeAuthConfig::default()
    })
    .await;
    let home = TempHome::new();
    expired_copilot_home(&home, &auth, &server);
    let before = std::fs::read_to_string(home.path().join("auth.json")).unwrap();
    let repo = TempRepo::new();
    // Run directly: a client that cannot be built leaves no reply for a replay to compare.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(["run", "--json", "--heuristic", "say hello"])
        .current_dir(repo.path())
        .env("BRAINCODE_HOME", home.path())
        .env("HOME", home.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("run `braincode auth login github-copilot` again"),
        "{all}"
    );
    assert!(server.chat_requests().is_empty(), "a stale token was sent");
    assert_eq!(
        std::fs::read_to_string(home.path().join("auth.json")).unwrap(),
        before
    );
}
