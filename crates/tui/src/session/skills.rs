//! Skills as commands: `/skill` lists them, `/skill <id>` shows one, `/skill <id> <task>` and
//! `/<id> [task]` run a task with it applied (the prompt [`braincode_config::skill_prompt`]
//! builds, the same as `braincode run --skill`). Skills are read as the next request would
//! read them (project first, shadowing the user's); an unknown id is a message naming the
//! close ones, and the session goes on.

use std::path::Path;

use braincode_config::{Home, Scope, Skill, find_skill, skill_prompt};

use crate::slash;

/// How much of a skill's body `/skill <id>` shows.
pub const SKILL_VIEW_MAX_CHARS: usize = 4_000;

/// What was asked of the skills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillRequest<'a> {
    /// `/skill`: the list.
    List,
    /// `/skill <id> [task]`.
    Named {
        /// The skill's id.
        id: &'a str,
        /// The task (`None`: show the skill).
        task: Option<&'a str>,
    },
    /// `/<name> [args]` for a name that is no command.
    Command {
        /// The word after the slash.
        name: &'a str,
        /// The task.
        args: &'a str,
    },
}

/// What the session does about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillAction {
    /// Lines for the info panel.
    Show(Vec<String>),
    /// A request to send: the prompt with the skill applied.
    Run(String),
}

/// The skills the next request in `project_root` would be given.
pub fn load_skills(home: &Home, project_root: &Path) -> Result<Vec<Skill>, String> {
    super::listings::load_at(home, project_root, None)
        .map(|config| config.support.skills)
        .map_err(|lines| lines.join(" "))
}

/// The action for `request` with `skills` (or the reason they could not be read).
pub fn skill_action(skills: Result<Vec<Skill>, String>, request: SkillRequest<'_>) -> SkillAction {
    let skills = match skills {
        Ok(skills) => skills,
        Err(reason) => return SkillAction::Show(vec![reason]),
    };
    match request {
        SkillRequest::List => SkillAction::Show(list_lines(&skills)),
        SkillRequest::Named { id, task } => match (find_skill(&skills, id), task) {
            (Ok(skill), None) => SkillAction::Show(body_lines(skill)),
            (Ok(skill), Some(task)) => SkillAction::Run(skill_prompt(skill, task)),
            (Err(unknown), _) => SkillAction::Show(vec![unknown.to_string()]),
        },
        SkillRequest::Command { name, args } => match find_skill(&skills, name) {
            Ok(skill) => SkillAction::Run(skill_prompt(skill, args)),
            Err(unknown) => {
                let mut lines = vec![slash::unknown_command(name)];
                if !unknown.close.is_empty() {
                    let names: Vec<String> =
                        unknown.close.iter().map(|n| format!("/{n}")).collect();
                    lines.push(format!(
                        "skills with a close name: {} (/skill lists them all)",
                        names.join(", ")
                    ));
                }
                SkillAction::Show(lines)
            }
        },
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::Project => "project",
        Scope::User => "user",
    }
}

fn list_lines(skills: &[Skill]) -> Vec<String> {
    if skills.is_empty() {
        return vec![
            "no skills: add one as .agents/skills/<id>/SKILL.md in the project or skills/<id>/SKILL.md in the home".into(),
        ];
    }
    let width = skills
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0)
        + 1;
    let mut lines: Vec<String> = skills
        .iter()
        .map(|skill| {
            format!(
                "  /{:<width$} {:<8} {}",
                skill.id,
                scope_name(skill.scope),
                skill.path.display()
            )
        })
        .collect();
    lines.push("/skill <id> shows one; /<id> <task> runs a task with it".into());
    lines
}

fn body_lines(skill: &Skill) -> Vec<String> {
    let mut lines = vec![format!(
        "skill {} ({}, {})",
        skill.id,
        scope_name(skill.scope),
        skill.path.display()
    )];
    let body =
        braincode_protocol::clip_chars_noting_rest(skill.body.trim_end(), SKILL_VIEW_MAX_CHARS);
    lines.extend(body.lines().map(|line| format!("  {line}")));
    lines.push(format!("/{} <task> runs a task with it", skill.id));
    lines
}
