use super::*;
use crate::checks::test_support::{ALL_TOOLS, FakePath, project};

fn pick(root: &Path, changed: &[&str], config: &ChecksConfig) -> Selection {
    pick_with(root, changed, config, &ChecksOverrides::default())
}

fn pick_with(
    root: &Path,
    changed: &[&str],
    config: &ChecksConfig,
    overrides: &ChecksOverrides,
) -> Selection {
    select_with(
        root,
        changed,
        config,
        overrides,
        &FakePath::with(ALL_TOOLS).probe(),
    )
}

fn names(selection: &Selection) -> Vec<&str> {
    selection.checks.iter().map(|c| c.name.as_str()).collect()
}

/// A Cargo workspace with clippy, a pnpm web package, a pytest project at the root, a Go
/// module and a C library built by make.
fn monorepo() -> tempfile::TempDir {
    project(&[
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\"]\n[workspace.lints.clippy]\n",
        ),
        ("crates/core/Cargo.toml", "[package]\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\n[tool.ruff]\n"),
        ("tests/test_tool.py", ""),
        (
            "web/package.json",
            r#"{"scripts": {"typecheck": "tsc", "lint": "eslint .", "test": "vitest"}}"#,
        ),
        ("web/pnpm-lock.yaml", ""),
        ("svc/go.mod", "module svc\n"),
        ("native/Makefile", "test:\n\t./run-tests\n"),
    ])
}

#[test]
fn a_typescript_change_selects_only_its_package() {
    let dir = monorepo();
    let selection = pick(dir.path(), &["web/src/util.ts"], &ChecksConfig::default());
    assert_eq!(selection.patch_kind, PatchKind::Frontend);
    assert_eq!(
        names(&selection),
        [
            "pnpm run typecheck (web)",
            "pnpm run lint (web)",
            "pnpm run test (web)"
        ]
    );
    assert!(selection.checks.iter().all(|c| c.dir == "web"));
    assert_eq!(
        selection.reason,
        "smart selection for a frontend patch: typecheck, lint, test"
    );
    assert_eq!(selection.skipped, None);
    assert!(!selection.review_required && !selection.approval_required);
}

#[test]
fn a_rust_change_runs_cargo_not_pytest() {
    let dir = monorepo();
    let selection = pick(
        dir.path(),
        &["crates/core/src/lib.rs"],
        &ChecksConfig::default(),
    );
    assert_eq!(selection.patch_kind, PatchKind::Backend);
    // Backend: typecheck (a build counts) and tests, no lint.
    assert_eq!(names(&selection), ["cargo check", "cargo test"]);
    assert_eq!(
        selection.reason,
        "smart selection for a backend patch: typecheck, test"
    );
    assert_eq!(selection.risk_tier, RiskTier::Medium);
}

#[test]
fn mixed_changes_order_cheapest_kind_then_root_first() {
    let dir = monorepo();
    let selection = pick(
        dir.path(),
        &["web/src/App.tsx", "src/main.rs", "tool.py", "svc/main.go"],
        &ChecksConfig::default(),
    );
    assert_eq!(selection.patch_kind, PatchKind::Frontend);
    assert_eq!(
        names(&selection),
        [
            "cargo check",
            "go build (svc)",
            "pnpm run typecheck (web)",
            "cargo clippy",
            "ruff",
            "go vet (svc)",
            "pnpm run lint (web)",
            "cargo test",
            "pytest",
            "go test (svc)",
            "pnpm run test (web)",
        ]
    );
}

#[test]
fn uncovered_files_and_makefiles_run_make_targets() {
    let dir = monorepo();
    let selection = pick(dir.path(), &["native/src/lib.c"], &ChecksConfig::default());
    assert_eq!(names(&selection), ["make test (native)"]);
    let selection = pick(dir.path(), &["native/Makefile"], &ChecksConfig::default());
    assert_eq!(selection.patch_kind, PatchKind::UnknownCode);
    assert_eq!(names(&selection), ["make test (native)"]);
    // A file no discovered check covers, with no Makefile: nothing, and why.
    let selection = pick(dir.path(), &["web/src/data.yaml"], &ChecksConfig::default());
    assert!(selection.checks.is_empty());
    let skipped = selection.skipped.unwrap();
    assert!(
        skipped.starts_with("no checks found for the changed files ("),
        "{skipped}"
    );
    let selection = pick(dir.path(), &["../elsewhere/x.rs"], &ChecksConfig::default());
    assert!(selection.skipped.unwrap().contains("no Cargo.toml"));
}

#[test]
fn docs_only_skips_and_test_only_runs_tests() {
    let dir = monorepo();
    let selection = pick(
        dir.path(),
        &["README.md", "docs/guide.md"],
        &ChecksConfig::default(),
    );
    assert_eq!(selection.patch_kind, PatchKind::DocsOnly);
    assert_eq!(selection.risk_tier, RiskTier::Low);
    assert!(selection.checks.is_empty());
    assert_eq!(
        selection.skipped.as_deref(),
        Some("docs-only change: no checks needed")
    );

    let selection = pick(
        dir.path(),
        &["crates/core/tests/it.rs", "web/src/a.test.ts"],
        &ChecksConfig::default(),
    );
    assert_eq!(selection.patch_kind, PatchKind::TestOnly);
    assert_eq!(names(&selection), ["cargo test", "pnpm run test (web)"]);
}

#[test]
fn risky_changes_require_review_and_ci_approval() {
    let dir = monorepo();
    let selection = pick(
        dir.path(),
        &[".github/workflows/ci.yml", "src/main.rs"],
        &ChecksConfig::default(),
    );
    assert_eq!(selection.patch_kind, PatchKind::CiRisk);
    assert!(selection.review_required && selection.approval_required);
    // Full: lint included.
    assert_eq!(
        names(&selection),
        ["cargo check", "cargo clippy", "cargo test"]
    );

    let selection = pick(dir.path(), &["src/auth/mod.rs"], &ChecksConfig::default());
    assert_eq!(selection.patch_kind, PatchKind::AuthRisk);
    assert!(selection.review_required && !selection.approval_required);
    assert_eq!(
        names(&selection),
        ["cargo check", "cargo clippy", "cargo test"]
    );

    // Nothing to run, nothing to approve; the review stays.
    let selection = pick(
        dir.path(),
        &[".github/workflows/ci.yml"],
        &ChecksConfig::default(),
    );
    assert!(selection.review_required && !selection.approval_required);
    assert!(selection.skipped.is_some());
}

#[test]
fn strategy_all_runs_every_check_of_the_changed_projects() {
    let dir = monorepo();
    let config = ChecksConfig {
        strategy: CheckStrategy::All,
        ..ChecksConfig::default()
    };
    let selection = pick(dir.path(), &["web/README.md"], &config);
    assert_eq!(selection.patch_kind, PatchKind::DocsOnly);
    assert_eq!(
        names(&selection),
        [
            "pnpm run typecheck (web)",
            "pnpm run lint (web)",
            "pnpm run test (web)"
        ]
    );
    assert_eq!(
        selection.reason,
        "strategy all for a docs-only patch: every check"
    );
    let selection = pick(dir.path(), &["db/schema.sql"], &config);
    assert_eq!(selection.patch_kind, PatchKind::DbRisk);
    assert!(selection.review_required && !selection.approval_required);
}

#[test]
fn configuration_precedence() {
    let dir = monorepo();
    let root = dir.path();
    let rust = &["src/main.rs"][..];

    let disabled = ChecksConfig {
        enabled: false,
        ..ChecksConfig::default()
    };
    let selection = pick(root, rust, &disabled);
    assert!(selection.checks.is_empty());
    assert_eq!(
        selection.skipped.as_deref(),
        Some("checks disabled in tools.json")
    );

    let mut config = ChecksConfig {
        scripts: vec!["cargo clippy".into(), "pytest".into()],
        ..ChecksConfig::default()
    };
    // checks.scripts: exactly those, in that order, even for a Rust change.
    let selection = pick(root, rust, &config);
    assert_eq!(names(&selection), ["cargo clippy", "pytest"]);
    assert_eq!(selection.reason, "configured scripts: cargo clippy, pytest");

    // A kind's policy scripts win over checks.scripts; names resolve through `run_script`.
    config.policies.insert(
        "backend".into(),
        CheckPolicy {
            scripts: Some(vec!["cargo:fmt".into(), "nope".into(), "test".into()]),
            review: Some(ReviewRequirement::Required),
            ..CheckPolicy::default()
        },
    );
    let selection = pick(root, rust, &config);
    assert_eq!(names(&selection), ["cargo:fmt", "test"]);
    assert_eq!(selection.checks[0].ecosystem, Ecosystem::Configured);
    assert_eq!(selection.checks[0].display, "cargo fmt");
    assert_eq!(selection.checks[1].display, "cargo test");
    assert_eq!(selection.missing.len(), 1);
    assert_eq!(selection.missing[0].0, "nope");
    assert!(
        selection.missing[0].1.contains("unknown script \"nope\""),
        "{:?}",
        selection.missing
    );
    assert!(selection.review_required);

    // A web change resolves a bare script name in its own package first.
    let web = ChecksConfig {
        scripts: vec!["lint".into()],
        ..ChecksConfig::default()
    };
    let selection = pick(root, &["web/src/a.ts"], &web);
    assert_eq!(names(&selection), ["lint (web)"]);
    assert_eq!(selection.checks[0].display, "pnpm run lint");
    assert_eq!(selection.checks[0].kind, CheckKind::Lint);

    // A disabled policy skips with its reason.
    config.policies.insert(
        "backend".into(),
        CheckPolicy {
            enabled: Some(false),
            reason: Some("backend checks run in CI".into()),
            ..CheckPolicy::default()
        },
    );
    let selection = pick(root, rust, &config);
    assert_eq!(
        selection.skipped.as_deref(),
        Some("backend checks run in CI")
    );
    assert!(selection.checks.is_empty());
}

#[test]
fn overrides_add_and_disable() {
    let dir = monorepo();
    let overrides = ChecksOverrides {
        add: vec![
            "npm run lint".into(),
            "make:test".into(),
            "cargo test".into(),
            "ghost".into(),
        ],
        disable: vec!["cargo check".into(), "pnpm run lint".into()],
    };
    let selection = pick_with(
        dir.path(),
        &["src/main.rs"],
        &ChecksConfig::default(),
        &overrides,
    );
    // `npm run lint` designates nothing (the package uses pnpm) → missing; `make:test`
    // resolves nowhere at the root; `cargo test` is already selected.
    assert_eq!(names(&selection), ["cargo test"]);
    let missing: Vec<&str> = selection.missing.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(missing, ["npm run lint", "make:test", "ghost"]);

    // Added names are looked up in the changed projects and the root only.
    let overrides = ChecksOverrides {
        add: vec!["pnpm run lint".into(), "ruff".into(), "cargo:doc".into()],
        disable: vec!["cargo check".into()],
    };
    let selection = pick_with(
        dir.path(),
        &["src/main.rs"],
        &ChecksConfig::default(),
        &overrides,
    );
    assert_eq!(names(&selection), ["cargo test", "ruff", "cargo:doc"]);
    assert_eq!(selection.checks[2].display, "cargo doc");
    assert_eq!(selection.missing[0].0, "pnpm run lint");
    // From the web package, its lint is found by its short name.
    let selection = pick_with(
        dir.path(),
        &["web/src/a.test.ts"],
        &ChecksConfig::default(),
        &ChecksOverrides {
            add: vec!["pnpm run lint".into()],
            disable: Vec::new(),
        },
    );
    assert_eq!(
        names(&selection),
        ["pnpm run test (web)", "pnpm run lint (web)"]
    );
    // A docs-only skip stays a skip.
    let selection = pick_with(
        dir.path(),
        &["README.md"],
        &ChecksConfig::default(),
        &overrides,
    );
    assert!(selection.checks.is_empty());
}

#[test]
fn list_shows_the_root_after_overrides() {
    let dir = monorepo();
    let tools = FakePath::with(ALL_TOOLS);
    let overrides = ChecksOverrides {
        add: vec!["cargo:doc".into(), "missing-one".into()],
        disable: vec!["ruff".into()],
    };
    let listed = list_with(
        dir.path(),
        &ChecksConfig::default(),
        &overrides,
        &tools.probe(),
    );
    let names: Vec<&str> = listed.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "cargo check",
            "cargo clippy",
            "cargo test",
            "pytest",
            "cargo:doc"
        ]
    );
    assert!(listed.notes.contains(&"ruff is disabled".to_string()));
    assert!(
        listed
            .notes
            .iter()
            .any(|n| n.starts_with("missing-one: unknown script")),
        "{:?}",
        listed.notes
    );

    let configured = ChecksConfig {
        enabled: false,
        scripts: vec!["test".into()],
        ..ChecksConfig::default()
    };
    let listed = list_with(
        dir.path(),
        &configured,
        &ChecksOverrides::default(),
        &tools.probe(),
    );
    assert_eq!(listed.checks.len(), 1);
    assert_eq!(listed.checks[0].display, "cargo test");
    assert!(
        listed
            .notes
            .iter()
            .any(|n| n.contains("disabled in tools.json"))
    );
}

#[test]
fn public_entry_points_use_the_process_path() {
    let dir = project(&[("notes/todo.txt", "")]);
    let selection = select(
        dir.path(),
        &["notes/todo.txt"],
        &ChecksConfig::default(),
        &ChecksOverrides::default(),
    );
    assert_eq!(selection.patch_kind, PatchKind::DocsOnly);
    let listed = list(
        dir.path(),
        &ChecksConfig::default(),
        &ChecksOverrides::default(),
    );
    assert!(listed.checks.is_empty());
}

#[test]
fn kinds_guessed_for_configured_scripts() {
    assert_eq!(guess_kind("lint npm run lint"), CheckKind::Lint);
    assert_eq!(guess_kind("cargo:clippy cargo clippy"), CheckKind::Lint);
    assert_eq!(guess_kind("tsc npm run tsc"), CheckKind::Typecheck);
    assert_eq!(guess_kind("build make build"), CheckKind::Build);
    assert_eq!(guess_kind("e2e npm run e2e"), CheckKind::Test);
}
