//! Which checks a change runs: the projects and ecosystems of the changed files, the smart
//! policy of the patch kind, then the `checks` configuration and the project's overrides.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use super::classify::{file_ecosystem, is_docs};
use super::discover::{DirFinder, discover_dirs, normalize};
use super::probe::Probe;
use super::project_file::ChecksOverrides;
use super::{
    CheckKind, CheckSpec, Discovery, Ecosystem, PatchKind, RiskTier, check_name, classify_patch,
    risk_tier,
};
use crate::config::{CheckPolicy, CheckStrategy, ChecksConfig, ReviewRequirement};
use crate::script::{ResolvedScript, resolve_script};

/// What to run for a change, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    /// The patch kind of the changed files.
    pub patch_kind: PatchKind,
    /// Their risk tier.
    pub risk_tier: RiskTier,
    /// The checks to run, in order: the smart selection cheapest kind first and root project
    /// first; configured scripts in their configured order; then added scripts.
    pub checks: Vec<CheckSpec>,
    /// Configured or added scripts that resolve to nothing: (name, reason). The caller reports
    /// each as a failed check.
    pub missing: Vec<(String, String)>,
    /// Why nothing runs, when nothing does.
    pub skipped: Option<String>,
    /// Discovery notes about the changed projects ("ruff is configured … but not installed").
    pub notes: Vec<String>,
    /// The patch kind (or its policy) forces a review worker.
    pub review_required: bool,
    /// The checks need the user's approval before running (CI changes; never when nothing
    /// runs).
    pub approval_required: bool,
    /// One line: how the selection was made.
    pub reason: String,
}

impl Selection {
    /// The check summary before anything runs: what was chosen and why (the skip's reason
    /// when nothing runs), no results yet.
    pub fn summary(&self) -> braincode_protocol::CheckSummary {
        braincode_protocol::CheckSummary {
            status: braincode_protocol::CheckStatus::Skipped,
            reason: Some(self.skipped.clone().unwrap_or_else(|| self.reason.clone())),
            patch_kind: Some(self.patch_kind.as_str().to_string()),
            risk_tier: Some(self.risk_tier.as_str().to_string()),
            selected_scripts: self.checks.iter().map(|c| c.name.clone()).collect(),
            review_required: self.review_required,
            results: Vec::new(),
            written_files: Vec::new(),
            setup: Vec::new(),
            network: Vec::new(),
        }
    }
}

/// The checks to run for `changed` (paths relative to `root`): [`super::project_dirs`],
/// [`super::discover`], the policy of the patch kind and the configuration.
///
/// Precedence: `enabled: false` skips; a kind's policy with `enabled: false` skips with its
/// reason; a kind's policy `scripts`, else `checks.scripts`, run exactly those; else the
/// discovered checks of the changed files' projects, by file type (a Rust edit runs Cargo
/// checks, never pytest; files no discovered ecosystem covers run the Makefile's), filtered
/// by the kinds the patch kind needs (`strategy: all`: every check of those projects). Then
/// `overrides.add` is appended and `overrides.disable` removed; a skip stays a skip.
/// A policy's `review: optional` does not lift the review that auth, database and CI changes
/// always get.
pub fn select(
    root: &Path,
    changed: &[&str],
    config: &ChecksConfig,
    overrides: &ChecksOverrides,
) -> Selection {
    select_with(root, changed, config, overrides, &Probe::from_env())
}

/// What `braincode checks list` shows: the root's discovered checks (or `checks.scripts`
/// when configured), plus `overrides.add`, minus `overrides.disable`. Scripts that resolve to
/// nothing, and disabled checks, are notes.
pub fn list(root: &Path, config: &ChecksConfig, overrides: &ChecksOverrides) -> Discovery {
    list_with(root, config, overrides, &Probe::from_env())
}

/// The smart policy of one patch kind.
struct KindPolicy {
    /// `None`: nothing runs.
    kinds: Option<&'static [CheckKind]>,
    label: &'static str,
    review: bool,
    approval: bool,
}

fn kind_policy(kind: PatchKind, strategy: CheckStrategy) -> KindPolicy {
    use CheckKind::{Build, Lint, Test, Typecheck};
    const FULL: &[CheckKind] = &CheckKind::ALL;
    let (kinds, label): (Option<&'static [CheckKind]>, _) = match (strategy, kind) {
        (CheckStrategy::All, _) => (Some(FULL), "every check"),
        (CheckStrategy::Smart, PatchKind::DocsOnly) => (None, "none"),
        (CheckStrategy::Smart, PatchKind::TestOnly) => (Some(&[Test]), "test"),
        // A build is the compiler's typecheck.
        (CheckStrategy::Smart, PatchKind::Frontend) => (
            Some(&[Build, Typecheck, Lint, Test]),
            "typecheck, lint, test",
        ),
        (CheckStrategy::Smart, PatchKind::Backend) => {
            (Some(&[Build, Typecheck, Test]), "typecheck, test")
        }
        (CheckStrategy::Smart, _) => (Some(FULL), "full"),
    };
    KindPolicy {
        kinds,
        label,
        review: matches!(
            kind,
            PatchKind::AuthRisk | PatchKind::DbRisk | PatchKind::CiRisk
        ),
        approval: kind == PatchKind::CiRisk,
    }
}

fn strategy_name(strategy: CheckStrategy) -> &'static str {
    match strategy {
        CheckStrategy::Smart => "smart selection",
        CheckStrategy::All => "strategy all",
    }
}

pub(super) fn select_with(
    root: &Path,
    changed: &[&str],
    config: &ChecksConfig,
    overrides: &ChecksOverrides,
    probe: &Probe,
) -> Selection {
    let patch_kind = classify_patch(changed);
    let policy: CheckPolicy = config
        .policies
        .get(patch_kind.as_str())
        .cloned()
        .unwrap_or_default();
    let defaults = kind_policy(patch_kind, config.strategy);
    let mut selection = Selection {
        patch_kind,
        risk_tier: risk_tier(changed),
        checks: Vec::new(),
        missing: Vec::new(),
        skipped: None,
        notes: Vec::new(),
        review_required: defaults.review || policy.review == Some(ReviewRequirement::Required),
        approval_required: false,
        reason: String::new(),
    };
    if !config.enabled {
        selection.skipped = Some("checks disabled in tools.json".into());
        selection.reason = "checks are disabled in the configuration".into();
        return selection;
    }
    if policy.enabled == Some(false) {
        selection.skipped = Some(
            policy
                .reason
                .clone()
                .unwrap_or_else(|| format!("checks disabled for {patch_kind} patches by policy")),
        );
        selection.reason = format!("the {patch_kind} policy disables checks");
        return selection;
    }

    let mut finder = DirFinder::new(root);
    // (changed path, its project directory)
    let targets: Vec<(String, String)> = changed
        .iter()
        .filter_map(|path| {
            let path = normalize(root, path)?;
            let dir = finder.project_dir(&path)?;
            Some((path, dir))
        })
        .collect();
    let mut dirs: Vec<String> = targets.iter().map(|(_, dir)| dir.clone()).collect();
    dirs.sort();
    dirs.dedup();

    let configured = match &policy.scripts {
        Some(scripts) if !scripts.is_empty() => Some((
            scripts,
            format!("the {patch_kind} policy's scripts: {}", scripts.join(", ")),
        )),
        _ if !config.scripts.is_empty() => Some((
            &config.scripts,
            format!("configured scripts: {}", config.scripts.join(", ")),
        )),
        _ => None,
    };
    let mut resolver = if let Some((scripts, reason)) = configured {
        let mut resolver = Resolver::new(root, probe, dirs.clone());
        for name in scripts {
            resolver.resolve_into(name, &mut selection.checks, &mut selection.missing);
        }
        selection.reason = reason;
        resolver
    } else {
        let label = format!(
            "{} for a {patch_kind} patch: {}",
            strategy_name(config.strategy),
            defaults.label
        );
        let Some(kinds) = defaults.kinds else {
            selection.skipped = Some("docs-only change: no checks needed".into());
            selection.reason = label;
            return selection;
        };
        let discovery = discover_dirs(root, &dirs, probe);
        let mut checks: Vec<CheckSpec> = relevant(&discovery.checks, &targets, config.strategy)
            .into_iter()
            .filter(|check| kinds.contains(&check.kind))
            .cloned()
            .collect();
        let dir_rank = |dir: &str| dirs.iter().position(|d| d == dir).unwrap_or(usize::MAX);
        checks.sort_by_key(|check| (check.kind, dir_rank(&check.dir)));
        selection.checks = checks;
        selection.notes = discovery.notes.clone();
        selection.reason = label;
        Resolver::with_discovery(root, probe, dirs.clone(), discovery)
    };

    for name in &overrides.add {
        if !selection.checks.iter().any(|check| check.matches(name)) {
            resolver.resolve_into(name, &mut selection.checks, &mut selection.missing);
        }
    }
    remove_disabled(
        &overrides.disable,
        &mut selection.checks,
        &mut selection.missing,
    );
    selection.approval_required = defaults.approval && !selection.checks.is_empty();
    if selection.checks.is_empty() && selection.missing.is_empty() {
        let why = if targets.is_empty() {
            "no Cargo.toml, package.json, pyproject.toml, go.mod or Makefile above them".to_string()
        } else if !selection.notes.is_empty() {
            selection.notes.join("; ")
        } else {
            let places: Vec<&str> = dirs
                .iter()
                .map(|dir| if dir.is_empty() { "the root" } else { dir })
                .collect();
            format!("{} in {}", defaults.label, places.join(", "))
        };
        selection.skipped = Some(format!("no checks found for the changed files ({why})"));
    }
    selection
}

/// The discovered checks that verify the changed files: per file, the checks of its project
/// directory in its ecosystem; a Makefile, or a file that no discovered ecosystem of its
/// directory covers (docs aside), selects the directory's Makefile targets. With
/// `strategy: all`, every check of the changed projects.
fn relevant<'a>(
    checks: &'a [CheckSpec],
    targets: &[(String, String)],
    strategy: CheckStrategy,
) -> Vec<&'a CheckSpec> {
    if strategy == CheckStrategy::All {
        return checks.iter().collect();
    }
    let mut wanted: HashSet<(&str, Ecosystem)> = HashSet::new();
    for (path, dir) in targets {
        let covered = file_ecosystem(path).filter(|ecosystem| {
            checks
                .iter()
                .any(|check| check.dir == *dir && check.ecosystem == *ecosystem)
        });
        match covered {
            Some(ecosystem) => {
                wanted.insert((dir, ecosystem));
            }
            None if !is_docs(path) => {
                wanted.insert((dir, Ecosystem::Make));
            }
            None => {}
        }
    }
    checks
        .iter()
        .filter(|check| wanted.contains(&(check.dir.as_str(), check.ecosystem)))
        .collect()
}

fn remove_disabled(
    disable: &[String],
    checks: &mut Vec<CheckSpec>,
    missing: &mut Vec<(String, String)>,
) {
    checks.retain(|check| !disable.iter().any(|name| check.matches(name)));
    missing.retain(|(name, _)| !disable.iter().any(|d| d.trim() == name));
}

pub(super) fn list_with(
    root: &Path,
    config: &ChecksConfig,
    overrides: &ChecksOverrides,
    probe: &Probe,
) -> Discovery {
    let discovery = discover_dirs(root, &[String::new()], probe);
    let mut out = Discovery {
        checks: Vec::new(),
        notes: discovery.notes.clone(),
    };
    let mut resolver =
        Resolver::with_discovery(root, probe, vec![String::new()], discovery.clone());
    let mut missing = Vec::new();
    if !config.enabled {
        out.notes
            .push("checks are disabled in tools.json: none of these run".into());
    }
    if config.scripts.is_empty() {
        out.checks = discovery.checks;
    } else {
        out.notes
            .push("checks.scripts replaces the discovered checks".into());
        for name in &config.scripts {
            resolver.resolve_into(name, &mut out.checks, &mut missing);
        }
    }
    for name in &overrides.add {
        if !out.checks.iter().any(|check| check.matches(name)) {
            resolver.resolve_into(name, &mut out.checks, &mut missing);
        }
    }
    let before: Vec<String> = out.checks.iter().map(|check| check.name.clone()).collect();
    remove_disabled(&overrides.disable, &mut out.checks, &mut missing);
    for name in before {
        if !out.checks.iter().any(|check| check.name == name) {
            out.notes.push(format!("{name} is disabled"));
        }
    }
    out.notes.extend(
        missing
            .into_iter()
            .map(|(name, reason)| format!("{name}: {reason}")),
    );
    out
}

/// Resolves configured script names: a discovered check's name first (in the changed
/// projects, then the root), else `run_script`'s resolution in each changed project then the
/// root.
struct Resolver<'a> {
    root: &'a Path,
    probe: &'a Probe,
    dirs: Vec<String>,
    discovered: Vec<CheckSpec>,
    root_discovered: bool,
}

impl<'a> Resolver<'a> {
    fn new(root: &'a Path, probe: &'a Probe, dirs: Vec<String>) -> Self {
        let discovery = discover_dirs(root, &dirs, probe);
        Self::with_discovery(root, probe, dirs, discovery)
    }

    fn with_discovery(
        root: &'a Path,
        probe: &'a Probe,
        mut dirs: Vec<String>,
        discovery: Discovery,
    ) -> Self {
        let root_discovered = dirs.iter().any(String::is_empty);
        if !root_discovered {
            dirs.push(String::new());
        }
        Self {
            root,
            probe,
            dirs,
            discovered: discovery.checks,
            root_discovered,
        }
    }

    /// Appends the checks `name` designates, or records it as missing.
    fn resolve_into(
        &mut self,
        name: &str,
        checks: &mut Vec<CheckSpec>,
        missing: &mut Vec<(String, String)>,
    ) {
        let name = name.trim();
        if missing.iter().any(|(missing, _)| missing == name) {
            return;
        }
        match self.resolve(name) {
            Ok(found) => {
                for check in found {
                    if !checks.iter().any(|existing| existing.name == check.name) {
                        checks.push(check);
                    }
                }
            }
            Err(reason) => missing.push((name.to_string(), reason)),
        }
    }

    fn resolve(&mut self, name: &str) -> Result<Vec<CheckSpec>, String> {
        let found = self.discovered_named(name);
        if !found.is_empty() {
            return Ok(found);
        }
        if !self.root_discovered {
            self.root_discovered = true;
            let root = discover_dirs(self.root, &[String::new()], self.probe);
            self.discovered.extend(root.checks);
            let found = self.discovered_named(name);
            if !found.is_empty() {
                return Ok(found);
            }
        }
        let mut first_error = None;
        for dir in &self.dirs {
            match resolve_script(&self.root.join(dir), name, &[]) {
                Ok(resolved) => return Ok(vec![configured_check(name, dir, resolved)]),
                Err(error) => {
                    first_error.get_or_insert_with(|| error.to_string());
                }
            }
        }
        Err(first_error.unwrap_or_else(|| "no project to resolve it in".into()))
    }

    fn discovered_named(&self, name: &str) -> Vec<CheckSpec> {
        self.discovered
            .iter()
            .filter(|check| check.matches(name))
            .cloned()
            .collect()
    }
}

fn configured_check(name: &str, dir: &str, resolved: ResolvedScript) -> CheckSpec {
    CheckSpec {
        name: check_name(name, dir),
        ecosystem: Ecosystem::Configured,
        kind: guess_kind(&format!("{name} {}", resolved.display)),
        program: resolved.program,
        args: resolved.args,
        display: resolved.display,
        dir: dir.to_string(),
    }
}

/// The kind a configured script most likely is, from the words of its name and command.
fn guess_kind(text: &str) -> CheckKind {
    let text = text.to_ascii_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect();
    let has = |names: &[&str]| words.iter().any(|word| names.contains(word));
    if has(&[
        "lint", "clippy", "ruff", "eslint", "vet", "flake8", "pylint",
    ]) {
        CheckKind::Lint
    } else if has(&["typecheck", "tsc", "mypy", "pyright", "check"]) {
        CheckKind::Typecheck
    } else if has(&["build", "compile"]) {
        CheckKind::Build
    } else {
        CheckKind::Test
    }
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
