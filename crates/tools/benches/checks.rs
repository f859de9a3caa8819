//! How long check discovery and selection take on a 5,000-file repository (goal: ≤ 50 ms for
//! `select`; they read marker files only, so it should stay well under 5 ms).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::path::Path;

use braincode_tools::ChecksConfig;
use braincode_tools::checks::{ChecksOverrides, list, select};
use criterion::{Criterion, criterion_group, criterion_main};

fn write(root: &Path, path: &str, body: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// A Cargo workspace (with clippy) at the root, a pnpm package in `web/`, and a pytest
/// project at the root: 5,000 files spread over crates, web sources and Python packages.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/*\"]\n[workspace.lints.clippy]\nunwrap_used = \"deny\"\n",
    );
    write(
        root,
        "pyproject.toml",
        "[tool.pytest.ini_options]\n[tool.ruff]\n",
    );
    write(
        root,
        "web/package.json",
        r#"{"scripts": {"typecheck": "tsc --noEmit", "lint": "eslint .", "test": "vitest run"}}"#,
    );
    write(root, "web/pnpm-lock.yaml", "");
    let mut files = 4;
    'fill: for group in 0.. {
        write(root, &format!("crates/c{group}/Cargo.toml"), "[package]\n");
        files += 1;
        for index in 0..40 {
            for path in [
                format!("crates/c{group}/src/m{index}.rs"),
                format!("web/src/g{group}/C{index}.tsx"),
                format!("py/p{group}/mod_{index}.py"),
            ] {
                if files == 5_000 {
                    break 'fill;
                }
                write(root, &path, "// x\n");
                files += 1;
            }
        }
    }
    dir
}

fn checks(c: &mut Criterion) {
    let dir = repository();
    let root = dir.path();
    let config = ChecksConfig::default();
    let overrides = ChecksOverrides::default();
    let changed = [
        "crates/c1/src/m3.rs",
        "crates/c7/src/m12.rs",
        "web/src/g2/C5.tsx",
        "py/p3/mod_4.py",
        "README.md",
    ];
    let selection = select(root, &changed, &config, &overrides);
    assert!(!selection.checks.is_empty() || selection.skipped.is_some());
    c.bench_function("select_5_changed_files_5000_file_repo", |b| {
        b.iter(|| black_box(select(root, black_box(&changed), &config, &overrides)));
    });
    c.bench_function("list_5000_file_repo", |b| {
        b.iter(|| black_box(list(root, &config, &overrides)));
    });
}

criterion_group!(benches, checks);
criterion_main!(benches);
