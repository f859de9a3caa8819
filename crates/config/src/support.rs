//! Project and user support files: AGENTS.md, skills, MCP servers and hooks, and the bounded
//! "support section" every primary, worker and review prompt starts with.
//!
//! Locations: project `AGENTS.md`, `.agents/skills/`, `.mcp.json` (or `mcp.json`) and
//! `.agents/hooks.json`; user `<home>/AGENTS.md`, `<home>/skills/`, `<home>/mcp.json` and
//! `<home>/hooks.json`. A skill is `<dir>/<id>/SKILL.md` or `<dir>/<id>.md`; dotfiles and
//! empty files are skipped, skills are sorted by id, and a project skill shadows a user skill
//! with the same id. Broken skills and MCP files are skipped with a warning; they never stop
//! a run.
//!
//! AGENTS.md files and skills go to a model, so they are read through a [`ReadScope`]: project
//! files must resolve inside the project, user files inside the Braincode home, none may be a
//! system file (`/proc`, `/sys`, `/dev`) or anything but a regular file, and reads are
//! bounded. A refused file is never read; the bundle's warnings say why.

use std::path::{Path, PathBuf};

use braincode_protocol::{ContextRef, ContextRefKind, ProjectSupportSummary};
use serde::Serialize;

use crate::budgets::{
    AGENTS_MD_MAX_CHARS, MAX_INLINED_SKILLS, SKILL_MAX_CHARS, SUPPORT_SECTION_MAX_CHARS,
};
use crate::contained::{ContainedText, ReadScope};
use crate::hooks::{Scope, load_hooks};
use crate::mcp::{McpServerConfig, load_mcp_servers, project_mcp_path};
use crate::text::clip;
use crate::{Home, ProjectTrust};

/// Bytes read of one AGENTS.md: four per character of [`AGENTS_MD_MAX_CHARS`] (a UTF-8
/// character is at most four bytes), so the character clip is exact and the rest of a huge
/// file is never read.
pub const AGENTS_MD_MAX_BYTES: usize = AGENTS_MD_MAX_CHARS * 4;
/// Bytes read of one skill file, by the same rule from [`SKILL_MAX_CHARS`].
pub const SKILL_MAX_BYTES: usize = SKILL_MAX_CHARS * 4;

/// An instructions file that was found (non-empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SupportFile {
    /// The file.
    pub path: PathBuf,
    /// Its text (at most [`AGENTS_MD_MAX_BYTES`] of it).
    pub body: String,
    /// Whether the file is longer than what was read.
    pub clipped: bool,
}

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skill {
    /// Skill id (directory or file stem).
    pub id: String,
    /// Project or user.
    pub scope: Scope,
    /// The skill file.
    pub path: PathBuf,
    /// Its text (at most [`SKILL_MAX_BYTES`] of it).
    pub body: String,
    /// Whether the file is longer than what was read.
    pub clipped: bool,
}

/// Everything support discovery found for one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SupportBundle {
    /// Project root it was discovered for.
    pub project_root: PathBuf,
    /// `<root>/AGENTS.md`.
    pub project_agents_md: Option<SupportFile>,
    /// `<home>/AGENTS.md`.
    pub user_agents_md: Option<SupportFile>,
    /// Project skills then user skills, each sorted by id (shadowed user skills removed).
    pub skills: Vec<Skill>,
    /// MCP servers, project first.
    pub mcp_servers: Vec<McpServerConfig>,
    /// Project MCP file, when present.
    pub project_mcp_path: Option<PathBuf>,
    /// User MCP file, when present.
    pub user_mcp_path: Option<PathBuf>,
    /// Hook handlers with a command, both scopes.
    pub hook_handlers: usize,
    /// What was skipped and why.
    pub warnings: Vec<String>,
}

/// A scope rooted at `root`, or `None` when there is nothing to read there (it does not
/// exist) or it cannot be resolved (with a warning).
fn open_scope(root: &Path, what: &str, warnings: &mut Vec<String>) -> Option<ReadScope> {
    match ReadScope::new(root) {
        Ok(scope) => Some(scope),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => {
            warnings.push(format!(
                "{what} support files skipped: cannot resolve {}: {err}",
                root.display()
            ));
            None
        }
    }
}

/// Reads one support file through `scope`. Missing files are `None` silently; refused or
/// unreadable files are `None` with a warning.
fn read_contained(
    scope: &ReadScope,
    path: &Path,
    max_bytes: usize,
    warnings: &mut Vec<String>,
    what: impl Fn() -> String,
) -> Option<ContainedText> {
    match scope.read_to_string(path, max_bytes) {
        Ok(text) => Some(text),
        Err(err) if err.is_not_found() => None,
        Err(err) => {
            warnings.push(format!("{} skipped: {err}", what()));
            None
        }
    }
}

fn read_instructions(
    scope: &ReadScope,
    path: &Path,
    what: &str,
    warnings: &mut Vec<String>,
) -> Option<SupportFile> {
    let read = read_contained(scope, path, AGENTS_MD_MAX_BYTES, warnings, || {
        what.to_string()
    })?;
    if read.lossy {
        warnings.push(format!(
            "{} is not valid UTF-8; invalid bytes were replaced",
            path.display()
        ));
    }
    (!read.text.trim().is_empty()).then(|| SupportFile {
        path: path.to_path_buf(),
        body: read.text,
        clipped: read.clipped,
    })
}

/// Skills in one directory, sorted by id. Every skill file is read through `reader`: a skill
/// directory or file linking out of it is refused with a warning, as is `dir` itself.
pub fn discover_skills(
    reader: &ReadScope,
    dir: &Path,
    scope: Scope,
    warnings: &mut Vec<String>,
) -> Vec<Skill> {
    let listed = match reader.resolve_dir(dir) {
        Ok(listed) => listed,
        Err(err) if err.is_not_found() => return Vec::new(),
        Err(err) => {
            warnings.push(format!("{scope} skills skipped: {err}"));
            return Vec::new();
        }
    };
    let Ok(entries) = std::fs::read_dir(&listed) else {
        return Vec::new();
    };
    let mut skills: Vec<Skill> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = dir.join(&name);
        // `is_dir` follows a link only to stat its target; nothing is opened or read.
        let (id, file) = if path.is_dir() {
            if let Err(err) = reader.resolve_dir(&path) {
                warnings.push(format!("skill {name:?} skipped: {err}"));
                continue;
            }
            (name.clone(), path.join("SKILL.md"))
        } else if let Some(stem) = name.strip_suffix(".md") {
            (stem.to_string(), path.clone())
        } else {
            continue;
        };
        if id.is_empty() {
            continue;
        }
        let Some(read) = read_contained(reader, &file, SKILL_MAX_BYTES, warnings, || {
            format!("skill {id:?}")
        }) else {
            continue;
        };
        if read.lossy {
            warnings.push(format!(
                "skill {id:?} skipped: {} is not valid UTF-8",
                file.display()
            ));
            continue;
        }
        if read.text.trim().is_empty() {
            continue;
        }
        skills.push(Skill {
            id,
            scope,
            path: file,
            body: read.text,
            clipped: read.clipped,
        });
    }
    // `<id>/SKILL.md` and `<id>.md` may both exist; directory order is arbitrary, so make
    // the winner deterministic: the directory form sorts first.
    skills.sort_by(|a, b| {
        a.id.cmp(&b.id).then_with(|| {
            b.path
                .ends_with("SKILL.md")
                .cmp(&a.path.ends_with("SKILL.md"))
        })
    });
    let mut unique: Vec<Skill> = Vec::with_capacity(skills.len());
    for skill in skills {
        match unique.last() {
            Some(first) if first.id == skill.id => warnings.push(format!(
                "skill {:?} is defined twice ({} and {}); using the first",
                skill.id,
                first.path.display(),
                skill.path.display()
            )),
            _ => unique.push(skill),
        }
    }
    unique
}

/// Finds every support file of `project_root` and of the user; an untrusted project's hooks
/// and MCP servers (by `trust`, decided once by the caller) are not read.
pub fn discover_support(home: &Home, project_root: &Path, trust: &ProjectTrust) -> SupportBundle {
    let mut warnings = Vec::new();
    let project_scope = open_scope(project_root, "project", &mut warnings);
    let user_scope = open_scope(home.root(), "user", &mut warnings);
    let project_agents_md = project_scope.as_ref().and_then(|reader| {
        read_instructions(
            reader,
            &project_root.join("AGENTS.md"),
            "project AGENTS.md",
            &mut warnings,
        )
    });
    let user_agents_md = user_scope.as_ref().and_then(|reader| {
        read_instructions(
            reader,
            &home.agents_md_path(),
            "user AGENTS.md",
            &mut warnings,
        )
    });
    let project_skills = project_scope
        .as_ref()
        .map(|reader| {
            discover_skills(
                reader,
                &project_root.join(".agents").join("skills"),
                Scope::Project,
                &mut warnings,
            )
        })
        .unwrap_or_default();
    let user_skills = user_scope
        .as_ref()
        .map(|reader| discover_skills(reader, &home.skills_dir(), Scope::User, &mut warnings))
        .unwrap_or_default();
    let mut skills = project_skills;
    for skill in user_skills {
        if !skills.iter().any(|s| s.id == skill.id) {
            skills.push(skill);
        }
    }
    let (mcp_servers, mcp_warnings) = load_mcp_servers(home, project_root, trust);
    warnings.extend(mcp_warnings);
    let hook_handlers = match load_hooks(home, project_root, trust) {
        Ok(sources) => sources.iter().map(|s| s.file.handler_count()).sum(),
        Err(err) => {
            warnings.push(err.to_string());
            0
        }
    };
    SupportBundle {
        project_root: project_root.to_path_buf(),
        project_agents_md,
        user_agents_md,
        skills,
        mcp_servers,
        project_mcp_path: project_mcp_path(project_root),
        user_mcp_path: Some(home.mcp_path()).filter(|p| p.is_file()),
        hook_handlers,
        warnings,
    }
}

/// `body` clipped to `max` characters, with a note when anything is missing: cut here, or
/// never read (`read_clipped`).
fn clipped_with_note(
    body: &str,
    read_clipped: bool,
    max: usize,
    what: &str,
    path: &Path,
) -> String {
    let body = body.trim();
    if !read_clipped && body.chars().count() <= max {
        return body.to_string();
    }
    format!(
        "{}\n[{what} clipped at {max} characters; read {} with your tools for the rest]",
        clip(body, max),
        path.display()
    )
}

impl SupportBundle {
    /// The support section of a prompt: project AGENTS.md before user AGENTS.md (with a
    /// precedence note), up to 12 skills, MCP server names. Each AGENTS.md is clipped to
    /// 32,000 characters, each skill to 8,000, the whole section to 64,000; every cut says so
    /// and tells the model to read the rest with tools. Empty when nothing was found.
    pub fn support_section(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(file) = &self.project_agents_md {
            parts.push(format!(
                "Project AGENTS.md ({}):\n{}",
                file.path.display(),
                clipped_with_note(
                    &file.body,
                    file.clipped,
                    AGENTS_MD_MAX_CHARS,
                    "AGENTS.md",
                    &file.path
                )
            ));
        }
        if let Some(file) = &self.user_agents_md {
            parts.push(format!(
                "User AGENTS.md ({}):\n{}",
                file.path.display(),
                clipped_with_note(
                    &file.body,
                    file.clipped,
                    AGENTS_MD_MAX_CHARS,
                    "user AGENTS.md",
                    &file.path
                )
            ));
        }
        if !self.skills.is_empty() {
            let mut skills = format!("Skills ({}):", self.skills.len());
            for skill in self.skills.iter().take(MAX_INLINED_SKILLS) {
                skills.push_str(&format!(
                    "\n\nSkill {} ({}, {}):\n{}",
                    skill.id,
                    skill.scope,
                    skill.path.display(),
                    clipped_with_note(
                        &skill.body,
                        skill.clipped,
                        SKILL_MAX_CHARS,
                        "skill",
                        &skill.path
                    )
                ));
            }
            if self.skills.len() > MAX_INLINED_SKILLS {
                let omitted: Vec<&str> = self.skills[MAX_INLINED_SKILLS..]
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect();
                skills.push_str(&format!(
                    "\n\n[{} more skills omitted: {}; read their files with your tools when relevant]",
                    omitted.len(),
                    omitted.join(", ")
                ));
            }
            parts.push(skills);
        }
        if !self.mcp_servers.is_empty() {
            let names: Vec<String> = self
                .mcp_servers
                .iter()
                .filter(|s| !s.disabled)
                .map(|s| format!("{} ({})", s.name, s.scope))
                .collect();
            if !names.is_empty() {
                parts.push(format!("MCP servers configured: {}", names.join(", ")));
            }
        }
        if parts.is_empty() {
            return String::new();
        }
        let precedence = if self.project_agents_md.is_some() && self.user_agents_md.is_some() {
            " Project instructions take precedence over user instructions when they conflict."
        } else {
            ""
        };
        let section = format!(
            "Project and user support files.{precedence}\n\n{}\n",
            parts.join("\n\n")
        );
        if section.chars().count() <= SUPPORT_SECTION_MAX_CHARS {
            return section;
        }
        let note = format!(
            "\n[support section clipped at {SUPPORT_SECTION_MAX_CHARS} characters; read AGENTS.md and the skill files with your tools for the rest]\n"
        );
        let keep = SUPPORT_SECTION_MAX_CHARS - note.chars().count();
        format!("{}{note}", clip(&section, keep))
    }

    /// References to the support files, labelled `AGENTS.md`, `.mcp.json`, `skill:<id>`,
    /// `user AGENTS.md`, `user mcp.json`, `user-skill:<id>`.
    pub fn context_refs(&self) -> Vec<ContextRef> {
        let file_ref = |path: &Path, label: String| ContextRef {
            kind: ContextRefKind::File,
            uri: path.display().to_string(),
            label: Some(label),
        };
        let mut refs = Vec::new();
        if let Some(file) = &self.project_agents_md {
            refs.push(file_ref(&file.path, "AGENTS.md".into()));
        }
        if let Some(path) = &self.project_mcp_path {
            refs.push(file_ref(path, ".mcp.json".into()));
        }
        for skill in self.skills.iter().filter(|s| s.scope == Scope::Project) {
            refs.push(file_ref(&skill.path, format!("skill:{}", skill.id)));
        }
        if let Some(file) = &self.user_agents_md {
            refs.push(file_ref(&file.path, "user AGENTS.md".into()));
        }
        if let Some(path) = &self.user_mcp_path {
            refs.push(file_ref(path, "user mcp.json".into()));
        }
        for skill in self.skills.iter().filter(|s| s.scope == Scope::User) {
            refs.push(file_ref(&skill.path, format!("user-skill:{}", skill.id)));
        }
        refs
    }

    /// The summary recorded in `run_start.projectSupport`.
    pub fn summary(&self, root: &Path) -> ProjectSupportSummary {
        ProjectSupportSummary {
            root: root.display().to_string(),
            agents_md: self.project_agents_md.is_some(),
            user_agents_md: self.user_agents_md.is_some(),
            skills: self.skills.iter().map(|s| s.id.clone()).collect(),
            mcp_servers: self.mcp_servers.iter().map(|s| s.name.clone()).collect(),
            hooks: u32::try_from(self.hook_handlers).unwrap_or(u32::MAX),
        }
    }
}
