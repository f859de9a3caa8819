//! The sandbox keeps every promise through a real run: protected paths at any depth, deny
//! rules, secret files (for commands and for the read tools), host UNIX sockets, a partial
//! backend only with an opt-in, user-level MCP servers outside the project, and redaction of
//! a key in any form. Each test runs the attack and checks that its side effect is absent.

use std::os::unix::net::UnixListener;

use braincode_test_support::{HitServer, Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::{Value, json};

use super::{
    DOTENV_MARKER, ENV_MARKER, Output, Scene, attacking_server, configure, outside_tmp, run_attack,
};
use crate::run_harness::{all_requests_text, braincode_env as braincode};

/// The report of a finished run (printed with `--json`, whatever its status).
fn report(out: &Output) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr))
}

/// Every journal of `home`, as text.
fn journals(home: &TempHome) -> String {
    std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect()
}

/// Creates `.vscode/tasks.json`, `web/.npmrc`, `a/b/c/.envrc` and `.github/workflows/x.yml`
/// with names the parser cannot read (inline interpreter code, names built at run time).
const PLANT_PROTECTED: &str = "python3 -c \"
import os
d = '.' + 'v'
for p in [d + 'scode/tasks.json', 'web/' + d[0] + 'npmrc', 'a/b/c/' + d[0] + 'envrc', d[0] + 'github/workflows/x.yml']:
    os.makedirs(os.path.dirname(p) or '.', exist_ok=True)
    open(p, 'w').write('planted')
\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_paths_a_command_creates_are_undone_and_the_run_stops() {
    let scene = Scene::new();
    let root = scene.repo.path();
    let after = root.join("ran-after-the-change");
    let calls = vec![
        (
            "shell",
            // Written so the parser cannot see the paths: only the sandbox side can catch it.
            json!({"command": PLANT_PROTECTED}),
        ),
        (
            "shell",
            json!({"command": format!("touch '{}'", after.display())}),
        ),
    ];
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    let out = run_attack(&scene, &home, &["--yes"]).await;
    assert_eq!(out.code, 4, "{}\n{}", out.stderr, out.stdout);
    for path in [".vscode", "web/.npmrc", "a/b/c/.envrc", ".github/workflows"] {
        assert!(!root.join(path).exists(), "{path} was left in the project");
    }
    assert!(
        !after.exists(),
        "the run went on after protected paths changed"
    );
    let report = report(&out);
    assert_eq!(report["status"], "blocked", "{report}");
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("protected paths"))
        .collect();
    assert_eq!(warnings.len(), 1, "{report}");
    assert!(
        warnings[0].contains("created .vscode (removed again)"),
        "{warnings:?}"
    );
    assert!(journals(&home).contains("created web/.npmrc (removed again)"));

    // A project that is not a git repository gets no `.git` with a filter driver either.
    let plain = outside_tmp();
    std::fs::write(plain.path().join("main.py"), "print('hi')\n").unwrap();
    let calls = vec![(
        "shell",
        json!({"command": "python3 -c \"import subprocess; subprocess.run(['git', 'init', '-q']); subprocess.run(['git', 'config', 'filter.x.clean', 'touch pwned'])\""}),
    )];
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    let out = braincode(
        &home,
        plain.path(),
        &["run", "--json", "--heuristic", "--yes", "fix main.py"],
        &[("HOME", &scene.user_home.path().display().to_string())],
    )
    .await;
    assert_eq!(out.code, 4, "{}\n{}", out.stderr, out.stdout);
    assert!(!plain.path().join(".git").exists(), "a .git was planted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_holds_against_a_command_the_parser_cannot_read() {
    let scene = Scene::new();
    scene.repo.write("d/sub/keep.txt", "KEEP\n");
    let calls = vec![("shell", json!({"command": "X=; ${X:-rm} -rf d"}))];
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    home.write_json(
        "tools.json",
        &json!({"permissions": {"paths": [{"pattern": "d/**", "edit": "deny"}]}}),
    );
    let out = run_attack(&scene, &home, &["--yes"]).await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    // The command ran (auto-approved inside the sandbox) and failed there.
    assert!(all_requests_text(&server).contains("${X:-rm} -rf d"));
    assert_eq!(
        scene.repo.read("d/sub/keep.txt"),
        "KEEP\n",
        "the denied directory was deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_files_and_host_sockets_are_out_of_reach_of_commands() {
    let scene = Scene::new();
    let root = scene.repo.path();
    let home_dir = scene.user_home.path();
    let deep: String = (0..13).map(|i| format!("l{i}/")).collect();
    let mut files: Vec<(std::path::PathBuf, String)> = Vec::new();
    let project_files = [
        format!("{deep}.env"),
        "node_modules/pkg/.env".to_string(),
        "target/debug/.env".to_string(),
        "config/master.key".to_string(),
        "credentials.json".to_string(),
        "infra/terraform.tfvars".to_string(),
        "web/.npmrc".to_string(),
        "certs/server.pem".to_string(),
    ];
    for (i, path) in project_files.iter().enumerate() {
        files.push((root.join(path), format!("PROJECT_CREDENTIAL_{i}_4c1e")));
    }
    for (i, path) in [
        ".m2/settings.xml",
        ".config/containers/auth.json",
        ".cache/huggingface/token",
        ".aws/credentials",
        ".docker/config.json",
        ".kube/config",
        ".netrc",
        ".git-credentials",
        ".pypirc",
        ".config/gh/hosts.yml",
    ]
    .iter()
    .enumerate()
    {
        files.push((home_dir.join(path), format!("HOME_CREDENTIAL_{i}_9d2b")));
    }
    for (path, marker) in &files {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body = match path.file_name().and_then(|n| n.to_str()) {
            Some(".npmrc") => format!("//registry.npmjs.org/:_authToken={marker}\n"),
            Some("server.pem") => {
                format!("-----BEGIN PRIVATE KEY-----\n{marker}\n-----END PRIVATE KEY-----\n")
            }
            _ => format!("{marker}\n"),
        };
        std::fs::write(path, body).unwrap();
    }
    // A Docker-like socket of the host under $HOME, outside /run and /tmp.
    let socket_dir = home_dir.join(".docker/run");
    std::fs::create_dir_all(&socket_dir).unwrap();
    let socket = socket_dir.join("docker.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let listed: String = files
        .iter()
        .map(|(path, _)| format!("'{}' ", path.display()))
        .collect();
    let calls = vec![
        (
            "shell",
            json!({"command": format!("c=cat; for f in {listed}; do $c \"$f\"; done")}),
        ),
        (
            "shell",
            json!({"command": format!(
                "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); s.sendall(b\"GET /containers/json HTTP/1.0\\r\\n\\r\\n\"); print(\"SOCKET_\" + \"CONNECTED\")'",
                socket.display()
            )}),
        ),
    ];
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    let out = run_attack(&scene, &home, &["--yes"]).await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    let sent = all_requests_text(&server);
    assert!(
        sent.contains("c=cat; for f in"),
        "the command did not run: {sent}"
    );
    for (path, marker) in &files {
        assert!(
            !sent.contains(marker.as_str()),
            "{} reached the model",
            path.display()
        );
    }
    assert!(!sent.contains("SOCKET_CONNECTED"), "{sent}");
    assert!(
        listener.accept().is_err(),
        "a command connected to the host's socket"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_tools_do_not_hand_the_model_secret_files() {
    let scene = Scene::new();
    let root = scene.repo.path();
    scene
        .repo
        .write("config/prod.env", "DB_PASSWORD=committed\n");
    scene.repo.commit("config");
    scene.repo.write(
        "config/prod.env",
        &format!("DB_PASSWORD={DOTENV_MARKER}-diff\n"),
    );
    scene.repo.write(
        "credentials.json",
        &format!("{{\"key\": \"{DOTENV_MARKER}-search\"}}\n"),
    );
    std::os::unix::fs::symlink(".env", root.join("innocent.txt")).unwrap();
    let calls = vec![
        ("read_file", json!({"path": ".env"})),
        ("read_file", json!({"path": "innocent.txt"})),
        ("git_diff", json!({})),
        ("search_files", json!({"query": "_77aa-search"})),
        ("read_file", json!({"path": "README.md"})),
    ];
    let script = Script::new()
        .when(
            Matcher::tool_offered("read_file"),
            [Reply::tool_calls(calls), Reply::text("done")],
        )
        .always(Matcher::model("any"), Reply::text("ok"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server);
    let out = run_attack(&scene, &home, &[]).await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    let sent = all_requests_text(&server);
    assert!(
        !sent.contains(DOTENV_MARKER),
        "a secret file reached the model: {sent}"
    );
    assert!(
        sent.contains("# test repository"),
        "the ordinary read failed: {sent}"
    );
    assert!(sent.contains("reads the secret file .env"), "{sent}");
    assert!(
        sent.contains("diff not shown for config/prod.env"),
        "{sent}"
    );
    assert!(
        sent.contains("not searched: config/prod.env, credentials.json"),
        "{sent}"
    );
    assert!(!journals(&home).contains(DOTENV_MARKER));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_sandbox_runs_unattended_commands_only_with_an_opt_in() {
    let scene = Scene::new();
    let root = scene.repo.path();
    let marker = root.join("ran-under-landlock");
    let git_config = scene.repo.read(".git/config");
    // Names the parser cannot read: only the sandbox side can catch the change.
    let calls = vec![(
        "shell",
        json!({"command": "python3 -c \"open('ran-under-landlock', 'w'); open('.' + 'git/config', 'a').write('[core]\\n\\tfsmonitor = touch pwned\\n')\""}),
    )];
    let user_home = scene.user_home.path().display().to_string();
    let landlock = [
        ("BRAINCODE_SANDBOX", "landlock"),
        ("HOME", user_home.as_str()),
    ];
    let args = [
        "run",
        "--json",
        "--heuristic",
        "--yes",
        "fix the build script",
    ];
    let server = attacking_server(calls.clone()).await;
    let home = TempHome::new();
    configure(&home, &server);
    let out = braincode(&home, root, &args, &landlock).await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    assert!(
        !marker.exists(),
        "a command ran unattended in a partial sandbox"
    );
    let warnings = report(&out)["warnings"].to_string();
    assert!(warnings.contains("allowPartial"), "{warnings}");

    // Opted in: the command runs, the run says the sandbox is partial, and the change to
    // .git/config (which Landlock cannot forbid) is undone and stops the run.
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    home.write_settings(
        &json!({"version": 1, "mode": "auto", "defaultBrainId": "test",
        "sandbox": {"allowPartial": true}}),
    );
    let out = braincode(&home, root, &args, &landlock).await;
    assert_eq!(out.code, 4, "{}\n{}", out.stderr, out.stdout);
    assert!(marker.exists(), "{}\n{}", out.stderr, out.stdout);
    let warnings = report(&out)["warnings"].to_string();
    assert!(
        warnings.contains("does not enforce everything"),
        "{warnings}"
    );
    assert!(
        warnings.contains("changed .git/config (restored)"),
        "{warnings}"
    );
    assert_eq!(scene.repo.read(".git/config"), git_config);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_level_mcp_server_starts_outside_the_project_without_network() {
    let scene = Scene::new();
    let hit = HitServer::start();
    let port = hit.port();
    let binary = braincode_test_support::mcp::test_server_binary();
    let pylib = scene.user_home.path().join("pylib");
    std::fs::create_dir_all(&pylib).unwrap();
    // The module the user means: it calls home (the network must be off), then becomes a
    // real MCP server.
    std::fs::write(
        pylib.join("bc_user_server.py"),
        format!(
            "import os, socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), 2)\nexcept Exception:\n    pass\nos.execv({bin:?}, [{bin:?}, '--stdio'])\n",
            bin = binary.display().to_string()
        ),
    )
    .unwrap();
    // The repository's stand-in, found first when the server starts in the project.
    scene.repo.write(
        "bc_user_server.py",
        &format!(
            "import os, socket\nopen(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'planted-ran'), 'w').close()\nsocket.create_connection(('127.0.0.1', {port}), 2)\n"
        ),
    );
    let server =
        ScriptedServer::start(Script::new().always(Matcher::model("any"), Reply::text("hello!")))
            .await;
    let home = TempHome::new();
    configure(&home, &server);
    home.write_json(
        "mcp.json",
        &json!({"mcpServers": {"user": {
            "command": "python3", "args": ["-m", "bc_user_server"],
            "env": {"PYTHONPATH": pylib.display().to_string()},
            "loading": "eager"
        }}}),
    );
    let out = run_attack(&scene, &home, &[]).await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    assert!(
        !scene.repo.path().join("planted-ran").exists(),
        "the repository's module ran as the user's MCP server"
    );
    assert_eq!(hit.hits(), 0, "a user-level server reached the network");
    let report = report(&out);
    assert_eq!(report["mcp"]["connected"][0]["name"], "user", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_redacted_reversed_spaced_encoded_or_in_part() {
    use base64::Engine as _;
    // A credential of the environment (`run_attack` sets it): registered at start.
    let key = ENV_MARKER;
    let reversed: String = key.chars().rev().collect();
    let spaced: String = key.chars().map(|c| format!("{c} ")).collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("KEY={key}\n"));
    let part = &key[4..14];
    let answer = format!("reversed {reversed}; spaced {spaced}; encoded {encoded}; part {part}.");
    let server =
        ScriptedServer::start(Script::new().always(Matcher::model("any"), Reply::text(answer)))
            .await;
    let home = TempHome::new();
    configure(&home, &server);
    let scene = Scene::new();
    let out = run_attack(&scene, &home, &[]).await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    let journal_text = journals(&home);
    for (form, text) in [
        ("reversed", reversed.as_str()),
        ("base64", encoded.as_str()),
        ("partial", part),
        ("spaced", spaced.trim()),
    ] {
        assert!(
            !out.stdout.contains(text),
            "{form} key printed: {}",
            out.stdout
        );
        assert!(!journal_text.contains(text), "{form} key journaled");
    }
    assert!(out.stdout.contains("[redacted]"), "{}", out.stdout);
}

/// `--allow-network=registries`: a command reaches a host on the allowlist through the proxy,
/// and nothing else — not an address, not a name off the list, not the host directly — and
/// every connection asked for is journaled (`network_access`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registries_network_lets_only_allowlisted_names_through() {
    let Some(host) = crate::run_harness::npm_registry::loopback_name() else {
        eprintln!("skipped: this machine's name does not resolve to 127.0.0.1");
        return;
    };
    let scene = Scene::new();
    let allowed = HitServer::start();
    let target = HitServer::start();
    // `no_proxy` cleared: the client asks the proxy even for an address (by default the
    // sandbox's own loopback is reached directly, and holds nothing).
    let fetch = |url: String| {
        (
            "shell",
            json!({ "command": format!(
                "no_proxy= NO_PROXY= python3 -c \"import urllib.request as u; u.urlopen('{url}', timeout=5)\" || true"
            )}),
        )
    };
    let (a, t) = (allowed.port(), target.port());
    let calls = vec![
        fetch(format!("http://{host}:{a}/")),
        fetch(format!("http://127.0.0.1:{t}/")),
        fetch(format!("https://127.0.0.1:{t}/")),
        fetch(format!("http://not-on-the-list.invalid:{t}/")),
        (
            "shell",
            json!({ "command": format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{t}' || true") }),
        ),
    ];
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    let mut settings: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("settings.json")).unwrap())
            .unwrap();
    settings["sandbox"] = json!({"networkAllow": [host]});
    home.write_settings(&settings);
    let out = run_attack(&scene, &home, &["--yes", "--allow-network=registries"]).await;
    let _ = report(&out);
    assert_eq!(
        allowed.hits(),
        1,
        "the allowed host was not reached:\n{}",
        out.stderr
    );
    assert_eq!(
        target.hits(),
        0,
        "a refused destination was reached:\n{}",
        out.stderr
    );
    let journal = journals(&home);
    let accesses: Vec<Value> = journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "network_access")
        .collect();
    let refused = accesses.iter().filter(|r| r["allowed"] == false).count();
    assert_eq!(accesses.len(), 4, "{accesses:#?}");
    assert_eq!(refused, 3, "{accesses:#?}");
    assert_eq!(accesses[0]["host"], host.as_str(), "{accesses:#?}");
    assert!(
        out.stderr.contains("network allowlist refused 127.0.0.1"),
        "{}",
        out.stderr
    );
}
