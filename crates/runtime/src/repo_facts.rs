//! Facts about a repository, read without a model: its languages by lines, its manifests
//! (names and versions), its entry points, the build and test commands the checks would run,
//! its README's title and first paragraph, and its largest files. A small model answering a
//! question about the repository gets them stated as facts next to its own prose, so what is
//! certain is not mixed with what the model guessed.
//!
//! Reading is bounded (files that `.gitignore` keeps out are skipped, at most
//! [`MAX_FILES`] files, none over [`MAX_FILE_BYTES`], only regular files: a FIFO or a
//! symlink is never opened).

use std::collections::BTreeMap;
use std::path::Path;

/// Most files walked.
pub const MAX_FILES: usize = 20_000;

/// Largest file whose lines are counted.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The language of a source file, by extension.
fn language(path: &Path) -> Option<&'static str> {
    Some(match path.extension()?.to_str()? {
        "rs" => "Rust",
        "py" => "Python",
        "ts" | "tsx" => "TypeScript",
        "js" | "jsx" | "mjs" | "cjs" => "JavaScript",
        "go" => "Go",
        "java" => "Java",
        "kt" | "kts" => "Kotlin",
        "rb" => "Ruby",
        "c" | "h" => "C",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "C++",
        "cs" => "C#",
        "swift" => "Swift",
        "php" => "PHP",
        "sh" | "bash" => "Shell",
        "scala" => "Scala",
        "zig" => "Zig",
        "ex" | "exs" => "Elixir",
        "lua" => "Lua",
        "vue" => "Vue",
        "svelte" => "Svelte",
        _ => return None,
    })
}

/// The facts, one line each (none when the directory holds nothing readable).
pub fn gather(root: &Path, checks: &[String]) -> Vec<String> {
    let mut lines_by_language: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut largest: Vec<(u64, String)> = Vec::new();
    let mut entry_points: Vec<String> = Vec::new();
    // Dependencies and build output are not the project's code, ignored or not.
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .follow_links(false)
        .max_depth(Some(12))
        .filter_entry(|entry| {
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| braincode_sandbox::WALK_SKIPPED_DIRS.contains(&name)))
        })
        .build();
    for entry in walker.flatten().take(MAX_FILES) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let Some(language) = language(path) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if meta.len() > MAX_FILE_BYTES {
            continue;
        }
        let Ok(relative_path) = path.strip_prefix(root) else {
            continue;
        };
        // The project's own files are read without following a link at any depth.
        let Ok(bytes) = braincode_sandbox::beneath::read_file(root, relative_path, MAX_FILE_BYTES)
        else {
            continue;
        };
        let lines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
        *lines_by_language.entry(language).or_default() += lines;
        let relative = relative_path.to_string_lossy().into_owned();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if matches!(
            name,
            "main.rs"
                | "main.py"
                | "__main__.py"
                | "main.go"
                | "index.js"
                | "index.ts"
                | "app.py"
                | "manage.py"
        ) {
            entry_points.push(relative.clone());
        }
        largest.push((lines, relative));
    }
    let mut facts = Vec::new();
    let total: u64 = lines_by_language.values().sum();
    if total > 0 {
        let mut languages: Vec<(&str, u64)> =
            lines_by_language.iter().map(|(l, n)| (*l, *n)).collect();
        languages.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = languages
            .iter()
            .take(4)
            .map(|(language, lines)| format!("{language} {lines} lines ({}%)", lines * 100 / total))
            .collect();
        facts.push(format!(
            "Main language: {} — by lines: {}",
            languages[0].0,
            shown.join(", ")
        ));
    }
    facts.extend(manifests(root));
    if !checks.is_empty() {
        facts.push(format!(
            "Build and test commands (what `braincode checks` runs): {}",
            checks.join("; ")
        ));
    }
    if !entry_points.is_empty() {
        entry_points.sort_by_key(|p| (p.matches('/').count(), p.clone()));
        entry_points.truncate(5);
        facts.push(format!("Entry points: {}", entry_points.join(", ")));
    }
    largest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    if !largest.is_empty() {
        let shown: Vec<String> = largest
            .iter()
            .take(5)
            .map(|(lines, path)| format!("{path} ({lines} lines)"))
            .collect();
        facts.push(format!("Largest source files: {}", shown.join(", ")));
    }
    if let Some(readme) = readme(root) {
        facts.push(readme);
    }
    facts
}

/// The file paths `text` mentions (words with a `/` or a source file's extension, not URLs
/// or flags), in order, each with whether it exists under `root`.
pub fn mentioned_paths(root: &Path, text: &str) -> Vec<(String, bool)> {
    let mut seen: Vec<(String, bool)> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "`'\"(),;*".contains(c)) {
        let word = word.trim_end_matches(['.', ':']).trim_start_matches("./");
        let looks_like_path = word.len() > 2
            && !word.contains("://")
            && !word.starts_with(['-', '/', '@', '<'])
            && !word.contains('=')
            && (word.contains('/')
                || [
                    ".rs", ".py", ".js", ".ts", ".go", ".toml", ".json", ".md", ".rst", ".txt",
                ]
                .iter()
                .any(|ext| word.ends_with(ext)));
        if looks_like_path && !seen.iter().any(|(p, _)| p == word) {
            let exists = root.join(word).exists()
                || word.eq_ignore_ascii_case("cargo.toml") && root.join("Cargo.toml").exists();
            seen.push((word.to_string(), exists));
        }
    }
    seen
}

/// Names and versions from the manifests at the root.
fn manifests(root: &Path) -> Vec<String> {
    let read = |name: &str| {
        braincode_tools::paths::read_project_text(root, name).filter(|t| !t.is_empty())
    };
    let mut facts = Vec::new();
    if let Some(text) = read("Cargo.toml") {
        let name = toml_field(&text, "package", "name");
        let version = toml_field(&text, "package", "version");
        match name {
            Some(name) => facts.push(format!(
                "Manifest Cargo.toml: Rust package {name}{}",
                version.map(|v| format!(" {v}")).unwrap_or_default()
            )),
            None if text.lines().any(|l| l.trim() == "[workspace]") => {
                facts.push("Manifest Cargo.toml: a Rust workspace".into());
            }
            None => facts.push("Manifest Cargo.toml".into()),
        }
    }
    if let Some(text) = read("package.json")
        && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
    {
        let name = value["name"].as_str().unwrap_or("(unnamed)");
        let version = value["version"]
            .as_str()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        facts.push(format!(
            "Manifest package.json: Node package {name}{version}"
        ));
    }
    if let Some(text) = read("pyproject.toml") {
        let name = toml_field(&text, "project", "name");
        let version = toml_field(&text, "project", "version");
        facts.push(format!(
            "Manifest pyproject.toml: Python project {}{}",
            name.unwrap_or_else(|| "(unnamed)".into()),
            version.map(|v| format!(" {v}")).unwrap_or_default()
        ));
    }
    if let Some(text) = read("go.mod")
        && let Some(module) = text.lines().find_map(|l| l.trim().strip_prefix("module "))
    {
        facts.push(format!("Manifest go.mod: Go module {}", module.trim()));
    }
    facts
}

/// `key = "value"` of `[section]` in a TOML file (the plain form manifests use).
fn toml_field(text: &str, section: &str, key: &str) -> Option<String> {
    let header = format!("[{section}]");
    let mut inside = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == header;
            continue;
        }
        if !inside {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        if name.trim() == key {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            return (!value.is_empty() && !value.starts_with('{')).then(|| value.to_string());
        }
    }
    None
}

/// The README's title and first paragraph.
fn readme(root: &Path) -> Option<String> {
    let (name, text) = ["README.md", "README.rst", "README.txt", "README"]
        .iter()
        .find_map(|name| {
            braincode_tools::paths::read_project_text(root, name)
                .filter(|t| !t.trim().is_empty())
                .map(|t| (*name, t))
        })?;
    let mut title = None;
    let mut paragraph = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if title.is_none() && line.starts_with('#') {
            title = Some(line.trim_start_matches('#').trim().to_string());
            continue;
        }
        let markup = line.starts_with(['#', '!', '[', '<', '=', '-', '`', '|', '>']);
        if line.is_empty() || markup {
            if !paragraph.is_empty() {
                break;
            }
            continue;
        }
        if title.is_none() {
            title = Some(line.to_string());
            continue;
        }
        paragraph.push(line);
    }
    let first = braincode_context::clip_chars(&paragraph.join(" "), 300);
    Some(match (title, first.is_empty()) {
        (Some(title), false) => format!("{name}: \"{title}\" — {first}"),
        (Some(title), true) => format!("{name}: \"{title}\""),
        (None, _) => format!("{name}: {first}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_project_is_described_by_what_is_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"greeter\"\nversion = \"0.3.1\"\n",
        )
        .unwrap();
        std::fs::write(
            root.join("src/main.rs"),
            "fn main() {\n    println!(\"hi\");\n}\n",
        )
        .unwrap();
        std::fs::write(
            root.join("src/lib.rs"),
            "pub fn a() {}\npub fn b() {}\npub fn c() {}\npub fn d() {}\n",
        )
        .unwrap();
        std::fs::write(root.join("tool.py"), "print('x')\n").unwrap();
        // Not the project's code: a dependency directory, not ignored by any file.
        std::fs::create_dir_all(root.join("node_modules/big")).unwrap();
        std::fs::write(root.join("node_modules/big/index.js"), "x\n".repeat(500)).unwrap();
        std::fs::write(
            root.join("README.md"),
            "# Greeter\n\n![badge](x)\n\nGreets people by name.\nFast.\n\n## Use\n",
        )
        .unwrap();
        let facts = gather(
            root,
            &["cargo check --all-targets".into(), "cargo test".into()],
        );
        let text = facts.join("\n");
        assert!(text.contains("Main language: Rust"), "{text}");
        assert!(text.contains("Rust 7 lines (87%)"), "{text}");
        assert!(
            !text.contains("JavaScript") && !text.contains("node_modules"),
            "{text}"
        );
        assert!(text.contains("Rust package greeter 0.3.1"), "{text}");
        assert!(
            text.contains("cargo check --all-targets; cargo test"),
            "{text}"
        );
        assert!(text.contains("Entry points: src/main.rs"), "{text}");
        assert!(
            text.contains("Largest source files: src/lib.rs (4 lines)"),
            "{text}"
        );
        assert!(
            text.contains("README.md: \"Greeter\" — Greets people by name. Fast."),
            "{text}"
        );
    }
}
