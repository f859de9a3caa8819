//! What kind of change a set of paths is ([`PatchKind`]), how risky it is ([`RiskTier`]),
//! and which toolchain verifies one file.
//!
//! Paths are matched case-insensitively on their `/`-separated segments, never on the file
//! system, so deleted files classify like the others.

use serde::{Deserialize, Serialize};

use super::patterns::{
    AUTH_WORDS, BACKEND_DIRS, BACKEND_EXTS, CI_NAMES, DB_DIRS, DB_NAMES, DOC_EXTS, DOC_NAMES,
    FRONTEND_DIRS, FRONTEND_EXTS, PACKAGE_NAMES, SCRIPT_EXTS, TEST_DIRS,
};
use super::{Ecosystem, NODE_LOCKFILES};

/// The kind of a patch, which picks the checks policy (`checks.policies` keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PatchKind {
    /// Only documentation.
    DocsOnly,
    /// Only tests (and documentation).
    TestOnly,
    /// User-interface code.
    Frontend,
    /// Server or library code.
    Backend,
    /// Authentication, sessions, tokens, passwords, permissions, cryptography.
    AuthRisk,
    /// Migrations, SQL, database schemas.
    DbRisk,
    /// Manifests and lockfiles.
    PackageChange,
    /// CI pipelines and container builds.
    CiRisk,
    /// Anything else.
    UnknownCode,
}

impl PatchKind {
    /// Every kind, in the order of [`crate::config::PATCH_KINDS`].
    pub const ALL: [PatchKind; 9] = [
        Self::DocsOnly,
        Self::TestOnly,
        Self::Frontend,
        Self::Backend,
        Self::AuthRisk,
        Self::DbRisk,
        Self::PackageChange,
        Self::CiRisk,
        Self::UnknownCode,
    ];

    /// The configuration name (`docs-only`, `test-only`, …, `unknown-code`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DocsOnly => "docs-only",
            Self::TestOnly => "test-only",
            Self::Frontend => "frontend",
            Self::Backend => "backend",
            Self::AuthRisk => "auth-risk",
            Self::DbRisk => "db-risk",
            Self::PackageChange => "package-change",
            Self::CiRisk => "ci-risk",
            Self::UnknownCode => "unknown-code",
        }
    }
}

impl std::fmt::Display for PatchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A patch kind name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown patch kind {0:?}, expected one of {kinds}", kinds = crate::config::PATCH_KINDS.join(", "))]
pub struct UnknownPatchKind(pub String);

impl std::str::FromStr for PatchKind {
    type Err = UnknownPatchKind;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| UnknownPatchKind(text.to_string()))
    }
}

/// How risky a patch is; selects the review mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskTier {
    /// Documentation or tests.
    Low,
    /// Frontend, backend, packages, unknown code.
    Medium,
    /// Authentication, database or CI files.
    High,
    /// Authentication and CI files together.
    Critical,
}

impl RiskTier {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }

    /// The tier once a permission rule requires a review: low and medium become high.
    pub fn raised_for_review(self) -> Self {
        self.max(Self::High)
    }
}

/// The patch kind of the changed paths (relative to the project root), the first that applies:
/// no paths → unknown-code; any package file → package-change; any CI file → ci-risk; any
/// database file → db-risk; any auth file → auth-risk; all docs → docs-only; all tests (docs
/// allowed alongside) → test-only; any frontend file → frontend; any backend file → backend;
/// otherwise unknown-code.
pub fn classify_patch(paths: &[&str]) -> PatchKind {
    let facts: Vec<PathFacts> = paths.iter().map(|path| PathFacts::of(path)).collect();
    kind_of(&facts)
}

fn kind_of(facts: &[PathFacts]) -> PatchKind {
    let any = |test: fn(&PathFacts) -> bool| facts.iter().any(test);
    if facts.is_empty() {
        PatchKind::UnknownCode
    } else if any(|f| f.package) {
        PatchKind::PackageChange
    } else if any(|f| f.ci) {
        PatchKind::CiRisk
    } else if any(|f| f.db) {
        PatchKind::DbRisk
    } else if any(|f| f.auth) {
        PatchKind::AuthRisk
    } else if facts.iter().all(|f| f.docs) {
        PatchKind::DocsOnly
    } else if facts.iter().all(|f| f.test || f.docs) {
        PatchKind::TestOnly
    } else if any(|f| f.frontend) {
        PatchKind::Frontend
    } else if any(|f| f.backend) {
        PatchKind::Backend
    } else {
        PatchKind::UnknownCode
    }
}

/// The risk tier of the changed paths: critical when auth and CI files change together; high
/// when any auth, database or CI file changes (whatever the patch kind, so a lockfile next to
/// a workflow is still high); low for docs-only and test-only; medium otherwise.
pub fn risk_tier(paths: &[&str]) -> RiskTier {
    let facts: Vec<PathFacts> = paths.iter().map(|path| PathFacts::of(path)).collect();
    let auth = facts.iter().any(|f| f.auth);
    let ci = facts.iter().any(|f| f.ci);
    if auth && ci {
        RiskTier::Critical
    } else if auth || ci || facts.iter().any(|f| f.db) {
        RiskTier::High
    } else {
        match kind_of(&facts) {
            PatchKind::DocsOnly | PatchKind::TestOnly => RiskTier::Low,
            _ => RiskTier::Medium,
        }
    }
}

/// The ecosystem whose checks verify a change to `path`, by file type (`None`: no ecosystem,
/// e.g. C sources or a Makefile, which Makefile targets cover).
pub(super) fn file_ecosystem(path: &str) -> Option<Ecosystem> {
    let parts = PathParts::of(path);
    let name = parts.name.as_str();
    match parts.ext.as_str() {
        "rs" => return Some(Ecosystem::Cargo),
        "py" | "pyi" => return Some(Ecosystem::Python),
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx" | "vue" | "svelte" => {
            return Some(Ecosystem::Node);
        }
        "go" => return Some(Ecosystem::Go),
        _ => {}
    }
    if matches!(
        name,
        "cargo.toml" | "cargo.lock" | "clippy.toml" | ".clippy.toml"
    ) {
        Some(Ecosystem::Cargo)
    } else if matches!(
        name,
        "pyproject.toml"
            | "setup.py"
            | "setup.cfg"
            | "pytest.ini"
            | "tox.ini"
            | "mypy.ini"
            | "ruff.toml"
            | ".ruff.toml"
    ) || is_requirements(&parts)
    {
        Some(Ecosystem::Python)
    } else if name == "package.json"
        || NODE_LOCKFILES
            .iter()
            .any(|lock| name == lock.to_ascii_lowercase())
        || (name.starts_with("tsconfig") && parts.ext == "json")
    {
        Some(Ecosystem::Node)
    } else if matches!(name, "go.mod" | "go.sum") {
        Some(Ecosystem::Go)
    } else {
        None
    }
}

/// Whether `path` is documentation.
pub(super) fn is_docs(path: &str) -> bool {
    PathFacts::of(path).docs
}

/// A path split for matching: lowercase directory segments, file name and extension.
struct PathParts {
    dirs: Vec<String>,
    name: String,
    /// The file name as written (Java-style `FooTest` needs the case).
    original_name: String,
    ext: String,
}

impl PathParts {
    fn of(path: &str) -> Self {
        let path = path.replace('\\', "/");
        let mut segments: Vec<&str> = path
            .split('/')
            .filter(|segment| !segment.is_empty() && *segment != ".")
            .collect();
        let original_name = segments.pop().unwrap_or_default().to_string();
        let name = original_name.to_ascii_lowercase();
        let ext = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => ext.to_string(),
            _ => String::new(),
        };
        Self {
            dirs: segments.iter().map(|s| s.to_ascii_lowercase()).collect(),
            name,
            original_name,
            ext,
        }
    }

    fn stem(&self) -> &str {
        if self.ext.is_empty() {
            &self.name
        } else {
            &self.name[..self.name.len() - self.ext.len() - 1]
        }
    }

    fn in_dir(&self, names: &[&str]) -> bool {
        self.dirs.iter().any(|dir| names.contains(&dir.as_str()))
    }
}

fn is_requirements(parts: &PathParts) -> bool {
    parts.ext == "txt"
        && (parts.name.starts_with("requirements") || parts.in_dir(&["requirements"]))
}

/// What one path is, for every category at once.
#[derive(Debug, Default)]
struct PathFacts {
    package: bool,
    ci: bool,
    db: bool,
    auth: bool,
    docs: bool,
    test: bool,
    frontend: bool,
    backend: bool,
}

impl PathFacts {
    fn of(path: &str) -> Self {
        let parts = PathParts::of(path);
        let name = parts.name.as_str();
        let ext = parts.ext.as_str();
        let stem = parts.stem();
        let doc_ext =
            DOC_EXTS.contains(&ext) && name != "cmakelists.txt" && !is_requirements(&parts);
        let code_ext = ext == "sql"
            || SCRIPT_EXTS.contains(&ext)
            || FRONTEND_EXTS.contains(&ext)
            || BACKEND_EXTS.contains(&ext);
        let docs = doc_ext
            || DOC_NAMES
                .iter()
                .any(|doc| stem == *doc || name.starts_with(&format!("{doc}-")))
            || (parts
                .dirs
                .first()
                .is_some_and(|top| top == "docs" || top == "doc")
                && !code_ext);
        let first_two = (
            parts.dirs.first().map(String::as_str),
            parts.dirs.get(1).map(String::as_str),
        );
        let ci = matches!(first_two, (Some(".github"), Some("workflows" | "actions")))
            || parts.in_dir(&[".circleci", ".buildkite"])
            || (first_two.0 == Some(".gitlab") && first_two.1 == Some("ci"))
            || CI_NAMES.contains(&name)
            || name.starts_with("dockerfile.")
            || ext == "dockerfile";
        let package = PACKAGE_NAMES.contains(&name)
            || NODE_LOCKFILES
                .iter()
                .any(|lock| name == lock.to_ascii_lowercase())
            || is_requirements(&parts)
            || matches!(ext, "gemspec" | "csproj");
        // Prose about a database or about login changes neither.
        let db = !doc_ext
            && (matches!(ext, "sql" | "prisma")
                || DB_NAMES.contains(&name)
                || parts.in_dir(DB_DIRS));
        let auth = !doc_ext && path_words(&parts).any(|word| AUTH_WORDS.contains(&word.as_str()));
        let java_like = matches!(ext, "java" | "kt" | "scala" | "cs");
        let original_stem = parts
            .original_name
            .rsplit_once('.')
            .map_or(parts.original_name.as_str(), |(stem, _)| stem);
        let test = parts.in_dir(TEST_DIRS)
            || (ext == "py" && (stem.starts_with("test_") || stem.ends_with("_test")))
            || name == "conftest.py"
            || (matches!(ext, "go" | "rs" | "c" | "cc" | "cpp") && stem.ends_with("_test"))
            || (ext == "rs" && matches!(stem, "tests" | "test"))
            || stem.ends_with(".test")
            || stem.ends_with(".spec")
            || (ext == "rb" && stem.ends_with("_spec"))
            || (java_like
                && (original_stem.ends_with("Test")
                    || original_stem.ends_with("Tests")
                    || original_stem.ends_with("IT")));
        let script = SCRIPT_EXTS.contains(&ext);
        let frontend = FRONTEND_EXTS.contains(&ext) || (script && parts.in_dir(FRONTEND_DIRS));
        let backend = BACKEND_EXTS.contains(&ext) || (script && parts.in_dir(BACKEND_DIRS));
        Self {
            package,
            ci,
            db,
            auth,
            docs,
            test,
            frontend,
            backend,
        }
    }
}

/// The lowercase words of a path's directories and file stem: `src/OAuthButton.tsx` →
/// `src`, `oauth`, `button`; `user_sessions/x.rs` → `user`, `sessions`, `x`.
fn path_words(parts: &PathParts) -> impl Iterator<Item = String> + '_ {
    let original_stem = parts
        .original_name
        .rsplit_once('.')
        .map_or(parts.original_name.as_str(), |(stem, _)| stem);
    parts
        .dirs
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(original_stem))
        .flat_map(split_words)
}

fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_ascii_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
