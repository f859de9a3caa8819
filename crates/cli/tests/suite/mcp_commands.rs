//! `braincode mcp list|test|tools` and `braincode doctor --mcp` against real MCP server
//! processes (the test server), with a temporary home and project. No network.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use braincode_test_support::TempHome;
use braincode_test_support::mcp::test_server_binary;
use serde_json::{Value, json};

/// An env value that must never be printed.
const SECRET: &str = "sk-mcp-test-secret-0123456789";

struct Setup {
    home: TempHome,
    project: tempfile::TempDir,
}

impl Setup {
    /// A home with three user servers: `good` (works), `broken` (exits 7 at start) and `off`
    /// (disabled).
    fn new() -> Self {
        let bin = test_server_binary();
        let home = TempHome::new();
        home.write_json(
            "mcp.json",
            &json!({"mcpServers": {
                "good": {"command": bin, "args": ["--stdio"], "env": {"SERVICE_API_KEY": SECRET}},
                "broken": {"command": bin, "env": {"MCP_TEST_EXIT_AT_START": "7"}},
                "off": {"command": bin, "disabled": true},
            }}),
        );
        Self {
            home,
            project: tempfile::tempdir().unwrap(),
        }
    }

    /// Only a home with no servers.
    fn empty() -> Self {
        Self {
            home: TempHome::new(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let (name, value) = self.home.env();
        Command::new(env!("CARGO_BIN_EXE_braincode"))
            .args(args)
            .arg("--project")
            .arg(self.project.path())
            .env(name, value)
            .env_remove("BRAINCODE_LOG")
            .output()
            .unwrap()
    }

    /// A project `.mcp.json` whose server would create `marker` if it ever ran.
    fn untrusted_project_server(&self) -> PathBuf {
        let marker = self.project.path().join("server-ran");
        let script = format!("touch '{}'", marker.display());
        std::fs::write(
            self.project.path().join(".mcp.json"),
            json!({"mcpServers": {"repo": {"command": "sh", "args": ["-c", script]}}}).to_string(),
        )
        .unwrap();
        marker
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn all(output: &Output) -> String {
    format!(
        "{}{}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", all(output)))
}

fn server<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {list}"))
}

fn assert_no_secret(text: &str) {
    assert!(!text.contains(SECRET), "an env value was printed: {text}");
}

#[test]
fn list_checks_every_server_and_fails_when_one_fails() {
    let setup = Setup::new();
    let out = setup.run(&["mcp", "list"]);
    let text = all(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("✓ good  user    stdio  ok · braincode-mcp-test-server"),
        "{text}"
    );
    assert!(text.contains("8 tools"), "{text}");
    assert!(text.contains("✗ broken  user    stdio  failed"), "{text}");
    assert!(text.contains("exited with code 7"), "{text}");
    assert!(text.contains("refusing to start: bad config"), "{text}");
    assert!(
        text.contains("→ run the server's command by hand"),
        "{text}"
    );
    assert!(
        text.contains("– off  user    stdio  skipped: disabled in its config"),
        "{text}"
    );
    // Names of variables, never their values.
    assert!(text.contains("env: SERVICE_API_KEY"), "{text}");
    assert_no_secret(&text);
    assert!(
        text.contains("3 server(s): 1 ok, 1 failed, 1 skipped"),
        "{text}"
    );
}

#[test]
fn list_json_gives_status_version_tools_and_fix() {
    let setup = Setup::new();
    let out = setup.run(&["mcp", "list", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert_no_secret(&all(&out));
    let list = json_of(&out);
    assert_eq!(list["connected"], true);
    assert_eq!(list["servers"].as_array().unwrap().len(), 3);
    let good = server(&list, "good");
    assert_eq!(good["status"], "ok");
    assert_eq!(good["scope"], "user");
    assert_eq!(good["transport"], "stdio");
    assert_eq!(good["serverName"], "braincode-mcp-test-server");
    assert!(good["serverVersion"].is_string(), "{good}");
    assert!(good["protocolVersion"].is_string(), "{good}");
    assert_eq!(good["toolCount"], 8);
    assert!(good["latencyMs"].is_u64(), "{good}");
    assert_eq!(good["env"], json!(["SERVICE_API_KEY"]));
    let broken = server(&list, "broken");
    assert_eq!(broken["status"], "failed");
    assert!(
        broken["error"].as_str().unwrap().contains("code 7"),
        "{broken}"
    );
    assert!(broken["fix"].is_string(), "{broken}");
    let off = server(&list, "off");
    assert_eq!(off["status"], "skipped");
    assert_eq!(off["reason"], "disabled in its config");
}

#[test]
fn list_no_connect_starts_nothing_and_exits_0() {
    let setup = Setup::empty();
    let marker = setup.project.path().join("user-server-ran");
    setup.home.write_json(
        "mcp.json",
        &json!({"mcpServers": {"u": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]}}}),
    );
    let out = setup.run(&["mcp", "list", "--no-connect", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let list = json_of(&out);
    assert_eq!(list["connected"], false);
    assert_eq!(server(&list, "u")["status"], "not_checked");
    assert!(!marker.exists(), "--no-connect started a server");
}

#[test]
fn list_without_servers_says_where_to_add_them() {
    let setup = Setup::empty();
    let out = setup.run(&["mcp", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    assert!(
        stdout(&out).contains("no MCP servers configured"),
        "{}",
        all(&out)
    );
}

#[test]
fn test_connects_to_one_server() {
    let setup = Setup::new();
    let out = setup.run(&["mcp", "test", "good"]);
    let text = all(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("✓ good"), "{text}");
    assert!(text.contains("8 tools"), "{text}");
    assert!(text.contains(" ms"), "{text}");
    assert!(
        !text.contains("broken"),
        "only the named server is tested: {text}"
    );

    let out = setup.run(&["mcp", "test", "broken", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let row = json_of(&out);
    assert_eq!(row["status"], "failed");
    assert!(row["error"].as_str().unwrap().contains("code 7"), "{row}");
    assert!(row["fix"].is_string(), "{row}");
}

#[test]
fn test_unknown_name_lists_the_configured_ones() {
    let setup = Setup::new();
    let out = setup.run(&["mcp", "test", "nope"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(err.contains("no MCP server named \"nope\""), "{err}");
    assert!(
        err.contains("good") && err.contains("broken") && err.contains("off"),
        "{err}"
    );
}

#[test]
fn tools_shows_names_agents_call_and_which_need_approval() {
    let setup = Setup::new();
    let out = setup.run(&["mcp", "tools", "good"]);
    let text = all(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    let echo = line("mcp__good__echo");
    assert!(echo.contains("read-only"), "{echo}");
    assert!(echo.contains("Returns its text."), "{echo}");
    assert!(
        line("mcp__good__write_marker").contains("needs approval"),
        "{text}"
    );
    assert!(
        !text.contains("\"properties\""),
        "schemas only with --schemas: {text}"
    );

    let out = setup.run(&["mcp", "tools", "good", "--schemas", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    let value = json_of(&out);
    let tools = value["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp__good__echo")
        .unwrap();
    assert_eq!(echo["readOnly"], true);
    assert_eq!(echo["tool"], "echo");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]));
    let marker = tools
        .iter()
        .find(|t| t["name"] == "mcp__good__write_marker")
        .unwrap();
    assert_eq!(marker["readOnly"], false);
    assert_eq!(marker["approval"], "needs approval");
}

#[test]
fn an_untrusted_projects_server_is_listed_and_never_runs() {
    let setup = Setup::new();
    let marker = setup.untrusted_project_server();
    let out = setup.run(&["mcp", "list", "--json"]);
    let list = json_of(&out);
    let repo = server(&list, "repo");
    assert_eq!(repo["scope"], "project");
    assert_eq!(repo["status"], "skipped");
    assert!(
        repo["reason"].as_str().unwrap().contains("not trusted"),
        "{repo}"
    );
    assert!(
        repo["command"].as_str().unwrap().starts_with("sh -c"),
        "{repo}"
    );

    let out = setup.run(&["mcp", "test", "repo"]);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert!(all(&out).contains("not trusted"), "{}", all(&out));
    let out = setup.run(&["mcp", "tools", "repo"]);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    let out = setup.run(&["doctor", "--mcp"]);
    assert!(all(&out).contains("braincode trust"), "{}", all(&out));
    assert!(!marker.exists(), "an untrusted project's MCP server ran");
}

#[test]
fn doctor_mcp_connects_and_gives_each_problem_a_fix() {
    let setup = Setup::new();
    let out = setup.run(&["doctor", "--mcp", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", all(&out));
    assert_no_secret(&all(&out));
    let report = json_of(&out);
    let checks = report["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .all(|c| c["id"].as_str().unwrap().starts_with("mcp")),
        "--mcp shows MCP checks only: {report}"
    );
    let check = |id: &str| {
        checks
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {report}"))
    };
    assert_eq!(check("mcp:good")["status"], "ok");
    let broken = check("mcp:broken");
    assert_eq!(broken["status"], "error");
    assert!(
        broken["message"].as_str().unwrap().contains("code 7"),
        "{broken}"
    );
    assert!(
        broken["fix"].as_str().unwrap().contains("by hand"),
        "{broken}"
    );
}

#[test]
fn doctor_without_mcp_starts_nothing() {
    let setup = Setup::empty();
    let marker: &Path = &setup.project.path().join("user-server-ran");
    setup.home.write_json(
        "mcp.json",
        &json!({"mcpServers": {
            "u": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]},
            "bad": {"url": "ftp://example.invalid"},
        }}),
    );
    let out = setup.run(&["doctor", "--json"]);
    let report = json_of(&out);
    let checks = report["checks"].as_array().unwrap();
    let mcp = checks.iter().find(|c| c["id"] == "mcp").unwrap();
    assert!(
        mcp["message"]
            .as_str()
            .unwrap()
            .contains("no live connection"),
        "{mcp}"
    );
    let bad = checks.iter().find(|c| c["id"] == "mcp:bad").unwrap();
    assert_eq!(bad["status"], "warning");
    assert!(bad["fix"].is_string(), "{bad}");
    assert!(
        checks.iter().any(|c| c["id"] == "sandbox"),
        "the full doctor runs"
    );
    assert!(!marker.exists(), "doctor without --mcp started a server");
}

/// `/mcp` in the interactive session (a real pseudo-terminal): the listing appears, and the
/// background check fills in each server's status.
#[test]
fn slash_mcp_in_the_session_shows_each_servers_status() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::{Read, Write};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let setup = Setup::new();
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_braincode"));
    command.cwd(setup.project.path());
    command.env("BRAINCODE_HOME", setup.home.path());
    command.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(command).unwrap();
    drop(pair.slave);
    let screen = Arc::new(Mutex::new(vt100::Parser::new(30, 120, 0)));
    let mut reader = pair.master.try_clone_reader().unwrap();
    let shared = Arc::clone(&screen);
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                return;
            }
            shared.lock().unwrap().process(&buf[..n]);
        }
    });
    let mut writer = pair.master.take_writer().unwrap();
    // A guard against a hung session, never a timing assertion.
    let wait_for = |text: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let contents = screen.lock().unwrap().screen().contents();
            if contents.contains(text) {
                return contents;
            }
            assert!(
                Instant::now() < deadline,
                "`{text}` never appeared:\n{contents}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("Ask Braincode");
    writer.write_all(b"/mcp").unwrap();
    writer.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    writer.write_all(b"\r").unwrap();
    writer.flush().unwrap();
    // The screen is read while frames arrive: wait until every part of the listing is drawn
    // (a frame read half-applied mixes the old rows with the new).
    let mut contents = wait_for("1 ok");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !["✓ good", "✗ broken", "code 7", "– off"]
        .iter()
        .all(|part| contents.contains(part))
    {
        assert!(Instant::now() < deadline, "incomplete listing:\n{contents}");
        std::thread::sleep(Duration::from_millis(50));
        contents = screen.lock().unwrap().screen().contents();
    }
    assert_no_secret(&contents);
    writer.write_all(b"\x03\x03").unwrap();
    writer.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the session did not quit on Ctrl-C twice");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn http_servers_are_checked_and_header_values_never_shown() {
    use braincode_test_support::mcp::HttpTestServer;
    let token = "mcp-http-test-token-9876543210";
    let http = HttpTestServer::start(&[("MCP_TEST_TOKEN", token)]);
    let setup = Setup::empty();
    setup.home.write_json(
        "mcp.json",
        &json!({"mcpServers": {
            "web": {"type": "http", "url": http.url(),
                    "headers": {"Authorization": format!("Bearer {token}")}},
            "locked": {"type": "http", "url": http.url()},
        }}),
    );
    let out = setup.run(&["mcp", "list", "--json"]);
    let text = all(&out);
    assert!(!text.contains(token), "a header value was printed: {text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
    let list = json_of(&out);
    let web = server(&list, "web");
    assert_eq!(web["status"], "ok", "{web}");
    assert_eq!(web["transport"], "http");
    assert_eq!(web["headers"], json!(["Authorization"]));
    let locked = server(&list, "locked");
    assert_eq!(locked["status"], "failed", "{locked}");
    assert!(
        locked["error"].as_str().unwrap().contains("401"),
        "{locked}"
    );
    assert!(
        locked["fix"].as_str().unwrap().contains("Authorization"),
        "{locked}"
    );
}
