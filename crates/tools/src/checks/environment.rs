//! Tells a check that could not run (its environment: the network is off, a dependency or a
//! toolchain is missing, a lockfile is out of date) from a check that ran and failed (the
//! code). Only the second is the agent's to fix; the first is said as such, with its fix, in
//! one line.
//!
//! The reading is conservative: a failure is the environment's only when the output says so in
//! a way a code change cannot cause (a failed DNS lookup, a registry download, a module that
//! is not the project's own, a program that is not installed). Anything else is the code's.

use std::path::Path;

/// What to do when dependencies were not fetched, by the program the check ran.
fn fetch_fix(program: &str) -> String {
    format!(
        "run again with `--fetch-deps` (sets them up in the sandbox, the network limited to the package registries), or {}",
        manual_fix(program)
    )
}

fn manual_fix(program: &str) -> &'static str {
    match program {
        "cargo" => "fetch the crates yourself (`cargo fetch`)",
        "npm" | "npx" | "node" => "install the packages yourself (`npm ci`)",
        "pnpm" => "install the packages yourself (`pnpm install --frozen-lockfile`)",
        "yarn" => "install the packages yourself (`yarn install --immutable`)",
        "go" => "download the modules yourself (`go mod download`)",
        _ => {
            "install the project's test dependencies yourself (a `.venv` with `pip install -e '.[test]'` or its requirements files)"
        }
    }
}

/// Why a failed check could not run because of its environment, with the fix (one line), or
/// `None` when the failure is the code's. `dir` is the check's directory (to tell the
/// project's own Python modules from missing dependencies).
pub fn environment_cause(
    program: &str,
    exit_code: Option<i32>,
    output: &str,
    dir: &Path,
) -> Option<String> {
    let line = |needle: &str| {
        output
            .lines()
            .find(|l| l.contains(needle))
            .map(|l| clip(l.trim()))
    };
    // The sandbox itself, or the program, could not start.
    if let Some(error) = output.strip_prefix(&format!("cannot run {program}: ")) {
        return Some(format!(
            "`{program}` could not be started ({}): install it or put it on PATH",
            clip(error.trim())
        ));
    }
    if let Some(found) = line("bwrap: ") {
        return Some(format!(
            "the sandbox could not start the check ({found}): see `braincode doctor`"
        ));
    }
    // Lockfiles that no longer match their manifest.
    for needle in [
        "needs to be updated but --locked was passed",
        "can only install packages when your package.json and package-lock.json",
        "missing go.sum entry",
        "lockfile had changes, but lockfile is frozen",
        "ERR_PNPM_OUTDATED_LOCKFILE",
        "The lockfile would have been modified by this install, which is explicitly forbidden",
    ] {
        if let Some(found) = line(needle) {
            return Some(format!(
                "the lockfile is out of date ({found}): update it (e.g. `cargo update -w`, `npm install`, `go mod tidy`) and commit it"
            ));
        }
    }
    // A registry or any host out of reach: the sandbox has no network.
    for needle in [
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
        "Network is unreachable",
        "getaddrinfo ENOTFOUND",
        "getaddrinfo EAI_AGAIN",
        "ENETUNREACH",
        "dial tcp: lookup",
        "attempting to make an HTTP request, but --offline was specified",
        "failed to download from",
        "Failed to establish a new connection",
        "network failure seems to have happened",
    ] {
        if let Some(found) = line(needle) {
            return Some(format!(
                "the check needed the network, which the sandbox keeps off ({found}): {}",
                fetch_fix(program)
            ));
        }
    }
    // Cargo: a dependency that is not in the local registry cache.
    for needle in [
        "failed to get `",
        "failed to load source for dependency",
        "no matching package named",
        "failed to update registry",
    ] {
        if let Some(found) = line(needle) {
            return Some(format!(
                "a dependency is not fetched ({found}): {}",
                fetch_fix(program)
            ));
        }
    }
    if let Some(found) = line("error: no such command: `") {
        return Some(format!(
            "a cargo subcommand is not installed ({found}): install it (e.g. `rustup component add clippy`, `cargo install cargo-nextest`)"
        ));
    }
    if let Some(found) = line("may not be used on the stable release channel") {
        return Some(format!(
            "part of the project (often its benches) needs a nightly Rust toolchain ({found}): `rustup toolchain install nightly`, or check it without those targets"
        ));
    }
    if let Some(found) = line("is not installed").filter(|l| l.contains("toolchain")) {
        return Some(format!(
            "the Rust toolchain the project asks for is not installed ({found}): `rustup toolchain install`"
        ));
    }
    // Python: a module that is not the project's own.
    if let Some(module) = missing_python_module(output)
        && !is_own_python_module(dir, &module)
    {
        return Some(format!(
            "the Python module `{module}` is not installed (a dependency of the project or its tests): {}",
            fetch_fix(program)
        ));
    }
    if let Some(found) = line("unrecognized arguments: --cov") {
        return Some(format!(
            "a pytest plugin the project's configuration uses is not installed ({found}): {}",
            fetch_fix(program)
        ));
    }
    // Node: a package module (not a relative path) that is not installed.
    if let Some(module) = missing_node_module(output) {
        return Some(format!(
            "the Node package `{module}` is not installed (no `node_modules`?): {}",
            fetch_fix(program)
        ));
    }
    // pytest's exit 5: nothing to test here (a source distribution without its tests).
    if exit_code == Some(5)
        && (program.contains("pytest") || program.contains("python"))
        && (output.contains("no tests ran") || output.contains("collected 0 items"))
    {
        return Some(
            "no tests were collected: this copy of the project ships none (or they are not where pytest looks)".into(),
        );
    }
    // A test runner with nothing to run (a package tarball ships no tests).
    for needle in ["No test files found", "No tests found, exiting with code 1"] {
        if let Some(found) = line(needle) {
            return Some(format!(
                "no tests were found ({found}): this copy of the project ships none"
            ));
        }
    }
    // A program a script calls that is not there (`sh: 1: jest: not found`, exit 127).
    if exit_code == Some(127) {
        let found = line(": not found")
            .or_else(|| line("command not found"))
            .unwrap_or_else(|| format!("exit 127 from {program}"));
        return Some(format!(
            "a program the check calls is not installed ({found}): install the project's tools, or {}",
            fetch_fix(program)
        ));
    }
    None
}

fn clip(line: &str) -> String {
    const MAX: usize = 160;
    if line.chars().count() <= MAX {
        return line.to_string();
    }
    let cut: String = line.chars().take(MAX).collect();
    format!("{cut}…")
}

/// `X` of `ModuleNotFoundError: No module named 'X'` (its top-level package).
fn missing_python_module(output: &str) -> Option<String> {
    let at = output.find("No module named ")?;
    let rest = &output[at + "No module named ".len()..];
    let name: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
        .collect();
    let top = name.split('.').next().unwrap_or_default();
    (!top.is_empty()).then(|| top.to_string())
}

/// Whether `module` is the project's own (a package or module in the check's directory, or
/// under `src/`): then its import failing is the code's doing.
fn is_own_python_module(dir: &Path, module: &str) -> bool {
    [dir.to_path_buf(), dir.join("src")]
        .iter()
        .any(|base| base.join(module).is_dir() || base.join(format!("{module}.py")).is_file())
}

/// `X` of `Cannot find module 'X'` when it names a package, not a file of the project.
fn missing_node_module(output: &str) -> Option<String> {
    let at = output.find("Cannot find module '")?;
    let rest = &output[at + "Cannot find module '".len()..];
    let name = rest.split('\'').next()?;
    if name.is_empty() || name.starts_with('.') || name.starts_with('/') {
        return None;
    }
    // `@scope/pkg/sub` → `@scope/pkg`; `pkg/sub` → `pkg`.
    let mut parts = name.split('/');
    let first = parts.next()?;
    Some(if first.starts_with('@') {
        format!("{first}/{}", parts.next().unwrap_or_default())
    } else {
        first.to_string()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn cause(program: &str, code: i32, output: &str) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src/attr")).unwrap();
        std::fs::write(dir.path().join("helpers.py"), "").unwrap();
        environment_cause(program, Some(code), output, dir.path())
    }

    #[test]
    fn environment_failures_are_told_with_their_fix() {
        let cargo = "    Updating crates.io index\nerror: failed to get `linked-hash-map` as a dependency of package `insta v1.39.0`\n\nCaused by:\n  failed to query replaced source registry `crates-io`\n\nCaused by:\n  download of config.json failed\n\nCaused by:\n  [6] Could not resolve host: index.crates.io\n";
        let said = cause("cargo", 101, cargo).unwrap();
        assert!(said.contains("network"), "{said}");
        assert!(
            said.contains("--fetch-deps") && said.contains("cargo fetch"),
            "{said}"
        );

        let offline = "error: failed to get `insta` as a dependency of package `similar v2.6.0`\n";
        assert!(
            cause("cargo", 101, offline)
                .unwrap()
                .contains("not fetched")
        );

        let pytest = "ImportError while loading conftest '/p/conftest.py'.\nconftest.py:5: in <module>\n    from hypothesis import HealthCheck\nE   ModuleNotFoundError: No module named 'hypothesis'\n";
        let said = cause("pytest", 4, pytest).unwrap();
        assert!(said.contains("`hypothesis` is not installed"), "{said}");

        let jest = "> jest\n\nsh: 1: jest: not found\n";
        assert!(cause("npm", 127, jest).unwrap().contains("jest: not found"));
        let node = "Error: Cannot find module '@babel/core/lib/index.js'\nRequire stack:\n";
        assert!(cause("node", 1, node).unwrap().contains("`@babel/core`"));
        let locked = "error: the lock file /p/Cargo.lock needs to be updated but --locked was passed to prevent this\n";
        assert!(
            cause("cargo", 101, locked)
                .unwrap()
                .contains("lockfile is out of date")
        );
        let npm = "npm ERR! getaddrinfo ENOTFOUND registry.npmjs.org\n";
        assert!(cause("npm", 1, npm).unwrap().contains("network"));
        let missing = "cannot run cargo: No such file or directory (os error 2)";
        assert!(
            cause("cargo", 1, missing)
                .unwrap()
                .contains("could not be started")
        );
    }

    #[test]
    fn failures_of_the_code_stay_failures() {
        let rust = "error[E0425]: cannot find value `x` in this scope\n --> src/lib.rs:3:5\nerror: could not compile `demo`\n";
        assert_eq!(cause("cargo", 101, rust), None);
        let test = "test tests::adds ... FAILED\nthread 'tests::adds' panicked at src/lib.rs:9:9:\nassertion `left == right` failed\n";
        assert_eq!(cause("cargo", 101, test), None);
        // The project's own module failing to import is the code's doing.
        let own = "E   ModuleNotFoundError: No module named 'attr.validators'\n";
        assert_eq!(cause("pytest", 2, own), None);
        let own = "E   ModuleNotFoundError: No module named 'helpers'\n";
        assert_eq!(cause("pytest", 2, own), None);
        let none = "collected 0 items\n\n============ no tests ran in 0.01s ============\n";
        assert!(
            cause("pytest", 5, none)
                .unwrap()
                .contains("no tests were collected")
        );
        assert_eq!(cause("pytest", 1, none), None);
        let bench = "error[E0554]: `#![feature]` may not be used on the stable release channel\n --> benches/bench.rs:1:1\n";
        assert!(cause("cargo", 101, bench).unwrap().contains("nightly"));
        let warned = "collected 0 items\n\n====== 1 warning in 0.00s ======\n";
        assert!(cause("python3", 5, warned).is_some());
        let relative = "Error: Cannot find module './greeting'\n";
        assert_eq!(cause("node", 1, relative), None);
        let assertion = "AssertionError: expected 'HELLO' to equal 'hello'\n";
        assert_eq!(cause("npm", 1, assertion), None);
    }
}
