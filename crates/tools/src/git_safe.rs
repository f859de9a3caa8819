//! Braincode's own git calls, confined and hardened against the repository they run in.
//!
//! A repository's configuration can name programs that git runs on ordinary read queries:
//! `core.fsmonitor` (on `status`/`diff`), filter drivers (`filter.<x>.clean`/`process`, run
//! on stat-dirty files), `diff.<x>.textconv`/`command`, `diff.external`, pagers, credential
//! helpers, signature programs. Git has no switch that turns them all off, and a key can hide
//! from `-c` (`[filter "a=b"]`), or sit in a submodule's own `.git/config`. So the defence
//! does not rest on finding them:
//!
//! 1. **Confinement.** Every git process Braincode starts runs in the OS sandbox like a
//!    command ([`braincode_sandbox::helper_sandbox`]: the project read-only, no network, the
//!    user's secrets and the Braincode home hidden, secret variables removed), or in the run's
//!    own sandbox for the one call that writes (`git apply`). Where no sandbox works, git is
//!    not run at all: [`git_command`] fails closed.
//! 2. **Drivers off.** Inside the sandbox a small `sh` wrapper lists the repository's keys
//!    (`git config --name-only --list`: reading configuration runs nothing) and passes every
//!    key that names a program back as an empty value through `GIT_CONFIG_COUNT` /
//!    `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`, which hold any key (an `=` included) and are
//!    passed down to git's own children; the fixed settings of [`GIT_SAFETY_CONFIG`] go the
//!    same way; a persistent confined shell serves the queries of a run
//!    ([`crate::git_host`]), so a sandbox starts once per project, not once per query.
//!    Submodules are never entered (`--ignore-submodules=all` on `status` and
//!    `diff`), diffs run no external or textconv program (`--no-ext-diff --no-textconv`), and no user or system configuration is read (`GIT_CONFIG_GLOBAL=/dev/null`,
//!    `GIT_CONFIG_NOSYSTEM=1`).

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::Command;
#[cfg(test)]
use std::process::Stdio;

use braincode_sandbox::Sandbox;

/// Settings forced on every git call: repository-controlled executables off.
pub const GIT_SAFETY_CONFIG: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.editor", "false"),
    ("core.alternateRefsCommand", ""),
    ("core.gitProxy", ""),
    ("sequence.editor", "false"),
    ("diff.external", ""),
    ("diff.ignoreSubmodules", "all"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
    ("core.quotepath", "off"),
];

/// The start of every script Braincode's git runs in (`sh -c`, inside the sandbox): `off`
/// gives every key of the repository's configuration whose last part names a program (or a
/// filter driver's `required`) back empty (`false` for `required`), after the fixed settings
/// the caller put in `GIT_CONFIG_COUNT`. It reads the repository's configuration anew at each
/// call (a command may have changed it), without the settings given on the command line (its
/// own, which it would otherwise list and add again at every call). Keys cannot hold a
/// newline, so one key per line is exact.
pub(crate) const PRELUDE: &str = r#"base=${GIT_CONFIG_COUNT:-0}
nl='
'
off() {
  n=$base
  keys=$(GIT_CONFIG_COUNT=0 git config --name-only --list 2>/dev/null)
  while IFS= read -r key; do
    value=
    case "$key" in
      filter.*.clean|filter.*.smudge|filter.*.process) ;;
      filter.*.required) value=false ;;
      diff.*.textconv|diff.*.command|diff.*.binary) ;;
      merge.*.driver|merge.*.recursive) ;;
      *.helper|*.program|*.cmd|*.command|*.sshcommand|*.askpass|*.editor|*.pager|pager.*) ;;
      *) continue ;;
    esac
    eval "export GIT_CONFIG_KEY_$n=\"\$key\" GIT_CONFIG_VALUE_$n=\"\$value\""
    n=$((n + 1))
  done <<KEYS
$keys
KEYS
  export GIT_CONFIG_COUNT=$n
}
"#;

/// `git <args>` as Braincode runs it: no pager, and for the subcommands that can run a
/// program whatever the configuration says, the flags that forbid it (`status` and `diff`
/// never enter a submodule; `diff`, `show` and `log` run no external diff or textconv
/// program; `hash-object` runs no clean filter).
fn hardened(args: &[&str]) -> Vec<String> {
    let mut out = vec!["git".to_string(), "--no-pager".to_string()];
    let Some((sub, rest)) = args.split_first() else {
        return out;
    };
    out.push((*sub).to_string());
    let extra: &[&str] = match *sub {
        "status" => &["--ignore-submodules=all"],
        "diff" => &["--ignore-submodules=all", "--no-ext-diff", "--no-textconv"],
        "show" | "log" => &["--no-ext-diff", "--no-textconv"],
        "hash-object" => &["--no-filters"],
        _ => &[],
    };
    out.extend(extra.iter().map(|flag| (*flag).to_string()));
    out.extend(rest.iter().map(|arg| (*arg).to_string()));
    out
}

/// `arg` as one shell word on one line: single-quoted, a newline spliced in from `$nl` (any
/// text but NUL, which no argument holds).
fn quote(arg: &str) -> String {
    format!(
        "'{}'",
        arg.replace('\'', r"'\''").replace('\n', r#"'"$nl"'"#)
    )
}

/// `git <args>`, hardened and quoted, as one line of shell.
pub(crate) fn command_line(args: &[&str]) -> String {
    hardened(args)
        .iter()
        .map(|arg| quote(arg))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A `git <args>` command for `root` in the read-only helper sandbox, every
/// repository-controlled program switched off (see the module docs). Use
/// `tokio::process::Command::from` for async callers. `Err` says why git cannot run confined
/// here (no OS sandbox): the caller must then do without git.
pub fn git_command(root: &Path, args: &[&str]) -> Result<Command, String> {
    Ok(git_command_in(helper(root)?.as_ref(), root, args))
}

/// A `git <args>` command for `root` in `sandbox` (the run's own, for a git call that writes
/// the project), hardened as [`git_command`] is. Standard input reaches git.
pub fn git_command_in(sandbox: &Sandbox, root: &Path, args: &[&str]) -> Command {
    let script = format!("{PRELUDE}off\nexec {}\n", command_line(args));
    confined_sh(sandbox, root, script)
}

pub(crate) fn helper(root: &Path) -> Result<std::sync::Arc<Sandbox>, String> {
    braincode_sandbox::helper_sandbox(root).map_err(|error| {
        format!("Braincode runs git only inside the OS sandbox, and none is available: {error}")
    })
}

/// `sh -c script` in `sandbox`, with git's environment made safe.
pub(crate) fn confined_sh(sandbox: &Sandbox, root: &Path, script: String) -> Command {
    let args: Vec<OsString> = vec!["-c".into(), script.into()];
    let mut command = sandbox.command(OsStr::new("sh"), &args, root);
    // Whatever git settings the user's environment carries (GIT_DIR, GIT_CONFIG_*, an
    // external diff) are not ours to pass on.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(&name);
        }
    }
    for (index, (key, value)) in GIT_SAFETY_CONFIG.iter().enumerate() {
        command
            .env(format!("GIT_CONFIG_KEY_{index}"), key)
            .env(format!("GIT_CONFIG_VALUE_{index}"), value);
    }
    command
        .env("GIT_CONFIG_COUNT", GIT_SAFETY_CONFIG.len().to_string())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env_remove("SSH_ASKPASS");
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let status = Command::new("git")
            .current_dir(root)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    fn confined(root: &Path, args: &[&str]) -> std::process::Output {
        git_command(root, args)
            .unwrap()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    }

    /// Every driver form the repository can name, `=` in a name included, is switched off
    /// (their output never shows), and the queries still answer.
    #[test]
    fn repository_drivers_are_switched_off_and_queries_still_answer() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        git(root, &["config", "user.email", "t@e"]);
        git(root, &["config", "user.name", "t"]);
        std::fs::write(
            root.join(".gitattributes"),
            "*.txt filter=a=b diff=a=b\n*.md filter=plain diff=plain\n",
        )
        .unwrap();
        std::fs::write(root.join("notes.txt"), "one\n").unwrap();
        std::fs::write(root.join("notes.md"), "one\n").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "c"]);
        for (key, value) in [
            ("filter.a=b.clean", "echo EQ_CLEAN_RAN"),
            ("diff.a=b.textconv", "echo EQ_TEXTCONV_RAN; cat"),
            ("filter.plain.clean", "echo CLEAN_RAN"),
            ("diff.plain.textconv", "echo TEXTCONV_RAN; cat"),
            ("diff.external", "echo EXTERNAL_RAN"),
        ] {
            git(root, &["config", key, value]);
        }
        git(root, &["config", "filter.a=b.required", "true"]);
        std::fs::write(root.join("notes.txt"), "one\ntwo\n").unwrap();
        std::fs::write(root.join("notes.md"), "one\ntwo\n").unwrap();
        let status = confined(root, &["status", "--porcelain"]);
        assert!(status.status.success(), "{status:?}");
        let text = String::from_utf8_lossy(&status.stdout);
        assert!(
            text.contains("notes.txt") && text.contains("notes.md"),
            "{text}"
        );
        let diff = confined(root, &["diff"]);
        assert!(diff.status.success(), "{diff:?}");
        let text = String::from_utf8_lossy(&diff.stdout);
        assert!(text.contains("+two"), "{text}");
        assert!(!text.contains("_RAN"), "a repository program ran: {text}");
        // The same configuration through plain git does run them (the test can fail).
        let plain = Command::new("git")
            .current_dir(root)
            .args(["diff"])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&plain.stdout).contains("_RAN"));
    }

    /// Whatever git is made to run (here an alias, which the wrapper leaves alone) runs in the
    /// sandbox: it cannot write outside, write the project or read the user's secrets.
    #[test]
    fn what_git_runs_is_confined() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        let outside = tempfile::tempdir_in("/var/tmp").unwrap();
        let victim = outside.path().join("victim");
        let script = format!(
            "!echo ALIAS_RAN ; touch {victim} ; touch {root}/in-project ; cat $HOME/.ssh/id_rsa ; true",
            victim = victim.display(),
            root = root.display()
        );
        git(root, &["config", "alias.x", &script]);
        let out = confined(root, &["x"]);
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("ALIAS_RAN"),
            "the alias must run for this test to mean anything: {out:?}"
        );
        assert!(!victim.exists(), "git wrote outside the project");
        assert!(!root.join("in-project").exists(), "git wrote the project");
        if let Some(home) = std::env::var_os("HOME")
            && let Ok(key) =
                std::fs::read_to_string(std::path::Path::new(&home).join(".ssh/id_rsa"))
        {
            assert!(!String::from_utf8_lossy(&out.stdout).contains(key.trim()));
        }
    }

    #[test]
    fn not_a_repository_is_an_error_not_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        let out = confined(dir.path(), &["status", "--porcelain"]);
        assert!(!out.status.success());
    }
}
