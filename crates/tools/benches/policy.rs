//! How long the permission policy takes on a realistic ~4 KB shell command (goal: ≤ 1 ms).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use braincode_tools::{PermissionPolicy, PermissionRequest};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// A build-and-check script of the kind agents write: lists, pipelines, loops, functions,
/// substitutions, redirections, heredocs and quoting.
fn realistic_command() -> String {
    let block = r#"set -euo pipefail
cd crates/tools && cargo fmt --all -- --check 2>&1 | tail -20
for crate in protocol context brain config llm tools runtime cli; do
  if [ -d "crates/$crate" ]; then
    echo "== checking $crate" && cargo check -p "braincode-$crate" --all-targets 2>&1 | grep -E '^(warning|error)' | head -20 || true
  fi
done
git status --porcelain=v1 | awk '{ print $2 }' | sort | uniq -c | sort -rn | head -n 15
rg -n --no-heading 'unwrap\(\)|expect\(' src tests | grep -v '^tests/' | wc -l
summary() { printf '%s: %s\n' "$1" "$(date +%H:%M:%S)" >> target/check-log.txt; }
summary "lint" && cargo clippy -p braincode-tools --all-targets -- -D warnings 2>&1 | tail -40
cat > target/notes.md <<'EOF'
# Notes
- policy evaluation must stay under a millisecond
EOF
find src -name '*.rs' -newer Cargo.toml | head -50 | xargs -r wc -l | sort -n | tail -5
"#;
    let mut text = String::new();
    while text.len() < 4 * 1024 {
        text.push_str(block);
    }
    text
}

fn evaluate(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let policy = PermissionPolicy::default();
    let command = realistic_command();
    let arguments = json!({ "command": command });
    let request = PermissionRequest {
        tool_name: "shell",
        arguments: &arguments,
        project_root: dir.path(),
        session_history: None,
    };
    // Warm the lazily compiled globs once, as a run does on its first call.
    black_box(policy.evaluate(&request));
    c.bench_function("evaluate_4kb_shell_command", |b| {
        b.iter(|| black_box(policy.evaluate(black_box(&request))));
    });
}

fn parts(c: &mut Criterion) {
    let command = realistic_command();
    c.bench_function("parse_only", |b| {
        b.iter(|| {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .unwrap();
            black_box(parser.parse(black_box(&command), None))
        });
    });
    c.bench_function("analyze_only", |b| {
        b.iter(|| black_box(braincode_tools::policy::shell::analyze(black_box(&command))));
    });
}

criterion_group!(benches, evaluate, parts);
criterion_main!(benches);
