//! Fleet commands against servers that ask for nkeys and for JWT credentials (operator mode),
//! on real `nats-server`s: the right key or `.creds` file reaches the fleet (a worker runs a
//! submitted task), a wrong one is refused, and a file that is missing or is not what it
//! should be is named in the error.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use super::fleet::{model_server, spawn_worker_with, task_line, worker_home};
use crate::run_harness::{self, braincode};
use base64::Engine;
use braincode_fleet::{TaskState, TaskStatus};
use braincode_test_support::{NatsServer, TempHome};
use nkeys::KeyPair;
use serde_json::{Value, json};

/// `braincode fleet <args>` on `url`, with `auth` (the credential flags).
async fn fleet(home: &TempHome, url: &str, auth: &[&str], args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["fleet"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--nats", url]);
    all.extend_from_slice(auth);
    let out = braincode(home, home.path(), &all).await;
    (out.code, out.stdout, out.stderr)
}

/// Submits one read-only task with `auth`, a worker with the same credentials runs it; its
/// final state.
async fn one_task_through(url: &str, auth: &[&str]) -> TaskState {
    let server = model_server(Duration::ZERO, Duration::ZERO).await;
    let repo = run_harness::repo();
    let home = worker_home(&server);
    let mut worker = spawn_worker_with(&home, url, "keyed", 1, auth);
    let submitter = TempHome::new();
    let file = submitter.path().join("tasks.jsonl");
    std::fs::write(&file, task_line(repo.path(), "is the token check right?")).unwrap();
    let (code, stdout, stderr) = fleet(
        &submitter,
        url,
        auth,
        &[
            "submit",
            "--file",
            file.to_str().unwrap(),
            "--wait",
            "--json",
        ],
    )
    .await;
    worker.kill().await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let mut states: Vec<TaskState> = serde_json::from_str(&stdout).unwrap();
    states.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nkey_user_reaches_the_fleet_with_its_seed_file_and_a_wrong_seed_is_refused() {
    let keys = tempfile::tempdir().unwrap();
    let user = KeyPair::new_user();
    let stranger = KeyPair::new_user();
    let seed_file = keys.path().join("user.nk");
    let stranger_file = keys.path().join("stranger.nk");
    std::fs::write(&seed_file, format!("{}\n", user.seed().unwrap())).unwrap();
    std::fs::write(&stranger_file, format!("{}\n", stranger.seed().unwrap())).unwrap();
    let config = keys.path().join("nkey.conf");
    std::fs::write(
        &config,
        format!(
            "authorization {{ users = [ {{ nkey: \"{}\" }} ] }}\n",
            user.public_key()
        ),
    )
    .unwrap();
    let nats = NatsServer::start_with(&["-c", config.to_str().unwrap()]);
    let url = nats.url();

    let state = one_task_through(&url, &["--nats-nkey", seed_file.to_str().unwrap()]).await;
    assert_eq!(state.status, TaskStatus::Done, "{state:?}");
    assert_eq!(state.worker.as_deref(), Some("keyed"));

    let home = TempHome::new();
    let stranger_seed = stranger.seed().unwrap();
    let (code, _, stderr) = fleet(
        &home,
        &url,
        &["--nats-nkey", stranger_file.to_str().unwrap()],
        &["list"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(stderr.contains("refused the credentials"), "{stderr}");
    assert!(stderr.contains("--nats-nkey"), "{stderr}");
    assert!(
        !stderr.contains(&stranger_seed),
        "the seed is not echoed: {stderr}"
    );
    // No key at all: the server asks for one.
    let (code, _, stderr) = fleet(&home, &url, &[], &["list"]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("refused the credentials"), "{stderr}");

    // A seed file that is missing, holds no seed, or a broken one: the file is named.
    let missing = keys.path().join("missing.nk");
    let empty = keys.path().join("empty.nk");
    std::fs::write(&empty, "# no seed here\n").unwrap();
    let broken = keys.path().join("broken.nk");
    let mut corrupt = user.seed().unwrap();
    corrupt.replace_range(10..14, "AAAA");
    std::fs::write(&broken, &corrupt).unwrap();
    for (file, says) in [
        (&missing, "No such file"),
        (&empty, "holds no seed"),
        (&broken, "holds no valid nkey seed"),
    ] {
        let (code, _, stderr) = fleet(
            &home,
            &url,
            &["--nats-nkey", file.to_str().unwrap()],
            &["list"],
        )
        .await;
        assert_eq!(code, 1);
        assert!(
            stderr.contains(&format!("the nkey seed file {}", file.display()))
                && stderr.contains(says),
            "{stderr}"
        );
        assert!(
            !stderr.contains(&corrupt),
            "the seed is not echoed: {stderr}"
        );
    }
}

/// A JWT (`ed25519-nkey`) with `claims`, signed by `issuer`.
fn jwt(issuer: &KeyPair, subject: &str, name: &str, nats: Value) -> String {
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let header = b64(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#);
    let iat = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = json!({
        "jti": uuid_like(subject),
        "iat": iat,
        "iss": issuer.public_key(),
        "name": name,
        "sub": subject,
        "nats": nats,
    });
    let body = b64(claims.to_string().as_bytes());
    let signature = issuer.sign(format!("{header}.{body}").as_bytes()).unwrap();
    format!("{header}.{body}.{}", b64(&signature))
}

/// A claim id (any unique text; servers do not check how it was made).
fn uuid_like(subject: &str) -> String {
    format!("{}{}", &subject[..8], std::process::id())
}

/// An account's claims with JetStream allowed and nothing else limited.
fn account_claims() -> Value {
    json!({
        "type": "account",
        "version": 2,
        "limits": {
            "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
            "wildcards": true, "conn": -1, "leaf": -1,
            "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1
        }
    })
}

/// A `.creds` file (as `nsc generate creds` writes) for `user`, whose JWT `account` signed.
fn creds(path: &Path, account: &KeyPair, user: &KeyPair) {
    let user_jwt = jwt(
        account,
        &user.public_key(),
        "fleet-user",
        json!({"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1}),
    );
    let text = format!(
        "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
         ************************* IMPORTANT *************************\n\
         NKEY Seed printed below can be used to sign and prove identity.\n\n\
         -----BEGIN USER NKEY SEED-----\n{}\n------END USER NKEY SEED------\n\n\
         *************************************************************\n",
        user.seed().unwrap()
    );
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creds_file_reaches_an_operator_mode_server_and_a_bad_one_is_named() {
    // An operator, a system account and an account with JetStream, preloaded in the server.
    let operator = KeyPair::new_operator();
    let system = KeyPair::new_account();
    let account = KeyPair::new_account();
    let operator_jwt = jwt(
        &operator,
        &operator.public_key(),
        "test-operator",
        json!({"type": "operator", "version": 2}),
    );
    let system_jwt = jwt(
        &operator,
        &system.public_key(),
        "SYS",
        json!({"type": "account", "version": 2}),
    );
    let account_jwt = jwt(&operator, &account.public_key(), "fleet", account_claims());
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("operator.conf");
    std::fs::write(
        &config,
        format!(
            "operator: \"{operator_jwt}\"\nsystem_account: \"{sys}\"\nresolver: MEMORY\nresolver_preload: {{\n  {sys}: \"{system_jwt}\"\n  {acc}: \"{account_jwt}\"\n}}\n",
            sys = system.public_key(),
            acc = account.public_key(),
        ),
    )
    .unwrap();
    let nats = NatsServer::start_with(&["-c", config.to_str().unwrap()]);
    let url = nats.url();
    let good = dir.path().join("fleet.creds");
    creds(&good, &account, &KeyPair::new_user());

    let state = one_task_through(&url, &["--nats-creds", good.to_str().unwrap()]).await;
    assert_eq!(state.status, TaskStatus::Done, "{state:?}");

    // A user of an account the operator never signed is refused.
    let home = TempHome::new();
    let stranger = dir.path().join("stranger.creds");
    creds(&stranger, &KeyPair::new_account(), &KeyPair::new_user());
    let (code, _, stderr) = fleet(
        &home,
        &url,
        &["--nats-creds", stranger.to_str().unwrap()],
        &["list"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(stderr.contains("refused the credentials"), "{stderr}");

    // A file that is missing, or is not a .creds file: the file is named, and what to give.
    let missing = dir.path().join("missing.creds");
    let malformed = dir.path().join("malformed.creds");
    std::fs::write(&malformed, "this is not a creds file\n").unwrap();
    for (file, says) in [(&missing, "No such file"), (&malformed, "cannot parse")] {
        let (code, _, stderr) = fleet(
            &home,
            &url,
            &["--nats-creds", file.to_str().unwrap()],
            &["list"],
        )
        .await;
        assert_eq!(code, 1);
        assert!(
            stderr.contains(&format!("the credentials file {}", file.display()))
                && stderr.contains(says)
                && stderr.contains("nsc generate creds"),
            "{stderr}"
        );
    }
}
