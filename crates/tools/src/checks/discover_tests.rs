use super::*;
use crate::checks::test_support::{ALL_TOOLS, FakePath, executable, project};

fn displays(discovery: &Discovery) -> Vec<(String, String, &'static str)> {
    discovery
        .checks
        .iter()
        .map(|c| (c.name.clone(), c.display.clone(), c.kind.as_str()))
        .collect()
}

fn names(discovery: &Discovery) -> Vec<&str> {
    discovery.checks.iter().map(|c| c.name.as_str()).collect()
}

fn root_only(root: &Path, path: &FakePath) -> Discovery {
    discover_dirs(root, &[String::new()], &path.probe())
}

#[test]
fn cargo_project() {
    let tools = FakePath::with(ALL_TOOLS);
    let dir = project(&[("Cargo.toml", "[package]\nname = \"x\"\n")]);
    let found = root_only(dir.path(), &tools);
    assert_eq!(
        displays(&found),
        [
            (
                "cargo check".to_string(),
                "cargo check --all-targets".to_string(),
                "build"
            ),
            ("cargo test".into(), "cargo test".into(), "test"),
        ]
    );
    assert!(found.notes.is_empty(), "{:?}", found.notes);
    assert_eq!(found.checks[0].ecosystem, Ecosystem::Cargo);
    assert_eq!(found.checks[0].dir, "");

    // Clippy only when configured, and only when installed.
    for files in [
        &[(
            "Cargo.toml",
            "[package]\n[lints.clippy]\nunwrap_used = \"deny\"\n",
        )][..],
        &[("Cargo.toml", "[workspace]\n[workspace.lints.clippy]\n")][..],
        &[("Cargo.toml", "[package]\n"), ("clippy.toml", "")][..],
    ] {
        let dir = project(files);
        let found = root_only(dir.path(), &tools);
        assert_eq!(
            names(&found),
            ["cargo check", "cargo clippy", "cargo test"],
            "{files:?}"
        );
        assert_eq!(
            found.checks[1].display,
            "cargo clippy --all-targets -- -D warnings"
        );
        let found = root_only(dir.path(), &FakePath::with(&["cargo"]));
        assert_eq!(names(&found), ["cargo check", "cargo test"]);
        assert_eq!(
            found.notes,
            ["clippy is configured but not installed (no cargo-clippy on PATH)"]
        );
    }

    let found = root_only(dir.path(), &FakePath::with(&[]));
    assert!(found.checks.is_empty());
    assert!(
        found.notes[0].contains("cargo is not installed"),
        "{:?}",
        found.notes
    );
}

#[test]
fn python_project() {
    let tools = FakePath::with(ALL_TOOLS);
    let dir = project(&[
        (
            "pyproject.toml",
            "[project]\nname = \"x\"\n[tool.ruff]\nline-length = 100\n[tool.mypy]\nstrict = true\n",
        ),
        ("tests/test_app.py", ""),
    ]);
    let found = root_only(dir.path(), &tools);
    assert_eq!(
        displays(&found),
        [
            ("mypy".to_string(), "mypy .".to_string(), "typecheck"),
            ("ruff".into(), "ruff check .".into(), "lint"),
            ("pytest".into(), "python3 -m pytest".into(), "test"),
        ]
    );

    // The project's virtualenv wins over PATH, and is run by absolute path.
    executable(dir.path(), ".venv/bin/python");
    executable(dir.path(), ".venv/bin/ruff");
    let found = root_only(dir.path(), &FakePath::with(&["python3"]));
    assert_eq!(
        displays(&found),
        [
            (
                "ruff".to_string(),
                ".venv/bin/ruff check .".to_string(),
                "lint"
            ),
            ("pytest".into(), ".venv/bin/python -m pytest".into(), "test"),
        ]
    );
    assert_eq!(
        Path::new(&found.checks[1].program),
        dir.path().join(".venv/bin/python")
    );
    assert_eq!(
        found.notes,
        ["mypy is configured in pyproject.toml but not installed"]
    );
}

#[test]
fn python_markers() {
    let tools = FakePath::with(ALL_TOOLS);
    // Each of these is a pytest project.
    for files in [
        &[("pytest.ini", "")][..],
        &[("setup.cfg", "[tool:pytest]\n")][..],
        &[("tox.ini", "[pytest]\n")][..],
        &[("conftest.py", "")][..],
        &[("test_x.py", "")][..],
        &[("tests/test_x.py", "")][..],
        &[("pyproject.toml", "[tool.pytest.ini_options]\n")][..],
    ] {
        let dir = project(files);
        assert_eq!(
            names(&root_only(dir.path(), &tools)),
            ["pytest"],
            "{files:?}"
        );
    }
    // A Python project without tests has no pytest, and says so; ruff.toml and mypy.ini
    // configure their tools.
    let dir = project(&[("setup.py", ""), ("ruff.toml", ""), ("mypy.ini", "")]);
    let found = root_only(dir.path(), &tools);
    assert_eq!(names(&found), ["mypy", "ruff"]);
    assert!(found.notes[0].contains("no pytest"), "{:?}", found.notes);
    // Rust integration tests are not Python tests.
    let dir = project(&[("Cargo.toml", "[package]\n"), ("tests/it.rs", "")]);
    assert_eq!(
        names(&root_only(dir.path(), &tools)),
        ["cargo check", "cargo test"]
    );
    // Configured but not installed anywhere.
    let dir = project(&[("pyproject.toml", "[tool.ruff]\n"), ("conftest.py", "")]);
    let found = root_only(dir.path(), &FakePath::with(&[]));
    assert!(found.checks.is_empty());
    assert_eq!(found.notes.len(), 2, "{:?}", found.notes);
    assert_eq!(
        found.notes[0],
        "ruff is configured in pyproject.toml but not installed"
    );
}

#[test]
fn node_project() {
    let tools = FakePath::with(ALL_TOOLS);
    let package = r#"{"scripts": {"build": "tsc", "test": "vitest run", "lint": "eslint .", "typecheck": "tsc --noEmit", "check": "svelte-check"}}"#;
    let dir = project(&[("package.json", package)]);
    let found = root_only(dir.path(), &tools);
    assert_eq!(
        displays(&found),
        [
            (
                "npm run check".to_string(),
                "npm run check".to_string(),
                "typecheck"
            ),
            (
                "npm run typecheck".into(),
                "npm run typecheck".into(),
                "typecheck"
            ),
            ("npm run lint".into(), "npm run lint".into(), "lint"),
            ("npm run test".into(), "npm run test".into(), "test"),
        ]
    );
    assert!(found.notes.is_empty());

    // The lockfile names the package manager; not installed → a note.
    let dir = project(&[("package.json", package), ("pnpm-lock.yaml", "")]);
    assert_eq!(
        root_only(dir.path(), &tools).checks[0].display,
        "pnpm run check"
    );
    let found = root_only(dir.path(), &FakePath::with(&["npm"]));
    assert!(found.checks.is_empty());
    assert!(
        found.notes[0].contains("pnpm is not installed"),
        "{:?}",
        found.notes
    );

    // npm's placeholder test script is no test.
    let dir = project(&[(
        "package.json",
        r#"{"scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}"#,
    )]);
    let found = root_only(dir.path(), &tools);
    assert!(found.checks.is_empty());
    assert_eq!(found.notes, ["package.json has no test script"]);

    let dir = project(&[("package.json", "{")]);
    let found = root_only(dir.path(), &tools);
    assert!(
        found.notes[0].contains("is not valid JSON"),
        "{:?}",
        found.notes
    );
}

#[test]
fn workspace_package_uses_the_top_lockfile() {
    let tools = FakePath::with(ALL_TOOLS);
    let dir = project(&[
        ("yarn.lock", ""),
        (
            "packages/ui/package.json",
            r#"{"scripts": {"test": "jest"}}"#,
        ),
    ]);
    let found = discover_dirs(dir.path(), &["packages/ui".to_string()], &tools.probe());
    assert_eq!(names(&found), ["yarn run test (packages/ui)"]);
    assert_eq!(found.checks[0].dir, "packages/ui");
    assert!(found.checks[0].matches("yarn run test"));
    assert!(found.checks[0].matches("yarn run test (packages/ui)"));
    assert!(!found.checks[0].matches("yarn run lint"));
}

#[test]
fn go_and_make_projects() {
    let tools = FakePath::with(ALL_TOOLS);
    let dir = project(&[("go.mod", "module x\n")]);
    assert_eq!(
        displays(&root_only(dir.path(), &tools)),
        [
            (
                "go build".to_string(),
                "go build ./...".to_string(),
                "build"
            ),
            ("go vet".into(), "go vet ./...".into(), "lint"),
            ("go test".into(), "go test ./...".into(), "test"),
        ]
    );
    let found = root_only(dir.path(), &FakePath::with(&[]));
    assert!(found.checks.is_empty());
    assert!(found.notes[0].contains("go is not installed"));

    let dir = project(&[(
        "Makefile",
        "all: build\nbuild:\n\tcc -o x x.c\ntest: build\n\t./x --test\ncheck:\n\tcppcheck .\n",
    )]);
    assert_eq!(
        displays(&root_only(dir.path(), &tools)),
        [
            ("make check".to_string(), "make check".to_string(), "test"),
            ("make test".into(), "make test".into(), "test"),
        ]
    );
    let found = root_only(dir.path(), &FakePath::with(&[]));
    assert_eq!(
        found.notes,
        ["the Makefile has check and test but make is not installed (not on PATH)"]
    );
    // A Makefile without check/test targets offers nothing, silently.
    let dir = project(&[("Makefile", "build:\n\tcc x.c\n")]);
    assert_eq!(root_only(dir.path(), &tools), Discovery::default());
}

#[test]
fn discover_reads_the_root_and_the_given_dirs() {
    let tools = FakePath::with(ALL_TOOLS);
    let dir = project(&[
        ("Cargo.toml", "[workspace]\n"),
        ("web/package.json", r#"{"scripts": {"lint": "eslint ."}}"#),
        ("py/pytest.ini", ""),
    ]);
    let found = discover_dirs(
        dir.path(),
        &[String::new(), "web".into(), "web".into()],
        &tools.probe(),
    );
    assert_eq!(
        names(&found),
        ["cargo check", "cargo test", "npm run lint (web)"]
    );
    assert_eq!(found.notes, ["web: package.json has no test script"]);
    // The public entry point always includes the root.
    let public = discover(dir.path(), &["py".to_string()]);
    assert!(public.checks.iter().any(|c| c.dir == "py"));
}

#[test]
fn project_dirs_find_the_nearest_manifest() {
    let dir = project(&[
        ("Cargo.toml", "[workspace]\nmembers = [\"crates/*\"]\n"),
        ("crates/a/Cargo.toml", "[package]\n"),
        ("web/package.json", "{}"),
        ("tools/py/pyproject.toml", ""),
        ("native/Makefile", ""),
        ("other/Cargo.toml", "[package]\n"),
    ]);
    let root = dir.path();
    assert_eq!(
        project_dirs(
            root,
            &[
                "crates/a/src/lib.rs",
                "web/src/App.tsx",
                "./web/index.html",
                "tools/py/pkg/mod.py",
                "native/src/x.c",
                "README.md",
                "../outside.rs",
            ]
        ),
        ["", "native", "tools/py", "web"]
    );
    // Without a workspace above, a crate is its own project.
    let lone = project(&[("lib/Cargo.toml", "[package]\n")]);
    assert_eq!(project_dirs(lone.path(), &["lib/src/lib.rs"]), ["lib"]);
    // No manifest anywhere: no project.
    let empty = project(&[("a/b.txt", "")]);
    assert!(project_dirs(empty.path(), &["a/b.txt"]).is_empty());
    let absolute = root.join("web/src/x.ts");
    assert_eq!(project_dirs(root, &[absolute.to_str().unwrap()]), ["web"]);
    assert!(has_table("[workspace.package]\n", "workspace"));
    assert!(!has_table("[workspaces]\n", "workspace"));
}
