//! Running a task with one skill applied (`/skill <id> <task>`, `/<id> <task>` in the
//! session, `braincode run --skill <id>`): the prompt names the skill and its scope, carries
//! its body between delimiter lines, then the task. Every request already has the skills in
//! its support section (clipped, at most a dozen); this puts the chosen one first, whole as
//! read, with the instruction to follow it.

use crate::Scope;
use crate::support::Skill;

/// The task when none is given (`/review` alone).
pub const DEFAULT_SKILL_TASK: &str = "apply this skill to the current project";

/// An id that names no skill: what there is instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", unknown_message(.id, .close, .known))]
pub struct UnknownSkill {
    /// The id asked for.
    pub id: String,
    /// Skill ids close to it, closest first.
    pub close: Vec<String>,
    /// Every skill id there is.
    pub known: Vec<String>,
}

fn unknown_message(id: &str, close: &[String], known: &[String]) -> String {
    if known.is_empty() {
        return format!(
            "unknown skill `{id}`: there are no skills; add one as .agents/skills/<id>/SKILL.md in the project (or skills/<id>/SKILL.md in the Braincode home)"
        );
    }
    let listed = known.join(", ");
    match close {
        [] => format!("unknown skill `{id}` (skills: {listed})"),
        names => format!(
            "unknown skill `{id}`: did you mean {}? (skills: {listed})",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// The skill `id` of `skills` (exact, else the only one that matches ignoring case).
pub fn find_skill<'a>(skills: &'a [Skill], id: &str) -> Result<&'a Skill, UnknownSkill> {
    let id = id.trim();
    if let Some(skill) = skills.iter().find(|s| s.id == id) {
        return Ok(skill);
    }
    let folded: Vec<&Skill> = skills
        .iter()
        .filter(|s| s.id.eq_ignore_ascii_case(id))
        .collect();
    if let [skill] = folded.as_slice() {
        return Ok(skill);
    }
    Err(UnknownSkill {
        id: id.to_string(),
        close: braincode_protocol::close_names(id, skills.iter().map(|s| s.id.as_str()))
            .into_iter()
            .take(3)
            .map(str::to_string)
            .collect(),
        known: skills.iter().map(|s| s.id.clone()).collect(),
    })
}

/// The prompt that runs `task` (empty: [`DEFAULT_SKILL_TASK`]) with `skill` applied.
pub fn skill_prompt(skill: &Skill, task: &str) -> String {
    let scope = match skill.scope {
        Scope::Project => "project skill",
        Scope::User => "user skill",
    };
    let task = match task.trim() {
        "" => DEFAULT_SKILL_TASK,
        task => task,
    };
    let clipped = if skill.clipped {
        "\n[the skill file is longer; the rest was not read]"
    } else {
        ""
    };
    format!(
        "Use the skill `{id}` ({scope}, {path}) for this task: follow its instructions.\n\
         ----- skill {id} -----\n{body}{clipped}\n----- end of skill {id} -----\n\nTask: {task}",
        id = skill.id,
        path = skill.path.display(),
        body = skill.body.trim_end(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn skill(id: &str, scope: Scope) -> Skill {
        Skill {
            id: id.into(),
            scope,
            path: PathBuf::from(format!(".agents/skills/{id}/SKILL.md")),
            body: format!("# {id}\nDo the {id} thing.\n"),
            clipped: false,
        }
    }

    #[test]
    fn the_prompt_names_the_skill_then_its_body_then_the_task() {
        let prompt = skill_prompt(&skill("review", Scope::Project), "  check lib.rs ");
        assert!(prompt.starts_with("Use the skill `review` (project skill, "));
        let body = prompt.find("Do the review thing.").unwrap();
        let start = prompt.find("----- skill review -----").unwrap();
        let end = prompt.find("----- end of skill review -----").unwrap();
        assert!(start < body && body < end, "{prompt}");
        assert!(prompt.ends_with("\n\nTask: check lib.rs"), "{prompt}");
        let bare = skill_prompt(&skill("docs", Scope::User), "");
        assert!(bare.contains("(user skill, "), "{bare}");
        assert!(
            bare.ends_with(&format!("Task: {DEFAULT_SKILL_TASK}")),
            "{bare}"
        );
    }

    #[test]
    fn an_unknown_id_names_the_close_ones_and_every_one() {
        let skills = [skill("review", Scope::Project), skill("docs", Scope::User)];
        assert_eq!(find_skill(&skills, "docs").unwrap().id, "docs");
        assert_eq!(find_skill(&skills, "Review").unwrap().id, "review");
        let err = find_skill(&skills, "reveiw").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown skill `reveiw`: did you mean `review`? (skills: review, docs)"
        );
        let far = find_skill(&skills, "zzz").unwrap_err();
        assert_eq!(
            far.to_string(),
            "unknown skill `zzz` (skills: review, docs)"
        );
        let none = find_skill(&[], "x").unwrap_err();
        assert!(none.to_string().contains("there are no skills"), "{none}");
    }
}
