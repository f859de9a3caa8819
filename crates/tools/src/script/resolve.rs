//! Finding what `run_script <name>` really runs in this project: a package.json script (with
//! the package manager its lockfile names), a cargo command, a Makefile target, pytest, or a
//! go command. The permission policy evaluates the resulting command line, not a guess.

use std::path::Path;

use super::makefile::{make_bodies, makefile_rules};
use super::package_json::{
    PackageManager, detect_package_manager, package_bodies, package_json_scripts,
};

/// Cargo subcommands `run_script` offers in a Rust project.
pub const CARGO_SCRIPTS: &[&str] = &[
    "build", "check", "test", "clippy", "fmt", "run", "bench", "doc", "clean",
];
/// Go subcommands `run_script` offers (run as `go <x> ./...`).
pub const GO_SCRIPTS: &[&str] = &["test", "build", "vet"];
/// Names that run pytest in a Python project.
pub const PYTEST_SCRIPTS: &[&str] = &["test", "tests", "pytest"];
/// How deeply script bodies calling other scripts are followed.
pub(super) const MAX_SCRIPT_NESTING: usize = 8;

/// Where a script comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptSource {
    /// A package.json script.
    PackageJson(PackageManager),
    /// A cargo subcommand.
    Cargo,
    /// A Makefile target.
    Make,
    /// pytest.
    Pytest,
    /// A go subcommand.
    Go,
}

/// Text a script runs that is visible before running it (package.json script bodies,
/// Makefile recipes), for the permission policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptBody {
    /// Script or target name.
    pub name: String,
    /// The shell text.
    pub text: String,
}

/// A script resolved to a real command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedScript {
    /// Program to execute.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The command line, shell-quoted.
    pub display: String,
    /// Where the script comes from.
    pub source: ScriptSource,
    /// Script text that will run (the script, its pre/post hooks, scripts it calls, Makefile
    /// recipes of the target and its prerequisites).
    pub bodies: Vec<ScriptBody>,
}

/// Why a script could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScriptError {
    /// No script name.
    #[error("run_script needs a script name")]
    EmptyName,
    /// Nothing to run in this project.
    #[error(
        "no scripts found in {root}: no package.json scripts, Cargo.toml, Makefile, pytest project (pyproject.toml, pytest.ini, setup.cfg, tests/) or go.mod"
    )]
    NoScripts {
        /// Project root.
        root: String,
    },
    /// The name matches nothing.
    #[error("unknown script {script:?}. Available: {available}")]
    Unknown {
        /// The requested name.
        script: String,
        /// What exists.
        available: String,
    },
    /// package.json is not valid JSON.
    #[error("{path} is not valid JSON: {message}")]
    InvalidPackageJson {
        /// File.
        path: String,
        /// Parser message.
        message: String,
    },
}

fn is_python_project(root: &Path) -> bool {
    ["pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"]
        .iter()
        .any(|name| root.join(name).is_file())
        || root.join("tests").is_dir()
        || root.join("conftest.py").is_file()
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

/// Quotes one word for a POSIX shell when it needs it.
pub fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./:=@%+,-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn resolved(
    program: &str,
    args: Vec<String>,
    source: ScriptSource,
    bodies: Vec<ScriptBody>,
) -> ResolvedScript {
    let display = std::iter::once(program.to_string())
        .chain(args.iter().cloned())
        .map(|word| shell_quote(&word))
        .collect::<Vec<_>>()
        .join(" ");
    ResolvedScript {
        program: program.to_string(),
        args,
        display,
        source,
        bodies,
    }
}

/// Resolves a script name (optionally prefixed `cargo:`, `make:`, `go:`, `pytest:`, `npm:`…)
/// to the command line `run_script` would run in `root`.
pub fn resolve_script(
    root: &Path,
    script: &str,
    args: &[String],
) -> Result<ResolvedScript, ScriptError> {
    let script = script.trim();
    if script.is_empty() {
        return Err(ScriptError::EmptyName);
    }
    let scripts = package_json_scripts(root)?;
    let (prefix, name) = match script.split_once(':') {
        Some((prefix, name))
            if !scripts.contains_key(script)
                && matches!(
                    prefix,
                    "cargo" | "make" | "go" | "pytest" | "npm" | "pnpm" | "yarn" | "bun"
                ) =>
        {
            (Some(prefix), name)
        }
        _ => (None, script),
    };
    let wants = |kind: &str| prefix.is_none_or(|p| p == kind);
    let wants_package = prefix.is_none_or(|p| matches!(p, "npm" | "pnpm" | "yarn" | "bun"));

    if wants_package && scripts.contains_key(name) {
        let manager = detect_package_manager(root);
        let mut run_args = vec!["run".to_string(), name.to_string()];
        if !args.is_empty() {
            if manager != PackageManager::Bun {
                run_args.push("--".to_string());
            }
            run_args.extend(args.iter().cloned());
        }
        let bodies = package_bodies(&scripts, name);
        return Ok(resolved(
            manager.program(),
            run_args,
            ScriptSource::PackageJson(manager),
            bodies,
        ));
    }
    if wants("cargo") && root.join("Cargo.toml").is_file() && CARGO_SCRIPTS.contains(&name) {
        let mut cargo_args = vec![name.to_string()];
        cargo_args.extend(args.iter().cloned());
        return Ok(resolved(
            "cargo",
            cargo_args,
            ScriptSource::Cargo,
            Vec::new(),
        ));
    }
    if wants("make")
        && let Some(rules) = makefile_rules(root)
        && rules.contains_key(name)
    {
        let mut make_args = vec![name.to_string()];
        make_args.extend(args.iter().cloned());
        let bodies = make_bodies(&rules, name);
        return Ok(resolved("make", make_args, ScriptSource::Make, bodies));
    }
    if wants("pytest")
        && is_python_project(root)
        && (PYTEST_SCRIPTS.contains(&name) || prefix == Some("pytest"))
    {
        let (program, mut pytest_args) = if on_path("pytest") {
            ("pytest", Vec::new())
        } else {
            ("python3", vec!["-m".to_string(), "pytest".to_string()])
        };
        pytest_args.extend(args.iter().cloned());
        return Ok(resolved(
            program,
            pytest_args,
            ScriptSource::Pytest,
            Vec::new(),
        ));
    }
    if wants("go") && root.join("go.mod").is_file() && GO_SCRIPTS.contains(&name) {
        let mut go_args = vec![name.to_string(), "./...".to_string()];
        go_args.extend(args.iter().cloned());
        return Ok(resolved("go", go_args, ScriptSource::Go, Vec::new()));
    }
    let available = available_scripts(root)?;
    if available.is_empty() {
        return Err(ScriptError::NoScripts {
            root: root.display().to_string(),
        });
    }
    Err(ScriptError::Unknown {
        script: script.to_string(),
        available: available.join("; "),
    })
}

/// What `run_script` can run here, one group per source (`package.json (pnpm): build, test`).
pub fn available_scripts(root: &Path) -> Result<Vec<String>, ScriptError> {
    let mut groups = Vec::new();
    let scripts = package_json_scripts(root)?;
    if !scripts.is_empty() {
        groups.push(format!(
            "package.json ({}): {}",
            detect_package_manager(root).program(),
            scripts.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if root.join("Cargo.toml").is_file() {
        groups.push(format!("cargo: {}", CARGO_SCRIPTS.join(", ")));
    }
    if let Some(rules) = makefile_rules(root)
        && !rules.is_empty()
    {
        groups.push(format!(
            "make: {}",
            rules.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if is_python_project(root) {
        groups.push("pytest: test".to_string());
    }
    if root.join("go.mod").is_file() {
        groups.push(format!("go: {}", GO_SCRIPTS.join(", ")));
    }
    Ok(groups)
}

/// The script text a command line runs through the project's own definitions:
/// `npm run x`, `pnpm x`, `yarn x`, `npm test` → the package.json script (with hooks and the
/// scripts it calls); `make a b` → the recipes of those targets and their prerequisites.
/// `dir` is the directory the command runs in.
pub fn invoked_script_bodies(dir: &Path, words: &[&str]) -> Vec<ScriptBody> {
    let Some((first, rest)) = words.split_first() else {
        return Vec::new();
    };
    match *first {
        "npm" | "pnpm" | "yarn" | "bun" => {
            let scripts = package_json_scripts(dir).unwrap_or_default();
            let name = match rest {
                ["run" | "run-script", name, ..] => *name,
                [name, ..]
                    if scripts.contains_key(*name)
                        && (*first != "npm"
                            || matches!(*name, "test" | "start" | "stop" | "restart")) =>
                {
                    *name
                }
                _ => return Vec::new(),
            };
            if scripts.contains_key(name) {
                package_bodies(&scripts, name)
            } else {
                Vec::new()
            }
        }
        "make" | "gmake" => {
            let Some(rules) = makefile_rules(dir) else {
                return Vec::new();
            };
            rest.iter()
                .filter(|word| !word.starts_with('-') && !word.contains('='))
                .flat_map(|target| make_bodies(&rules, target))
                .collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, body).unwrap();
        }
        dir
    }

    #[test]
    fn package_manager_from_lockfile() {
        let scripts = r#"{"scripts": {"test": "vitest", "deploy": "npm run release", "release": "git push", "prebuild": "echo hi", "build": "tsc"}}"#;
        for (lock, program, display) in [
            ("bun.lockb", "bun", "bun run test --watch"),
            ("bun.lock", "bun", "bun run test --watch"),
            ("pnpm-lock.yaml", "pnpm", "pnpm run test -- --watch"),
            ("yarn.lock", "yarn", "yarn run test -- --watch"),
            ("package-lock.json", "npm", "npm run test -- --watch"),
        ] {
            let dir = project(&[("package.json", scripts), (lock, "")]);
            let resolved = resolve_script(dir.path(), "test", &["--watch".into()]).unwrap();
            assert_eq!(resolved.program, program);
            assert_eq!(resolved.display, display);
        }
        let dir = project(&[("package.json", scripts)]);
        let resolved = resolve_script(dir.path(), "deploy", &[]).unwrap();
        assert_eq!(resolved.display, "npm run deploy");
        let texts: Vec<_> = resolved.bodies.iter().map(|b| b.text.as_str()).collect();
        assert_eq!(texts, ["npm run release", "git push"]);
        let resolved = resolve_script(dir.path(), "build", &[]).unwrap();
        assert_eq!(resolved.bodies.len(), 2);
    }

    #[test]
    fn other_ecosystems() {
        let dir = project(&[
            ("Cargo.toml", "[package]"),
            (
                "Makefile",
                "all: build\nbuild:\n\t@cc -o x x.c\ndeploy: build\n\tgit push\nVAR := 1\n.PHONY: all\n",
            ),
            ("go.mod", "module x"),
            ("pytest.ini", ""),
        ]);
        let root = dir.path();
        assert_eq!(
            resolve_script(root, "clippy", &[]).unwrap().display,
            "cargo clippy"
        );
        assert_eq!(
            resolve_script(root, "deploy", &[])
                .unwrap()
                .bodies
                .iter()
                .map(|b| b.text.clone())
                .collect::<Vec<_>>(),
            ["git push", "cc -o x x.c"]
        );
        assert_eq!(
            resolve_script(root, "vet", &[]).unwrap().display,
            "go vet ./..."
        );
        assert_eq!(
            resolve_script(root, "go:test", &[]).unwrap().display,
            "go test ./..."
        );
        assert_eq!(
            resolve_script(root, "test", &[]).unwrap().source,
            ScriptSource::Cargo
        );
        assert_eq!(
            resolve_script(root, "pytest", &["-x".into()])
                .unwrap()
                .source,
            ScriptSource::Pytest
        );
        let error = resolve_script(root, "nope", &[]).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("unknown script \"nope\""), "{message}");
        assert!(message.contains("make: all, build, deploy"), "{message}");
        assert!(message.contains("cargo: build"), "{message}");
        let empty = tempfile::tempdir().unwrap();
        assert!(matches!(
            resolve_script(empty.path(), "test", &[]),
            Err(ScriptError::NoScripts { .. })
        ));
        let broken = project(&[("package.json", "{")]);
        assert!(matches!(
            resolve_script(broken.path(), "test", &[]),
            Err(ScriptError::InvalidPackageJson { .. })
        ));
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
