//! Patch checks: which verification commands a project offers, and which of them a change
//! needs.
//!
//! - [`discover`] reads marker files (Cargo.toml, pyproject.toml, package.json, go.mod,
//!   Makefile, …) in the project root and in the project directories of a change: it never
//!   walks the repository and never starts a process (tools are looked up on `PATH` by hand),
//!   so it stays in the low milliseconds on large repositories.
//! - [`classify_patch`] and [`risk_tier`] say what kind of change a set of paths is.
//! - [`select`] maps the changed files to their projects and ecosystems, applies the smart
//!   policy of the patch kind and the `checks` configuration, and returns the commands to run,
//!   cheapest first.
//!
//! Nothing here runs a command: the caller runs [`Selection::checks`] in the sandbox, once the
//! project is trusted (and, for CI changes, once the user approved).

mod classify;
mod discover;
mod environment;
mod patterns;
mod probe;
mod project_file;
mod select;
#[cfg(test)]
mod test_support;

use serde::Serialize;

pub use classify::{PatchKind, RiskTier, UnknownPatchKind, classify_patch, risk_tier};
pub use discover::{discover, project_dirs};
pub use environment::environment_cause;
pub use probe::program_found;
pub use project_file::{ChecksFileError, ChecksOverrides, parse_project_checks};
pub use select::{Selection, list, select};

/// Lockfiles of JavaScript package managers (they also mark a change as a package change).
const NODE_LOCKFILES: [&str; 5] = [
    "bun.lockb",
    "bun.lock",
    "pnpm-lock.yaml",
    "yarn.lock",
    "package-lock.json",
];

/// The toolchain a check belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    /// A Rust project (Cargo.toml).
    Cargo,
    /// A Python project (pyproject.toml, setup.py, pytest.ini, tests/, …).
    Python,
    /// A JavaScript/TypeScript package (package.json).
    Node,
    /// A Go module (go.mod).
    Go,
    /// Makefile targets.
    Make,
    /// A script named in the configuration and resolved with `run_script`'s rules.
    Configured,
}

impl Ecosystem {
    /// The lowercase name: `cargo`, `python`, `node`, `go`, `make`, `configured`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cargo => "cargo",
            Self::Python => "python",
            Self::Node => "node",
            Self::Go => "go",
            Self::Make => "make",
            Self::Configured => "configured",
        }
    }
}

/// What a check verifies. The declaration order is the running order: cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    /// Compiles (`cargo check`, `go build`); counts as a typecheck for the policy.
    Build,
    /// Type checking (`tsc` scripts, mypy).
    Typecheck,
    /// Linting (clippy, ruff, `npm run lint`, `go vet`).
    Lint,
    /// Tests.
    Test,
}

impl CheckKind {
    /// Every kind, cheapest first.
    pub const ALL: [CheckKind; 4] = [Self::Build, Self::Typecheck, Self::Lint, Self::Test];

    /// The lowercase name: `build`, `typecheck`, `lint`, `test`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Build => "build",
            Self::Typecheck => "typecheck",
            Self::Lint => "lint",
            Self::Test => "test",
        }
    }
}

/// One command that verifies a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckSpec {
    /// Unique human name: `cargo test`, `pytest`, `npm run lint`, `make test`, a configured
    /// script name; checks outside the root carry their directory: `npm run test (web)`.
    pub name: String,
    /// The toolchain.
    pub ecosystem: Ecosystem,
    /// What it verifies.
    pub kind: CheckKind,
    /// Program to execute: a name looked up on `PATH`, or an absolute path (a virtualenv's
    /// interpreter or tool).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The command line, shell-quoted, as run from [`dir`](Self::dir) (a virtualenv program is
    /// shown relative to it: `.venv/bin/python -m pytest`).
    pub display: String,
    /// Directory relative to the project root where it runs (`""` is the root).
    pub dir: String,
}

impl CheckSpec {
    /// Whether `name` designates this check: its full name, or its name without the
    /// directory (`npm run test` designates `npm run test (web)`).
    pub fn matches(&self, name: &str) -> bool {
        let name = name.trim();
        self.name == name || self.base_name() == name
    }

    /// The name without the directory suffix.
    fn base_name(&self) -> &str {
        if self.dir.is_empty() {
            return &self.name;
        }
        self.name
            .strip_suffix(')')
            .and_then(|rest| rest.strip_suffix(self.dir.as_str()))
            .and_then(|rest| rest.strip_suffix(" ("))
            .unwrap_or(&self.name)
    }

    /// A check named `base` (plus the directory outside the root), its display built from
    /// `shown` (the program as the user sees it) and the arguments.
    fn new(
        base: &str,
        ecosystem: Ecosystem,
        kind: CheckKind,
        (program, shown): (String, &str),
        args: &[&str],
        dir: &str,
    ) -> Self {
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_string()).collect();
        Self {
            name: check_name(base, dir),
            ecosystem,
            kind,
            display: display_line(shown, &args),
            program,
            args,
            dir: dir.to_string(),
        }
    }
}

/// `base`, or `base (dir)` outside the root.
fn check_name(base: &str, dir: &str) -> String {
    if dir.is_empty() {
        base.to_string()
    } else {
        format!("{base} ({dir})")
    }
}

fn display_line(program: &str, args: &[String]) -> String {
    std::iter::once(program)
        .chain(args.iter().map(String::as_str))
        .map(crate::script::shell_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What discovery found: the checks, and why expected ones are absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Discovery {
    /// The checks, per directory (root first) and per ecosystem, cheapest kind first.
    pub checks: Vec<CheckSpec>,
    /// What a user should know: "ruff is configured in pyproject.toml but not installed",
    /// "package.json has no test script", …
    pub notes: Vec<String>,
}
