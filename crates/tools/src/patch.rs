//! Reading the paths a unified diff touches, for `apply_patch` and the permission policy.
//!
//! Paths come from `diff --git` headers, `---`/`+++` lines (outside hunks: hunk bodies are
//! skipped by their line counts, so a removed line starting with `--` is not mistaken for a
//! header), and `rename`/`copy from|to` lines. Git's C-style quoted paths are decoded.

/// One path named by a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchPath {
    /// The path as written (after unquoting).
    pub raw: String,
    /// The path `git apply` (`-p1`) writes: the first component removed from header paths.
    pub path: String,
}

/// Every path a patch names, without `/dev/null`, deduplicated by raw text, in order.
pub fn patch_paths(patch: &str) -> Vec<PatchPath> {
    let mut out: Vec<PatchPath> = Vec::new();
    let mut push = |raw: String, strip: bool| {
        if raw.is_empty() || raw == "/dev/null" {
            return;
        }
        let path = if strip {
            match raw.split_once('/') {
                Some((_, rest)) if !rest.is_empty() => rest.to_string(),
                _ => raw.clone(),
            }
        } else {
            raw.clone()
        };
        let entry = PatchPath { raw, path };
        if !out.iter().any(|existing| existing.raw == entry.raw) {
            out.push(entry);
        }
    };
    let mut lines = patch.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            for path in split_git_header(rest) {
                push(path, true);
            }
        } else if let Some(rest) = line
            .strip_prefix("--- ")
            .or_else(|| line.strip_prefix("+++ "))
        {
            push(header_path(rest), true);
        } else if let Some(rest) = ["rename from ", "rename to ", "copy from ", "copy to "]
            .iter()
            .find_map(|prefix| line.strip_prefix(prefix))
        {
            push(header_path(rest), false);
        } else if line.starts_with("@@ ") {
            let (mut old, mut new) = hunk_counts(line);
            while old > 0 || new > 0 {
                let Some(body) = lines.next() else {
                    break;
                };
                match body.as_bytes().first() {
                    Some(b'-') => old = old.saturating_sub(1),
                    Some(b'+') => new = new.saturating_sub(1),
                    Some(b'\\') => {}
                    _ => {
                        old = old.saturating_sub(1);
                        new = new.saturating_sub(1);
                    }
                }
            }
        }
    }
    out
}

/// Paths a patch makes (or keeps) a symbolic link: `new file mode 120000`, `new mode 120000`,
/// or an `index … 120000` line (a link whose target changes). Project-relative (`-p1`).
pub fn symlink_paths(patch: &str) -> Vec<String> {
    let strip = |raw: String| match raw.split_once('/') {
        Some((_, rest)) if !rest.is_empty() => rest.to_string(),
        _ => raw,
    };
    let mut current: Option<String> = None;
    let mut out: Vec<String> = Vec::new();
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            current = split_git_header(rest).pop().map(strip);
            continue;
        }
        if let Some(rest) = line.strip_prefix("+++ ") {
            let path = header_path(rest);
            if path != "/dev/null" {
                current = Some(strip(path));
            }
            continue;
        }
        let link = (line.starts_with("new file mode ")
            || line.starts_with("new mode ")
            || line.starts_with("index "))
            && line.trim_end().ends_with("120000");
        if link {
            let path = current
                .clone()
                .unwrap_or_else(|| "(a path in the patch)".to_string());
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// Whether a patch path would escape the directory it is applied in.
pub fn escapes_root(raw: &str) -> bool {
    let normalized = raw.replace('\\', "/");
    normalized.starts_with('/')
        || normalized.starts_with('~')
        || normalized.as_bytes().get(1) == Some(&b':')
        || normalized.split('/').any(|part| part == "..")
}

fn hunk_counts(line: &str) -> (u64, u64) {
    let mut parts = line.split_whitespace().skip(1);
    let count = |part: Option<&str>| -> u64 {
        part.map(|p| p.trim_start_matches(['-', '+']))
            .map(|range| match range.split_once(',') {
                Some((_, count)) => count.parse().unwrap_or(0),
                None => 1,
            })
            .unwrap_or(0)
    };
    let old = count(parts.next());
    let new = count(parts.next());
    (old, new)
}

fn header_path(rest: &str) -> String {
    if rest.starts_with('"') {
        let (path, _) = unquote_c(rest);
        return path;
    }
    // Traditional diffs put a tab and a timestamp after the path.
    rest.split('\t')
        .next()
        .unwrap_or(rest)
        .trim_end()
        .to_string()
}

fn split_git_header(rest: &str) -> Vec<String> {
    if rest.starts_with('"') {
        let (first, consumed) = unquote_c(rest);
        let second = rest.get(consumed..).unwrap_or("").trim_start();
        return vec![first, header_path(second)];
    }
    if let Some(index) = rest.find(" \"") {
        let (second, _) = unquote_c(&rest[index + 1..]);
        return vec![rest[..index].to_string(), second];
    }
    // Unquoted paths may contain spaces: prefer the split where both sides name the same
    // file, else the first ` b/`.
    let candidates: Vec<usize> = rest.match_indices(" b/").map(|(i, _)| i).collect();
    for &index in &candidates {
        let (a, b) = (&rest[..index], &rest[index + 1..]);
        if a.strip_prefix("a/") == b.strip_prefix("b/") {
            return vec![a.to_string(), b.to_string()];
        }
    }
    match candidates.first() {
        Some(&index) => vec![rest[..index].to_string(), rest[index + 1..].to_string()],
        None => match rest.split_once(' ') {
            Some((a, b)) => vec![a.to_string(), b.to_string()],
            None => vec![rest.to_string()],
        },
    }
}

/// Decodes a C-style quoted string starting at `text[0] == '"'`; returns the value and the
/// number of bytes consumed.
fn unquote_c(text: &str) -> (String, usize) {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut index = 1;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => return (String::from_utf8_lossy(&out).into_owned(), index + 1),
            b'\\' if index + 1 < bytes.len() => {
                let escape = bytes[index + 1];
                index += 2;
                match escape {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'0'..=b'7' => {
                        let mut value = u32::from(escape - b'0');
                        let mut digits = 1;
                        while digits < 3
                            && index < bytes.len()
                            && (b'0'..=b'7').contains(&bytes[index])
                        {
                            value = value * 8 + u32::from(bytes[index] - b'0');
                            index += 1;
                            digits += 1;
                        }
                        out.push((value & 0xff) as u8);
                    }
                    other => out.push(other),
                }
            }
            other => {
                out.push(other);
                index += 1;
            }
        }
    }
    (String::from_utf8_lossy(&out).into_owned(), bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(patch: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for found in patch_paths(patch) {
            if !out.contains(&found.path) {
                out.push(found.path);
            }
        }
        out
    }

    #[test]
    fn reads_headers_renames_and_quotes() {
        let patch = "diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n--- not a header\n+++ neither\n x\ndiff --git a/old name.txt b/new name.txt\nsimilarity index 90%\nrename from old name.txt\nrename to new name.txt\ndiff --git \"a/caf\\303\\251 x.txt\" \"b/caf\\303\\251 x.txt\"\ndeleted file mode 100644\n--- \"a/caf\\303\\251 x.txt\"\n+++ /dev/null\n";
        assert_eq!(
            paths(patch),
            vec!["src/a.ts", "old name.txt", "new name.txt", "café x.txt"]
        );
    }

    #[test]
    fn flags_escaping_paths() {
        let patch = "--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n";
        let found = patch_paths(patch);
        assert_eq!(found[0].raw, "b/../outside.txt");
        assert!(escapes_root(&found[0].raw));
        assert!(escapes_root("/etc/passwd"));
        assert!(!escapes_root("a/src/x..y"));
        let traditional = "--- x.txt\t2024-01-01\n+++ x.txt\t2024-01-02\n";
        assert_eq!(patch_paths(traditional)[0].raw, "x.txt");
    }
}
