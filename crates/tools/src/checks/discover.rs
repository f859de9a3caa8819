//! Finding a project's checks from its marker files, and the project directory of a changed
//! file. Only the listed directories are read (one directory listing each, plus the manifests
//! that decide a check); no process is started: tools are looked up on `PATH` by hand.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::probe::{Probe, executable_in};
use super::{CheckKind, CheckSpec, Discovery, Ecosystem, NODE_LOCKFILES};
use crate::script::{PackageManager, ScriptSource, detect_package_manager, package_json_scripts};

/// Files that make a directory a project directory.
const MANIFESTS: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pytest.ini",
    "tox.ini",
    "go.mod",
    "Makefile",
    "makefile",
    "GNUmakefile",
];
const PYTHON_MARKERS: &[&str] = &[
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pytest.ini",
    "tox.ini",
];
const MAKEFILES: &[&str] = &["GNUmakefile", "makefile", "Makefile"];
/// npm's `npm init` placeholder: a test script that only fails.
const NPM_PLACEHOLDER_TEST: &str = "Error: no test specified";

/// The checks of the project root and of each of `dirs` (relative to `root`; see
/// [`project_dirs`]), root first. Reads marker files only; tools missing from `PATH` become
/// notes.
pub fn discover(root: &Path, dirs: &[String]) -> Discovery {
    let probe = Probe::from_env();
    let mut all = vec![String::new()];
    all.extend(dirs.iter().cloned());
    discover_dirs(root, &all, &probe)
}

/// Discovery of exactly `dirs` (deduplicated, in order).
pub(super) fn discover_dirs(root: &Path, dirs: &[String], probe: &Probe) -> Discovery {
    let mut discovery = Discovery::default();
    let mut seen = HashSet::new();
    for dir in dirs {
        if seen.insert(dir.as_str()) {
            discover_dir(root, dir, probe, &mut discovery);
        }
    }
    discovery
}

/// For each changed path (relative to `root`), the nearest ancestor directory that has a
/// manifest (Cargo.toml, package.json, pyproject.toml, setup.py, setup.cfg, pytest.ini,
/// tox.ini, go.mod, a Makefile), the root being `""`; the workspace root instead of a Cargo
/// workspace member. Deduplicated and sorted, so the root comes first. Paths with no manifest
/// above them, and paths leaving the root, have none.
pub fn project_dirs(root: &Path, changed: &[&str]) -> Vec<String> {
    let mut finder = DirFinder::new(root);
    let mut dirs: Vec<String> = changed
        .iter()
        .filter_map(|path| finder.project_dir(path))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Finds project directories, remembering what it learnt about each directory.
pub(super) struct DirFinder<'a> {
    root: &'a Path,
    has_manifest: HashMap<String, bool>,
    is_workspace: HashMap<String, bool>,
}

impl<'a> DirFinder<'a> {
    pub(super) fn new(root: &'a Path) -> Self {
        Self {
            root,
            has_manifest: HashMap::new(),
            is_workspace: HashMap::new(),
        }
    }

    /// The project directory of one changed path.
    pub(super) fn project_dir(&mut self, path: &str) -> Option<String> {
        let path = normalize(self.root, path)?;
        let nearest = ancestors(&path).find(|dir| self.manifest_in(dir))?;
        if self.root.join(nearest).join("Cargo.toml").is_file() {
            let workspace = std::iter::once(nearest)
                .chain(ancestors(nearest))
                .find(|dir| self.workspace_in(dir));
            if let Some(workspace) = workspace {
                return Some(workspace.to_string());
            }
        }
        Some(nearest.to_string())
    }

    fn manifest_in(&mut self, dir: &str) -> bool {
        let root = self.root;
        *self.has_manifest.entry(dir.to_string()).or_insert_with(|| {
            let dir = root.join(dir);
            MANIFESTS.iter().any(|name| dir.join(name).is_file())
        })
    }

    fn workspace_in(&mut self, dir: &str) -> bool {
        let root = self.root;
        *self.is_workspace.entry(dir.to_string()).or_insert_with(|| {
            crate::paths::read_project_text(&root.join(dir), "Cargo.toml")
                .is_some_and(|text| has_table(&text, "workspace"))
        })
    }
}

/// `path` relative to `root`, `/`-separated, without `.` segments; `None` when it leaves the
/// root.
pub(super) fn normalize(root: &Path, path: &str) -> Option<String> {
    let path = path.replace('\\', "/");
    let relative = if Path::new(&path).is_absolute() {
        Path::new(&path)
            .strip_prefix(root)
            .ok()?
            .to_str()?
            .to_string()
    } else {
        path
    };
    let mut segments = Vec::new();
    for segment in relative.split('/') {
        match segment {
            "" | "." => {}
            ".." => return None,
            other => segments.push(other),
        }
    }
    Some(segments.join("/"))
}

/// The directories above a relative path, nearest first, ending with the root `""`.
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(path);
    std::iter::from_fn(move || {
        let current = rest?;
        if current.is_empty() {
            rest = None;
            return None;
        }
        let parent = current.rsplit_once('/').map_or("", |(parent, _)| parent);
        rest = Some(parent);
        Some(parent)
    })
}

/// Whether a TOML text has the table `[name]` or a sub-table `[name.…]`.
fn has_table(text: &str, name: &str) -> bool {
    text.lines().any(|line| {
        line.trim()
            .strip_prefix('[')
            .and_then(|rest| rest.strip_prefix(name))
            .is_some_and(|rest| rest.starts_with(']') || rest.starts_with('.'))
    })
}

/// The entries of one project directory, read once.
struct DirListing {
    files: HashSet<String>,
    dirs: HashSet<String>,
}

impl DirListing {
    fn read(dir: &Path) -> Self {
        let mut listing = Self {
            files: HashSet::new(),
            dirs: HashSet::new(),
        };
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            // Follows symlinks, like the `is_file` checks of script resolution.
            let path = entry.path();
            if path.is_dir() {
                listing.dirs.insert(name);
            } else {
                listing.files.insert(name);
            }
        }
        listing
    }

    fn has(&self, name: &str) -> bool {
        self.files.contains(name)
    }

    fn read_text(&self, dir: &Path, name: &str) -> String {
        if self.has(name) {
            crate::paths::read_project_text(dir, name).unwrap_or_default()
        } else {
            String::new()
        }
    }
}

/// Collects one directory's checks and notes.
struct DirDiscovery<'a> {
    abs: PathBuf,
    dir: &'a str,
    listing: DirListing,
    probe: &'a Probe,
    out: &'a mut Discovery,
}

fn discover_dir(root: &Path, dir: &str, probe: &Probe, out: &mut Discovery) {
    let abs = root.join(dir);
    let listing = DirListing::read(&abs);
    let mut found = DirDiscovery {
        abs,
        dir,
        listing,
        probe,
        out,
    };
    found.cargo();
    found.python();
    found.node(root);
    found.go();
    found.make();
}

impl DirDiscovery<'_> {
    fn note(&mut self, text: String) {
        let text = if self.dir.is_empty() {
            text
        } else {
            format!("{}: {text}", self.dir)
        };
        self.out.notes.push(text);
    }

    fn push(
        &mut self,
        base: &str,
        ecosystem: Ecosystem,
        kind: CheckKind,
        program: (String, &str),
        args: &[&str],
    ) {
        self.out.checks.push(CheckSpec::new(
            base, ecosystem, kind, program, args, self.dir,
        ));
    }

    /// `program` from `PATH`, shown as itself.
    fn path_program(program: &str) -> (String, &str) {
        (program.to_string(), program)
    }

    fn cargo(&mut self) {
        if !self.listing.has("Cargo.toml") {
            return;
        }
        if !self.probe.on_path("cargo") {
            self.note(
                "Cargo.toml found but cargo is not installed (not on PATH): no Cargo checks".into(),
            );
            return;
        }
        let cargo = Self::path_program("cargo");
        self.push(
            "cargo check",
            Ecosystem::Cargo,
            CheckKind::Build,
            cargo.clone(),
            &["check", "--all-targets"],
        );
        let manifest = self.listing.read_text(&self.abs, "Cargo.toml");
        let clippy_configured = self.listing.has("clippy.toml")
            || self.listing.has(".clippy.toml")
            || has_table(&manifest, "lints.clippy")
            || has_table(&manifest, "workspace.lints.clippy");
        if clippy_configured {
            if self.probe.on_path("cargo-clippy") {
                self.push(
                    "cargo clippy",
                    Ecosystem::Cargo,
                    CheckKind::Lint,
                    cargo.clone(),
                    &["clippy", "--all-targets", "--", "-D", "warnings"],
                );
            } else {
                self.note(
                    "clippy is configured but not installed (no cargo-clippy on PATH)".into(),
                );
            }
        }
        self.push(
            "cargo test",
            Ecosystem::Cargo,
            CheckKind::Test,
            cargo,
            &["test"],
        );
    }

    fn python(&mut self) {
        let listing = &self.listing;
        let test_files = listing.files.iter().any(|name| {
            name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
        });
        let tests_dir = listing.dirs.contains("tests")
            && std::fs::read_dir(self.abs.join("tests"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|entry| entry.file_name().to_string_lossy().ends_with(".py"));
        let conftest = listing.has("conftest.py");
        if !(PYTHON_MARKERS.iter().any(|name| listing.has(name))
            || tests_dir
            || test_files
            || conftest)
        {
            return;
        }
        let pyproject = listing.read_text(&self.abs, "pyproject.toml");
        let setup_cfg = listing.read_text(&self.abs, "setup.cfg");
        let tox_ini = listing.read_text(&self.abs, "tox.ini");

        let mypy_config = if has_table(&pyproject, "tool.mypy") {
            Some("pyproject.toml")
        } else {
            ["mypy.ini", ".mypy.ini"]
                .into_iter()
                .find(|name| listing.has(name))
                .or_else(|| has_table(&setup_cfg, "mypy").then_some("setup.cfg"))
        };
        let ruff_config = if has_table(&pyproject, "tool.ruff") {
            Some("pyproject.toml")
        } else {
            ["ruff.toml", ".ruff.toml"]
                .into_iter()
                .find(|name| listing.has(name))
        };
        let pytest = listing.has("pytest.ini")
            || has_table(&pyproject, "tool.pytest")
            || has_table(&setup_cfg, "tool:pytest")
            || has_table(&tox_ini, "pytest")
            || conftest
            || tests_dir
            || test_files;

        if let Some(config) = mypy_config {
            match self.probe.python_tool(&self.abs, "mypy") {
                Some((program, shown)) => {
                    self.push(
                        "mypy",
                        Ecosystem::Python,
                        CheckKind::Typecheck,
                        (program, &shown),
                        &["."],
                    );
                }
                None => self.note(format!("mypy is configured in {config} but not installed")),
            }
        }
        if let Some(config) = ruff_config {
            match self.probe.python_tool(&self.abs, "ruff") {
                Some((program, shown)) => {
                    self.push(
                        "ruff",
                        Ecosystem::Python,
                        CheckKind::Lint,
                        (program, &shown),
                        &["check", "."],
                    );
                }
                None => self.note(format!("ruff is configured in {config} but not installed")),
            }
        }
        if !pytest {
            self.note(
                "Python project without tests (no pytest.ini, [tool.pytest] section, conftest.py, tests/ or test_*.py): no pytest"
                    .into(),
            );
            return;
        }
        let interpreter = [".venv", "venv"].into_iter().find_map(|venv| {
            executable_in(&self.abs.join(venv).join("bin"), "python").map(|path| {
                (
                    path.to_string_lossy().into_owned(),
                    format!("{venv}/bin/python"),
                )
            })
        });
        let interpreter = interpreter.or_else(|| {
            self.probe
                .on_path("python3")
                .then(|| ("python3".to_string(), "python3".to_string()))
        });
        match interpreter {
            Some((program, shown)) => {
                self.push("pytest", Ecosystem::Python, CheckKind::Test, (program, &shown), &["-m", "pytest"]);
            }
            None => self.note("pytest project but no .venv/bin/python, venv/bin/python or python3 on PATH: no pytest".into()),
        }
    }

    fn node(&mut self, root: &Path) {
        if !self.listing.has("package.json") {
            return;
        }
        let scripts = match package_json_scripts(&self.abs) {
            Ok(scripts) => scripts,
            Err(error) => {
                self.note(format!("{error}: no package.json checks"));
                return;
            }
        };
        let manager = package_manager(root, self.dir);
        let program = manager.program();
        if !self.probe.on_path(program) {
            self.note(format!("package.json found but {program} is not installed (not on PATH): no package.json checks"));
            return;
        }
        for (script, kind) in [
            ("check", CheckKind::Typecheck),
            ("typecheck", CheckKind::Typecheck),
            ("lint", CheckKind::Lint),
            ("test", CheckKind::Test),
        ] {
            let Some(body) = scripts.get(script) else {
                continue;
            };
            if script == "test" && body.contains(NPM_PLACEHOLDER_TEST) {
                continue;
            }
            self.push(
                &format!("{program} run {script}"),
                Ecosystem::Node,
                kind,
                Self::path_program(program),
                &["run", script],
            );
        }
        let has_test = scripts
            .get("test")
            .is_some_and(|body| !body.contains(NPM_PLACEHOLDER_TEST));
        if !has_test {
            self.note("package.json has no test script".into());
        }
    }

    fn go(&mut self) {
        if !self.listing.has("go.mod") {
            return;
        }
        if !self.probe.on_path("go") {
            self.note("go.mod found but go is not installed (not on PATH): no Go checks".into());
            return;
        }
        for (command, kind) in [
            ("build", CheckKind::Build),
            ("vet", CheckKind::Lint),
            ("test", CheckKind::Test),
        ] {
            self.push(
                &format!("go {command}"),
                Ecosystem::Go,
                kind,
                Self::path_program("go"),
                &[command, "./..."],
            );
        }
    }

    fn make(&mut self) {
        if !MAKEFILES.iter().any(|name| self.listing.has(name)) {
            return;
        }
        let mut targets = Vec::new();
        for target in ["check", "test"] {
            // `run_script`'s resolution owns Makefile parsing; `make:` asks for a target only.
            if let Ok(resolved) =
                crate::script::resolve_script(&self.abs, &format!("make:{target}"), &[])
                && resolved.source == ScriptSource::Make
            {
                targets.push(target);
            }
        }
        if targets.is_empty() {
            return;
        }
        if !self.probe.on_path("make") {
            self.note(format!(
                "the Makefile has {} but make is not installed (not on PATH)",
                targets.join(" and ")
            ));
            return;
        }
        for target in targets {
            self.push(
                &format!("make {target}"),
                Ecosystem::Make,
                CheckKind::Test,
                Self::path_program("make"),
                &[target],
            );
        }
    }
}

/// The package manager of the package in `dir`: the lockfile of the nearest directory (up to
/// the root) that has one, since workspaces keep theirs at the top; npm when none has.
fn package_manager(root: &Path, dir: &str) -> PackageManager {
    std::iter::once(dir)
        .chain(ancestors(dir))
        .map(|dir| root.join(dir))
        .find(|abs| NODE_LOCKFILES.iter().any(|lock| abs.join(lock).is_file()))
        .map_or(PackageManager::Npm, |abs| detect_package_manager(&abs))
}

#[cfg(test)]
#[path = "discover_tests.rs"]
mod tests;
