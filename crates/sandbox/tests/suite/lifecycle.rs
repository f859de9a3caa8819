//! Tests that need a second Braincode-like process: this test binary re-runs itself as a
//! helper (the ignored `helper` test, driven by environment variables), so the helper can die
//! for real, hold secrets in its own environment, or start with `BRAINCODE_SANDBOX` set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{
    Fixture, eventually, kill_pids, pids_with, skip, sleep_marker, test_name, unique,
};
use braincode_sandbox::{Sandbox, SandboxError, SandboxKind, SandboxPolicy, status};

const MODE: &str = "SBX_HELPER_MODE";
const KIND: &str = "SBX_HELPER_KIND";
const ARG: &str = "SBX_HELPER_ARG";
const PROJECT: &str = "SBX_HELPER_PROJECT";

fn kind_name(kind: SandboxKind) -> &'static str {
    match kind {
        SandboxKind::Bubblewrap => "bwrap",
        _ => "landlock",
    }
}

/// Not a test: the helper process. Does nothing unless started by `helper_command`.
#[test]
#[ignore = "helper process for the other tests of this file"]
fn helper() {
    let Ok(mode) = std::env::var(MODE) else {
        return;
    };
    let kind = match std::env::var(KIND).as_deref() {
        Ok("bwrap") => SandboxKind::Bubblewrap,
        _ => SandboxKind::Landlock,
    };
    let arg = std::env::var(ARG).unwrap_or_default();
    let project = PathBuf::from(std::env::var(PROJECT).unwrap_or_default());
    let mut out = std::io::stdout();
    match mode.as_str() {
        "status" => {
            let st = status();
            let new = Sandbox::new(SandboxPolicy::for_project(
                &project,
                None,
                &project.join("bc"),
            ));
            let unavailable = matches!(new, Err(SandboxError::Unavailable { .. }));
            let error = new.err().map(|e| e.to_string()).unwrap_or_default();
            writeln!(
                out,
                "HELPER kind={} unavailable={unavailable} detail={} error={error}",
                st.kind, st.detail
            )
            .unwrap();
        }
        "env" => {
            let sb = Sandbox::with_kind(
                SandboxPolicy::for_project(&project, None, &project.join("bc")),
                kind,
            )
            .unwrap();
            let args = [
                OsString::from("-c"),
                OsString::from("env; cat /proc/$PPID/environ; cat /proc/[0-9]*/environ"),
            ];
            let output = sb
                .command(OsStr::new("bash"), &args, &project)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            out.write_all(&output.stdout).unwrap();
            out.write_all(&output.stderr).unwrap();
            writeln!(out, "\nHELPER done").unwrap();
        }
        "hang" => {
            let sb = Sandbox::with_kind(
                SandboxPolicy::for_project(&project, None, &project.join("bc")),
                kind,
            )
            .unwrap();
            // Under bubblewrap a shell with a background child and a setsid escapee; under
            // Landlock (no pid namespace) the command itself.
            let mut command = if kind == SandboxKind::Bubblewrap {
                let script = format!("sleep {arg} & setsid sleep {arg} & wait");
                sb.command(
                    OsStr::new("bash"),
                    &[OsString::from("-c"), OsString::from(script)],
                    &project,
                )
            } else {
                sb.command(OsStr::new("sleep"), &[OsString::from(&arg)], &project)
            };
            command.stdin(Stdio::null()).stdout(Stdio::null());
            let mut child = command.spawn().unwrap();
            let expected = if kind == SandboxKind::Bubblewrap {
                2
            } else {
                1
            };
            assert!(eventually(Duration::from_secs(20), || sleepers(&arg).len() >= expected));
            writeln!(out, "HELPER ready").unwrap();
            out.flush().unwrap();
            // Hangs until the test kills this process; the sleeps never end on their own.
            let _ = child.wait();
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// A command that runs this binary's `helper` test in `mode`.
///
/// The helper's temp dir is a `tmp` directory beside the project, so what a killed helper
/// leaves behind (its sandbox state) goes away with the fixture.
fn helper_command(mode: &str, kind: SandboxKind, arg: &str, project: &std::path::Path) -> Command {
    let tmp = project.parent().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            test_name(module_path!(), "helper").as_str(),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(MODE, mode)
        .env(KIND, kind_name(kind))
        .env(ARG, arg)
        .env(PROJECT, project)
        .env("TMPDIR", &tmp)
        .env_remove("BRAINCODE_SANDBOX")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

fn sleepers(mark: &str) -> Vec<u32> {
    pids_with(mark)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
        .collect()
}

/// (h) When Braincode dies (SIGKILL, no cleanup), the sandboxed processes die too: under
/// bubblewrap every process of the sandbox, even one that called `setsid`; under Landlock the
/// command itself (its own children are the caller's process group's business).
fn sandbox_dies_with_braincode(kind: SandboxKind) {
    let fx = Fixture::new();
    let mark = sleep_marker();
    let mut helper = helper_command("hang", kind, &mark, &fx.project)
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(helper.stdout.take().unwrap());
    let mut ready = false;
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap_or(0) > 0 {
        if line.contains("HELPER ready") {
            ready = true;
            break;
        }
        line.clear();
    }
    assert!(ready, "{kind}: the helper did not start its sandbox");
    assert!(!sleepers(&mark).is_empty(), "{kind}: nothing to watch");
    helper.kill().unwrap();
    helper.wait().unwrap();
    let gone = eventually(Duration::from_secs(20), || sleepers(&mark).is_empty());
    let survivors = sleepers(&mark);
    kill_pids(&survivors);
    assert!(gone, "{kind}: survived Braincode's death: {survivors:?}");
}

#[test]
fn sandbox_dies_with_braincode_bwrap() {
    if !skip(SandboxKind::Bubblewrap) {
        sandbox_dies_with_braincode(SandboxKind::Bubblewrap);
    }
}

#[test]
fn sandbox_dies_with_braincode_landlock() {
    if !skip(SandboxKind::Landlock) {
        sandbox_dies_with_braincode(SandboxKind::Landlock);
    }
}

/// (i) Secret variables of Braincode's environment are not visible inside, neither in the
/// command's environment nor through `/proc/<pid>/environ`; ordinary ones are.
fn secrets_in_the_environment_stay_out(kind: SandboxKind) {
    let fx = Fixture::new();
    let secret = format!("envsecret-{}", unique());
    let output = helper_command("env", kind, "", &fx.project)
        .env("FOO_API_KEY", &secret)
        .env("GITHUB_TOKEN", &secret)
        .env("AWS_SECRET_ACCESS_KEY", &secret)
        .env("SBX_PLAIN_VALUE", format!("plain-{secret}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("HELPER done"),
        "{kind}: helper failed: {text}"
    );
    assert!(
        text.contains(&format!("SBX_PLAIN_VALUE=plain-{secret}")),
        "{kind}: plain variable missing: {text}"
    );
    let leaks = text.matches(&secret).count() - text.matches(&format!("plain-{secret}")).count();
    assert_eq!(leaks, 0, "{kind}: secret visible inside: {text}");
}

#[test]
fn secrets_in_the_environment_stay_out_bwrap() {
    if !skip(SandboxKind::Bubblewrap) {
        secrets_in_the_environment_stay_out(SandboxKind::Bubblewrap);
    }
}

#[test]
fn secrets_in_the_environment_stay_out_landlock() {
    if !skip(SandboxKind::Landlock) {
        secrets_in_the_environment_stay_out(SandboxKind::Landlock);
    }
}

fn status_line(env_value: &str) -> String {
    let fx = Fixture::new();
    let output = helper_command("status", SandboxKind::Landlock, "", &fx.project)
        .env("BRAINCODE_SANDBOX", env_value)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    // libtest prints `test <helper> ... ` on the same line, before the helper's own output.
    text.lines()
        .find_map(|l| l.find("HELPER kind=").map(|at| l[at..].to_string()))
        .unwrap_or(text)
}

/// `BRAINCODE_SANDBOX=off` (and any unknown value) fails closed: no backend, and
/// `Sandbox::new` returns `Unavailable` with a reason and what to do.
#[test]
fn sandbox_env_off_fails_closed() {
    let line = status_line("off");
    assert!(line.contains("kind=unavailable unavailable=true"), "{line}");
    assert!(line.contains("BRAINCODE_SANDBOX=off"), "{line}");
    assert!(line.contains("Install bubblewrap"), "{line}");
    let line = status_line("bogus");
    assert!(line.contains("kind=unavailable unavailable=true"), "{line}");
    assert!(line.contains("not one of off, bwrap, landlock"), "{line}");
}

/// `BRAINCODE_SANDBOX=landlock` forces the fallback even where bubblewrap works.
#[test]
fn sandbox_env_forces_a_backend() {
    if skip(SandboxKind::Landlock) {
        return;
    }
    let line = status_line("landlock");
    assert!(
        line.contains("kind=landlock unavailable=false detail=landlock ABI"),
        "{line}"
    );
    if !skip(SandboxKind::Bubblewrap) {
        let line = status_line("bwrap");
        assert!(
            line.contains("kind=bubblewrap unavailable=false detail=bubblewrap"),
            "{line}"
        );
    }
}
