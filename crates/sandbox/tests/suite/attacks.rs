//! Real attacks from inside the sandbox, run against every backend of this machine: each test
//! starts real processes in temp dirs and checks the outcome on the host, never timings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{
    self, Fixture, eventually, kill_pids, pids_with, run, skip, sleep_marker, unique,
};
use braincode_sandbox::SandboxKind;

/// Generates `mod $name { fn bwrap(); fn landlock() }` calling `$name(kind)`.
macro_rules! for_each_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use braincode_sandbox::SandboxKind;
            #[test]
            fn bwrap() {
                if !crate::common::skip(SandboxKind::Bubblewrap) {
                    super::$name(SandboxKind::Bubblewrap);
                }
            }
            #[test]
            fn landlock() {
                if !crate::common::skip(SandboxKind::Landlock) {
                    super::$name(SandboxKind::Landlock);
                }
            }
        }
    )*};
}

for_each_backend!(
    writes_outside_the_project_fail,
    hidden_home_and_braincode_secrets_are_unreadable,
    host_loopback_is_unreachable_without_network,
    network_allowed_reaches_the_host,
    writes_inside_the_project_work,
    tmpdir_is_writable_and_private,
    killing_the_group_kills_everything,
    seccomp_blocks_namespaces,
    protected_paths_made_or_changed_are_undone,
    host_unix_sockets_are_refused_unless_allowed,
    credential_files_are_unreadable,
    paths_of_deny_rules_survive_an_unreadable_rm,
);

/// (a) A marker written outside the project (a sibling dir, the home, `/etc`, `/var/tmp`)
/// never lands, even as root.
fn writes_outside_the_project_fail(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let name = format!("pwned-{}", unique());
    let targets = [
        fx.outside.join(&name),
        fx.home.join(&name),
        fx.project.parent().unwrap().join(&name),
        std::path::PathBuf::from("/etc").join(&name),
        std::path::PathBuf::from("/var/tmp").join(&name),
    ];
    let victim = fx.outside.join("victim.txt");
    std::fs::write(&victim, "original\n").unwrap();
    let mut script: String = targets
        .iter()
        .map(|t| format!("echo x > '{}'; touch '{}.t'; ", t.display(), t.display()))
        .collect();
    // Write through a hard link or a symlink planted in the project.
    let v = victim.display();
    script.push_str(&format!(
        "ln '{v}' hard.txt; echo pwned >> hard.txt; ln -s '{v}' soft.txt; echo pwned >> soft.txt; cp /dev/null soft.txt"
    ));
    run(&sb, &script);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "original\n",
        "{kind}: written through a link"
    );
    for target in &targets {
        assert!(!target.exists(), "{kind}: {} was written", target.display());
        assert!(
            !target.with_extension("t").exists(),
            "{kind}: {}.t was created",
            target.display()
        );
    }
}

/// (c) `~/.ssh/id_rsa` and Braincode's `auth.json` cannot be read, listed or copied.
fn hidden_home_and_braincode_secrets_are_unreadable(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let script = format!(
        "cat '{h}/.ssh/id_rsa'; ls -la '{h}/.ssh'; cat '{b}/auth.json'; grep -r SECRET '{h}' 2>/dev/null; cp -r '{h}/.ssh' ./stolen",
        h = fx.home.display(),
        b = fx.bc_home.display()
    );
    let (_, text) = run(&sb, &script);
    assert!(!text.contains(&fx.marker), "{kind}: secret leaked: {text}");
    let stolen = std::fs::read_to_string(fx.project.join("stolen/id_rsa")).unwrap_or_default();
    assert!(
        !stolen.contains(&fx.marker),
        "{kind}: secret copied into the project"
    );
    // Control: the same files are readable outside the sandbox.
    assert!(
        std::fs::read_to_string(fx.home.join(".ssh/id_rsa"))
            .unwrap()
            .contains(&fx.marker)
    );
}

/// A TCP listener on the host's loopback that counts completed connections.
struct HitServer {
    listener: TcpListener,
    port: u16,
}

impl HitServer {
    fn new() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        Self { listener, port }
    }

    /// Connections that completed so far (they wait in the accept queue).
    fn hits(&self) -> usize {
        self.listener.set_nonblocking(true).unwrap();
        let mut hits = 0;
        while self.listener.accept().is_ok() {
            hits += 1;
        }
        hits
    }
}

/// (e) With the network off, bash `/dev/tcp`, python and curl reach no service of the host.
fn host_loopback_is_unreachable_without_network(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let server = HitServer::new();
    let port = server.port;
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} && echo BASH_CONNECTED
         if command -v python3 >/dev/null; then python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5); print(\"PY_CONNECTED\")'; fi
         if command -v curl >/dev/null; then curl -s -m 5 http://127.0.0.1:{port}/ && echo CURL_CONNECTED; fi
         exec 4<>/dev/udp/127.0.0.1/{port} && echo UDP_SOCKET"
    );
    let (_, text) = run(&sb, &script);
    assert!(!text.contains("CONNECTED"), "{kind}: connected: {text}");
    assert_eq!(
        server.hits(),
        0,
        "{kind}: the host service was reached: {text}"
    );
    if kind == SandboxKind::Landlock {
        assert!(
            !text.contains("UDP_SOCKET"),
            "{kind}: UDP socket allowed: {text}"
        );
    }
}

/// (e, control) With the network allowed the same attack lands, so the test above can fail.
fn network_allowed_reaches_the_host(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, true);
    let server = HitServer::new();
    let (_, text) = run(
        &sb,
        &format!(
            "exec 3<>/dev/tcp/127.0.0.1/{} && echo BASH_CONNECTED",
            server.port
        ),
    );
    assert!(text.contains("BASH_CONNECTED"), "{kind}: {text}");
    assert_eq!(server.hits(), 1, "{kind}");
}

/// (f) Creating, editing and deleting project files works.
fn writes_inside_the_project_work(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let (out, text) = run(
        &sb,
        "echo hello > new.txt && mkdir -p a/b && echo deep > a/b/c.txt && echo more >> src/main.rs && mv new.txt moved.txt && rm -f src/gone.rs",
    );
    assert!(out.status.success(), "{kind}: {text}");
    assert_eq!(
        std::fs::read_to_string(fx.project.join("moved.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join("a/b/c.txt")).unwrap(),
        "deep\n"
    );
    assert!(
        std::fs::read_to_string(fx.project.join("src/main.rs"))
            .unwrap()
            .ends_with("more\n")
    );
}

/// (g) `$TMPDIR` is writable, and nothing written there or to `/tmp` reaches the host `/tmp`.
fn tmpdir_is_writable_and_private(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let name = format!("sbx-tmp-{}", unique());
    let script = format!(
        "echo data > \"$TMPDIR/{name}\" && cat \"$TMPDIR/{name}\" && echo TMP_OK; echo x > /tmp/{name}.direct; echo \"TMPDIR=$TMPDIR\""
    );
    let (_, text) = run(&sb, &script);
    assert!(text.contains("TMP_OK"), "{kind}: {text}");
    let host_tmp = std::path::Path::new("/tmp");
    assert!(
        !host_tmp.join(&name).exists(),
        "{kind}: $TMPDIR is the host /tmp"
    );
    assert!(
        !host_tmp.join(format!("{name}.direct")).exists(),
        "{kind}: wrote the host /tmp"
    );
    if kind == SandboxKind::Bubblewrap {
        // The private /tmp does not show the host's files either.
        let host_file = host_tmp.join(format!("{name}.host"));
        std::fs::write(&host_file, &fx.marker).unwrap();
        let (_, text) = run(&sb, &format!("cat /tmp/{name}.host; ls /tmp"));
        std::fs::remove_file(&host_file).unwrap();
        assert!(
            !text.contains(&fx.marker),
            "{kind}: host /tmp visible: {text}"
        );
    }
}

/// Pids of live `sleep` processes carrying `mark`.
fn sleepers(mark: &str) -> Vec<u32> {
    pids_with(mark)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep")
        })
        .collect()
}

/// (h) Killing the process group the caller created kills the command and its background
/// children; under bubblewrap even a child that left the group with `setsid` dies.
fn killing_the_group_kills_everything(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let mark = sleep_marker();
    let escapee = sleep_marker();
    let mut script = format!("sleep {mark} & ");
    if kind == SandboxKind::Bubblewrap {
        script.push_str(&format!("setsid sleep {escapee} & "));
    }
    script.push_str("echo ready; wait");
    let args = [OsString::from("-c"), OsString::from(script)];
    let mut command = sb.command(OsStr::new("bash"), &args, &fx.project);
    command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    assert!(
        eventually(Duration::from_secs(20), || !sleepers(&mark).is_empty()),
        "{kind}: sleep never started"
    );
    if kind == SandboxKind::Bubblewrap {
        assert!(
            eventually(Duration::from_secs(20), || !sleepers(&escapee).is_empty()),
            "setsid sleep never started"
        );
    }
    let status = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let _ = child.wait();
    let gone = eventually(Duration::from_secs(20), || {
        sleepers(&mark).is_empty() && sleepers(&escapee).is_empty()
    });
    let survivors = [sleepers(&mark), sleepers(&escapee)].concat();
    kill_pids(&survivors);
    assert!(
        gone,
        "{kind}: survivors after the group kill: {survivors:?}"
    );
}

/// The seccomp filter is active: creating namespaces fails inside (and works outside when the
/// host allows it, so the check can fail).
fn seccomp_blocks_namespaces(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    let (_, text) = run(&sb, "unshare --user --map-root-user true && echo UNSHARED");
    assert!(!text.contains("UNSHARED"), "{kind}: unshare worked: {text}");
    let (_, text) = run(
        &sb,
        "python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print(\"RAW_OK\")'",
    );
    assert!(!text.contains("RAW_OK"), "{kind}: raw socket: {text}");
}

// ---- bubblewrap only: what Landlock cannot enforce inside a writable project ----

/// (b) `.git/config` cannot be appended to, hooks cannot be created, `.git` cannot be moved
/// or deleted.
#[test]
fn bwrap_protected_paths_stay_read_only() {
    if skip(SandboxKind::Bubblewrap) {
        return;
    }
    let fx = Fixture::new();
    let sb = fx.sandbox(SandboxKind::Bubblewrap, false);
    run(
        &sb,
        "echo '[core] hooksPath = /tmp/evil' >> .git/config; printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/post-commit; chmod +x .git/hooks/post-commit; mv .git .git-old; rm -rf .git; ln -s /tmp .git/hooks/x",
    );
    assert_eq!(
        std::fs::read_to_string(fx.project.join(".git/config")).unwrap(),
        fx.git_config
    );
    assert!(!fx.project.join(".git/hooks/post-commit").exists());
    assert!(!fx.project.join(".git-old").exists());
    assert!(!fx.project.join(".git/hooks/x").exists());
}

/// (d) The project's `.env` reads as empty and cannot be overwritten, moved or deleted.
#[test]
fn bwrap_project_env_file_is_hidden() {
    if skip(SandboxKind::Bubblewrap) {
        return;
    }
    let fx = Fixture::new();
    let sb = fx.sandbox(SandboxKind::Bubblewrap, false);
    let (_, text) = run(
        &sb,
        "cat .env; grep -r SECRET . ; echo overwritten > .env; mv .env moved.env; rm -f .env",
    );
    assert!(!text.contains(&fx.marker), "secret leaked: {text}");
    let on_host = std::fs::read_to_string(fx.project.join(".env")).unwrap();
    assert!(on_host.contains(&fx.marker), ".env was changed: {on_host}");
    assert!(!fx.project.join("moved.env").exists());
}

/// Host sockets under `/run` (docker, D-Bus, agents) are not there.
#[test]
fn bwrap_masks_run() {
    if skip(SandboxKind::Bubblewrap) {
        return;
    }
    let fx = Fixture::new();
    let sb = fx.sandbox(SandboxKind::Bubblewrap, false);
    let (_, text) = run(&sb, "ls -A /run /var/run | grep -v ':$' | grep -c . ");
    assert_eq!(text.trim(), "0", "/run not empty: {text}");
}

/// With the network off, the sandbox still has its own loopback, so a project's tests can
/// start a local server; it is not the host's (see `host_loopback_is_unreachable_...`).
#[test]
fn bwrap_private_loopback_works() {
    if skip(SandboxKind::Bubblewrap) {
        return;
    }
    let fx = Fixture::new();
    let sb = fx.sandbox(SandboxKind::Bubblewrap, false);
    let (_, text) = run(
        &sb,
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); socket.create_connection(s.getsockname()); print(\"LOOPBACK_OK\")'",
    );
    assert!(text.contains("LOOPBACK_OK"), "{text}");
}

/// Landlock says what it does not enforce.
#[test]
fn landlock_describes_its_gaps() {
    if skip(SandboxKind::Landlock) {
        return;
    }
    let fx = Fixture::new();
    let line = fx.sandbox(SandboxKind::Landlock, false).describe();
    assert!(line.starts_with("landlock ABI"), "{line}");
    assert!(line.contains("partial") && line.contains(".env"), "{line}");
    assert!(line.contains("network: off"), "{line}");
    let line = fx.sandbox(SandboxKind::Bubblewrap, false).describe();
    assert!(
        line.starts_with("bubblewrap + seccomp; writes: project, private /tmp;"),
        "{line}"
    );
    assert!(line.contains("network: off"), "{line}");
}

// ---- protected paths at any depth, host sockets, credentials, deny rules ----

/// Protected paths a command creates at any depth (they did not exist when the sandbox was
/// built, so no backend can forbid them) are removed by `check_protected`; under Landlock the
/// changes to existing ones (`.git/config`, a hook) are restored too.
fn protected_paths_made_or_changed_are_undone(kind: SandboxKind) {
    let fx = Fixture::new();
    let sb = fx.sandbox(kind, false);
    run(
        &sb,
        "mkdir -p .vscode web a/b/c .github/workflows; echo '{}' > .vscode/tasks.json; \
         echo 'script-shell=/tmp/x' > web/.npmrc; echo 'on: push' > .github/workflows/x.yml; \
         echo 'curl evil' > a/b/c/.envrc; echo '[core] fsmonitor = touch pwned' >> .git/config; \
         printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout",
    );
    let created = [
        ".vscode/tasks.json",
        "web/.npmrc",
        ".github/workflows/x.yml",
        "a/b/c/.envrc",
    ];
    for path in created {
        // The command did create them: without the check they would stay.
        assert!(
            fx.project.join(path).exists(),
            "{kind}: {path} was not created"
        );
    }
    let violation = sb
        .check_protected()
        .expect_err("the changes must be reported");
    let text = violation.to_string();
    for path in [".vscode", "web/.npmrc", ".github/workflows", "a/b/c/.envrc"] {
        assert!(
            !fx.project.join(path).exists(),
            "{kind}: {path} is still there"
        );
        assert!(
            text.contains(&format!("created {path} (removed again)")),
            "{kind}: {text}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.project.join(".git/config")).unwrap(),
        fx.git_config,
        "{kind}: .git/config"
    );
    assert!(
        !fx.project.join(".git/hooks/post-checkout").exists(),
        "{kind}: hook"
    );
    assert!(violation.changes.iter().all(|c| c.undone), "{kind}: {text}");
    assert_eq!(
        sb.check_protected(),
        Ok(()),
        "{kind}: the restored state is the reference"
    );
    // Ordinary work is not a violation.
    run(
        &sb,
        "echo more >> src/main.rs && mkdir -p src/new && echo x > src/new/a.rs",
    );
    assert_eq!(sb.check_protected(), Ok(()), "{kind}");
}

/// A listening UNIX socket of the host outside `/run` and `/tmp` (a Docker socket under
/// `$HOME`) cannot be connected to, while the other files next to it stay visible; an allowed
/// socket can (so the test can fail).
fn host_unix_sockets_are_refused_unless_allowed(kind: SandboxKind) {
    use std::os::unix::net::UnixListener;
    let fx = Fixture::new();
    let dir = fx.home.join(".docker/run");
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("docker.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::write(dir.join("notes.txt"), "NEXT_TO_THE_SOCKET").unwrap();
    let hits = || std::iter::from_fn(|| listener.accept().ok()).count();
    let script = format!(
        "cat '{}/notes.txt'; python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"SOCKET_CONNECTED\")'",
        dir.display(),
        socket.display()
    );
    let sb = fx.sandbox(kind, false);
    let landlock_gap = sb.gaps().iter().any(|g| g.contains("UNIX sockets"));
    let (_, text) = run(&sb, &script);
    if kind == SandboxKind::Landlock && landlock_gap {
        // Landlock before ABI 9 cannot refuse it, and says so.
        assert!(sb.describe().contains("UNIX sockets"), "{}", sb.describe());
        hits();
    } else {
        assert!(
            !text.contains("SOCKET_CONNECTED"),
            "{kind}: connected: {text}"
        );
        assert_eq!(hits(), 0, "{kind}: the host socket was reached");
    }
    assert!(text.contains("NEXT_TO_THE_SOCKET"), "{kind}: {text}");
    let mut policy = fx.policy(false);
    policy.allow_unix_sockets.push(socket.clone());
    let (_, text) = run(&common::sandbox(kind, policy), &script);
    assert!(
        text.contains("SOCKET_CONNECTED"),
        "{kind}: allowed socket: {text}"
    );
    assert_eq!(hits(), 1, "{kind}");
    // Other tests of this binary mask every listening socket of the host when they start a
    // command; one that listed this socket a moment ago would find its directory gone. The
    // path goes first (a listed socket whose path is gone is skipped), then, after a while,
    // the directory.
    std::fs::remove_file(&socket).unwrap();
    drop(listener);
    std::thread::sleep(std::time::Duration::from_millis(500));
}

/// Credential files of the home and of the project, at any depth and inside dependencies and
/// build output, cannot be read (Landlock: the home ones; it cannot hide files inside the
/// project, and says so).
fn credential_files_are_unreadable(kind: SandboxKind) {
    let fx = Fixture::new();
    let deep: String = (0..13).map(|i| format!("l{i}/")).collect();
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
    let home_files = [
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
    ];
    let mut files: Vec<(std::path::PathBuf, String)> = Vec::new();
    for (i, path) in project_files.iter().enumerate() {
        files.push((fx.project.join(path), format!("{}-p{i}", fx.marker)));
    }
    for (i, path) in home_files.iter().enumerate() {
        files.push((fx.home.join(path), format!("{}-h{i}", fx.marker)));
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
    let sb = fx.sandbox(kind, false);
    let script: String = files
        .iter()
        .map(|(path, _)| format!("cat '{}'; ", path.display()))
        .collect();
    let (_, text) = run(&sb, &script);
    for (path, marker) in &files {
        if kind == SandboxKind::Landlock && path.starts_with(&fx.project) {
            continue;
        }
        assert!(
            !text.contains(marker.as_str()),
            "{kind}: {} was read",
            path.display()
        );
        // Control: the host reads it.
        assert!(
            std::fs::read_to_string(path)
                .unwrap()
                .contains(marker.as_str())
        );
    }
    if kind == SandboxKind::Landlock {
        assert!(
            sb.gaps()
                .iter()
                .any(|g| g.contains("secret files inside the project"))
        );
    }
}

/// A project path the user's deny rules cover (given to the sandbox as read-only) survives a
/// command the parser cannot read (`${X:-rm} -rf d`); under Landlock it is restored.
fn paths_of_deny_rules_survive_an_unreadable_rm(kind: SandboxKind) {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.project.join("d/sub")).unwrap();
    std::fs::write(fx.project.join("d/sub/keep.txt"), "KEEP").unwrap();
    let mut policy = fx.policy(false);
    policy.read_only.push(fx.project.join("d"));
    let sb = common::sandbox(kind, policy);
    run(&sb, "X=; ${X:-rm} -rf d");
    let checked = sb.check_protected();
    assert_eq!(
        std::fs::read_to_string(fx.project.join("d/sub/keep.txt")).unwrap_or_default(),
        "KEEP",
        "{kind}: the denied directory was deleted"
    );
    match kind {
        SandboxKind::Bubblewrap => assert_eq!(checked, Ok(())),
        _ => assert!(checked.is_err(), "{kind}: the removal must be reported"),
    }
}
