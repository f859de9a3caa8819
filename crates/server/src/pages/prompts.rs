//! The role-prompt editor of the Routing page: for each role of the chosen brain, the system
//! prompt it runs with, marked default or custom. An edit is first previewed as a diff
//! against the current prompt; only the second, confirming request writes it, as the role's
//! `systemPrompt` in brains.json (in the file's text). An empty prompt, or the reset button,
//! goes back to the built-in one.

use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::Response;
use axum::routing::post;
use braincode_brain::{
    BrainModel, BrainPreset, BrainsDocument, default_role_prompt, role_system_prompt, select_brain,
};
use braincode_protocol::Role;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout;
use crate::{AppState, splice, store};
use braincode_config::json_edit::{self as splice_path, Step};

/// The longest system prompt the editor accepts, in characters: past that a prompt eats the
/// context window it is meant to steer.
pub(crate) const MAX_ROLE_PROMPT_CHARS: usize = 20_000;

texts! {
    pub(crate) enum S {
        Title => "Role prompts", "角色提示词";
        Lede => "The system prompt each role of brain {0} runs with. Edit one to preview the change as a diff; it is saved only when you confirm.", "大脑 {0} 中每个角色使用的系统提示词。编辑后可先以差异形式预览；只有确认后才会保存。";
        Brain => "Brain", "大脑";
        Show => "Show", "显示";
        Default => "default", "默认";
        Custom => "custom", "自定义";
        Preview => "Preview the change", "预览修改";
        Reset => "Reset to default", "恢复默认";
        Confirm => "Save this prompt", "保存此提示词";
        NoChange => "The prompt is the same as the current one: nothing to save.", "提示词与当前相同：无需保存。";
        DiffFor => "Change to the {0} prompt ({1} lines removed, {2} added):", "{0} 提示词的修改（删除 {1} 行，新增 {2} 行）：";
        ResetPreview => "Empty: the {0} prompt goes back to the built-in one.", "为空：{0} 提示词将恢复为内置提示词。";
        Saved => "saved the {0} prompt of {1}", "已保存 {1} 的 {0} 提示词";
        WasReset => "the {0} prompt of {1} is the built-in one again", "{1} 的 {0} 提示词已恢复为内置";
        AlreadyDefault => "the {0} prompt is already the built-in one", "{0} 提示词已经是内置的";
        TooLong => "the prompt has {0} characters; the limit is {1}", "提示词有 {0} 个字符；上限为 {1}";
        NoBrain => "there is no brain {0}", "没有名为 {0} 的大脑";
        RoleBad => "{0} is not a role", "{0} 不是角色";
        NotApplied => "the saved prompt is not the one the role runs with (another setting wins: the brain's planner prompt for routeBrain)", "保存的提示词不是该角色实际使用的（另一个设置优先：routeBrain 使用大脑的 planner 提示词）";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/role-prompts/preview", post(preview))
        .route("/api/role-prompts", post(save))
}

/// The editor for brain `id` (the Routing page's lower half).
pub(super) fn section(state: &AppState, brains: &[BrainPreset], id: &str) -> Markup {
    let version = store::version_of(&state.home.brains_path()).unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let ids: Vec<&str> = brains
        .iter()
        .map(|p| p.id.as_str())
        .filter(|id| seen.insert(*id))
        .collect();
    let brain = select_brain(brains, id);
    html! {
        section #role-prompts {
            h2 { (t(S::Title)) }
            form.filters method="get" action="/routing" {
                label { (t(S::Brain)) select name="brain" { @for other in &ids { option value=(other) selected[*other == id] { (other) } } } }
                button type="submit" { (t(S::Show)) }
            }
            @match &brain {
                Err(err) => (layout::problem(&err.to_string())),
                Ok(brain) => {
                    p.lede { (tf(S::Lede, &[&id])) }
                    @for role in Role::ALL { (role_card(brain, id, role, &version)) }
                }
            }
        }
    }
}

fn role_card(brain: &BrainModel, id: &str, role: Role, version: &str) -> Markup {
    let prompt = role_system_prompt(role, brain);
    let custom = prompt != default_role_prompt(role);
    let name = role.as_str();
    let reset = json!({"version": version, "brain": id, "role": name, "prompt": ""});
    html! {
        details.role-prompt data-role=(name) {
            summary { code { (name) } " " span class=(if custom { "tag custom" } else { "tag default" }) { (t(if custom { S::Custom } else { S::Default })) } }
            form data-api="/api/role-prompts/preview" data-target=(format!("#preview-{name}")) {
                input type="hidden" name="brain" value=(id);
                input type="hidden" name="role" value=(name);
                input type="hidden" name="version" value=(version);
                textarea name="prompt" rows="10" maxlength=(MAX_ROLE_PROMPT_CHARS) { (prompt) }
                button type="submit" { (t(S::Preview)) }
                @if custom {
                    " "
                    button.danger type="button" data-action="/api/role-prompts" data-body=(reset.to_string()) data-reload { (t(S::Reset)) }
                }
                (layout::status_line())
            }
            div.preview id=(format!("preview-{name}")) {}
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptBody {
    #[serde(default)]
    version: Option<String>,
    brain: String,
    role: String,
    #[serde(default)]
    prompt: String,
}

fn role_of(name: &str) -> Result<Role, ApiError> {
    Role::ALL
        .into_iter()
        .find(|role| role.as_str() == name)
        .ok_or_else(|| ApiError::at("role", tf(S::RoleBad, &[&format!("{name:?}")])))
}

/// The brain, the role and the prompt to write (`None`: back to the built-in one), checked.
fn checked(
    state: &AppState,
    body: &PromptBody,
) -> Result<(Vec<BrainPreset>, BrainModel, Role, Option<String>), ApiError> {
    let role = role_of(&body.role)?;
    let presets = braincode_config::load_brains(&state.home)
        .map_err(|err| ApiError::Conflict(tf(api::E::FixFileFirst, &[&err])))?;
    let brain = select_brain(&presets, &body.brain)
        .map_err(|_| ApiError::at("brain", tf(S::NoBrain, &[&format!("{:?}", body.brain)])))?;
    let text = body.prompt.trim();
    let count = text.chars().count();
    if count > MAX_ROLE_PROMPT_CHARS {
        return Err(ApiError::at(
            "prompt",
            tf(S::TooLong, &[&count, &MAX_ROLE_PROMPT_CHARS]),
        ));
    }
    let prompt = (!text.is_empty()).then(|| text.to_string());
    Ok((presets, brain, role, prompt))
}

async fn preview(
    State(state): State<AppState>,
    body: Result<axum::Json<PromptBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let (_, brain, role, prompt) = checked(&state, &body)?;
    let current = role_system_prompt(role, &brain);
    let next = prompt.clone().unwrap_or_else(|| default_role_prompt(role));
    let confirm = json!({"version": body.version, "brain": body.brain, "role": body.role, "prompt": prompt.clone().unwrap_or_default()});
    let lines = diff_lines(&current, &next);
    let removed = lines
        .iter()
        .filter(|(kind, _)| *kind == Change::Removed)
        .count();
    let added = lines
        .iter()
        .filter(|(kind, _)| *kind == Change::Added)
        .count();
    let html = if current == next {
        html! { p.muted { (t(S::NoChange)) } }
    } else {
        html! {
            @if prompt.is_none() { p { (tf(S::ResetPreview, &[&body.role])) } }
            p { (tf(S::DiffFor, &[&body.role, &removed, &added])) }
            pre.diff { @for (kind, line) in &lines {
                @match kind {
                    Change::Same => span.same { "  " (line) "\n" },
                    Change::Removed => del { "- " (line) "\n" },
                    Change::Added => ins { "+ " (line) "\n" },
                }
            } }
            button type="button" data-action="/api/role-prompts" data-body=(confirm.to_string()) data-reload { (t(S::Confirm)) }
        }
    };
    Ok(api::ok(
        json!({"html": html.into_string(), "changed": current != next, "removed": removed, "added": added}),
    ))
}

/// A line of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Same,
    Removed,
    Added,
}

/// The lines of `before` and `after` as a diff (longest common subsequence; prompts are a few
/// hundred lines at most, which the character limit keeps so).
fn diff_lines<'a>(before: &'a str, after: &'a str) -> Vec<(Change, &'a str)> {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let mut table = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i][j] = if a[i] == b[j] {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push((Change::Same, a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || table[i + 1][j] >= table[i][j + 1]) {
            out.push((Change::Removed, a[i]));
            i += 1;
        } else {
            out.push((Change::Added, b[j]));
            j += 1;
        }
    }
    out
}

/// brains.json's text with the role's `systemPrompt` set (or removed), in the brain's entry;
/// a built-in brain the file does not have is copied in first.
fn edit_text(
    text: &str,
    base: Option<&BrainPreset>,
    id: &str,
    role: Role,
    prompt: Option<&str>,
) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    let index = value["brains"]
        .as_array()
        .and_then(|brains| brains.iter().rposition(|b| b["id"].as_str() == Some(id)));
    let role_key = role.as_str();
    match (index, prompt) {
        (Some(index), Some(prompt)) => splice_path::set(
            text,
            &[
                Step::Key("brains"),
                Step::Index(index),
                Step::Key("roles"),
                Step::Key(role_key),
                Step::Key("systemPrompt"),
            ],
            &prompt.into(),
        ),
        (Some(index), None) => splice_path::remove(
            text,
            &[
                Step::Key("brains"),
                Step::Index(index),
                Step::Key("roles"),
                Step::Key(role_key),
                Step::Key("systemPrompt"),
            ],
        ),
        (None, Some(prompt)) => {
            let mut preset = base?.clone();
            preset
                .roles
                .get_or_insert_with(Default::default)
                .entry(role)
                .or_default()
                .system_prompt = Some(prompt.to_string());
            let entry = serde_json::to_value(&preset).ok()?;
            match value.get("brains") {
                Some(_) => splice::append_element(text, "brains", &entry),
                None => splice_path::set(text, &[Step::Key("brains")], &json!([entry])),
            }
        }
        (None, None) => None,
    }
}

async fn save(
    State(state): State<AppState>,
    body: Result<axum::Json<PromptBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let version = api::need_version(body.version.clone())?;
    let (presets, brain, role, prompt) = checked(&state, &body)?;
    let in_file = braincode_config::read_brains_file(&state.home)
        .ok()
        .flatten()
        .is_some_and(|doc| doc.brains.iter().any(|b| b.id == body.brain));
    if prompt.is_none()
        && (!in_file || role_system_prompt(role, &brain) == default_role_prompt(role))
    {
        return Ok(api::ok(
            json!({"message": tf(S::AlreadyDefault, &[&body.role]), "version": version}),
        ));
    }
    let base = presets.iter().rev().find(|p| p.id == body.brain).cloned();
    let home = state.home.clone();
    let path = home.brains_path();
    let empty = serde_json::to_string_pretty(&BrainsDocument::default())
        .unwrap_or_else(|_| "{\"brains\": []}".into())
        + "\n";
    let id = body.brain.clone();
    let wanted = prompt.clone().unwrap_or_else(|| default_role_prompt(role));
    let new_version = store::write_if_unchanged(&state, &path, &version, || {
        store::edit_in_place(
            &path,
            &empty,
            0o644,
            |text| edit_text(text, base.as_ref(), &id, role, prompt.as_deref()),
            || {
                let presets = braincode_config::load_brains(&home)
                    .map_err(|err| ApiError::from_config(err, crate::pages::strip_index_prefix))?;
                let brain = select_brain(&presets, &id)
                    .map_err(|err| ApiError::invalid(err.to_string()))?;
                if role_system_prompt(role, &brain) == wanted {
                    Ok(())
                } else {
                    Err(ApiError::at("prompt", t(S::NotApplied)))
                }
            },
        )
    })
    .await?;
    let message = match prompt {
        Some(_) => tf(S::Saved, &[&body.role, &body.brain]),
        None => tf(S::WasReset, &[&body.role, &body.brain]),
    };
    Ok(api::ok(json!({"message": message, "version": new_version})))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_keeps_common_lines_and_marks_the_rest() {
        let lines = diff_lines("a\nb\nc", "a\nx\nc\nd");
        assert_eq!(
            lines,
            vec![
                (Change::Same, "a"),
                (Change::Removed, "b"),
                (Change::Added, "x"),
                (Change::Same, "c"),
                (Change::Added, "d"),
            ]
        );
    }
}
