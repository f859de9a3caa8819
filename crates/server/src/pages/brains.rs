//! Brains: every preset, and for one brain each role's model chain, where it comes from
//! (this brain or a parent it extends), and a form to change it. A change is checked like a
//! run would check it (the inheritance resolves, every model exists) and errors show at the
//! field.

use std::collections::HashSet;

use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_brain::{BrainBudget, BrainError, BrainPreset, BrainsDocument, select_brain};
use braincode_protocol::Role;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;

use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout::{self, Section};
use crate::{AppState, input, pages, store};

texts! {
    pub(crate) enum S {
        Title => "Brains", "大脑";
        Lede => "A brain routes each role to a chain of models: the first that answers is used, the rest are fallbacks.", "大脑把每个角色路由到一条模型链：第一个回答的模型被使用，其余是备选。";
        Brain => "Brain", "大脑";
        Extends => "Extends", "继承自";
        Description => "Description", "描述";
        Primary => "Primary (backend)", "主模型（backend）";
        Edit => "Edit", "编辑";
        NoSuch => "No such brain", "没有这个大脑";
        NoSuchText => "There is no brain {0}.", "没有名为 {0} 的大脑。";
        SeeAll => "See them all.", "查看全部。";
        BrainTitle => "Brain {0}", "大脑 {0}";
        Nothing => "(nothing: a complete brain)", "（无：完整的大脑）";
        Budget => "Budget per run", "每次运行的预算";
        BudgetHint => "Tokens: a whole number, or with k (thousand) or m (million): 50000, 50k, 1.5m. Cost: US dollars, such as 5 or 0.50. Leave a field empty for no limit of this brain's own.", "令牌：整数，或带 k（千）或 m（百万）：50000、50k、1.5m。费用：美元，例如 5 或 0.50。留空表示此大脑自身不设限。";
        MostTokens => "Most tokens", "最多令牌";
        MostCost => "Most cost (USD)", "最高费用（美元）";
        NoLimitTokens => "empty: no limit (e.g. 2m)", "留空：不限（例如 2m）";
        NoLimitCost => "empty: no limit (e.g. 5)", "留空：不限（例如 5）";
        Role => "Role", "角色";
        Model => "Model", "模型";
        Fallbacks => "Fallbacks (comma-separated)", "备选（逗号分隔）";
        SetBy => "Set by", "设置来源";
        ThisBrain => "this brain", "此大脑";
        InheritedFrom => "inherited from", "继承自";
        NoBrain => "there is no brain {0}", "没有名为 {0} 的大脑";
        NeedsModel => "every role needs a model", "每个角色都需要一个模型";
        Breaks => "this change breaks brain {0}: {1}", "此修改会破坏大脑 {0}：{1}";
        FixModels => "{0}; fix models.json first", "{0}；请先修复 models.json";
        Unknown => "no model {0} in the catalogue; known ids: {1} (add it on the Models page)", "目录中没有模型 {0}；已知 ID：{1}（在“模型”页面添加）";
        Saved => "saved brain {0}", "已保存大脑 {0}";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/brains", get(index))
        .route("/brains/{id}", get(brain_page))
        .route("/api/brains/{id}", post(save))
}

fn default_brain(state: &AppState) -> String {
    braincode_config::load_settings(&state.home)
        .map(|s| s.default_brain_id)
        .unwrap_or_else(|_| braincode_brain::DEFAULT_BRAIN_ID.to_string())
}

async fn index(State(state): State<AppState>) -> Html<String> {
    let body = match braincode_config::load_brains(&state.home) {
        Err(err) => layout::problem(&err.to_string()),
        Ok(presets) => {
            let default = default_brain(&state);
            let user: HashSet<String> = braincode_config::read_brains_file(&state.home)
                .ok()
                .flatten()
                .map(|doc| doc.brains.into_iter().map(|b| b.id).collect())
                .unwrap_or_default();
            html! {
                p.lede { (t(S::Lede)) }
                table #brains {
                    thead { tr { th { (t(S::Brain)) } th { (t(S::Extends)) } th { (t(S::Description)) } th { (t(S::Primary)) } th {} } }
                    tbody {
                        @for preset in &presets {
                            @let resolved = select_brain(&presets, &preset.id);
                            tr {
                                td { a href=(format!("/brains/{}", preset.id)) { code { (preset.id) } } " " (preset.name.as_deref().unwrap_or_default())
                                    @if preset.id == default { " " span.tag { (t(layout::L::Default)) } }
                                    @if !user.contains(&preset.id) { " " span.tag { (t(layout::L::BuiltIn)) } } }
                                td { (preset.extends.as_deref().unwrap_or("—")) }
                                td { (preset.description.as_deref().unwrap_or_default()) }
                                @match &resolved {
                                    Ok(brain) => td { code { (brain.policy(Role::Backend).chain().join(" → ")) } },
                                    Err(err) => td.bad { (err) },
                                }
                                td { a href=(format!("/brains/{}", preset.id)) { (t(S::Edit)) } }
                            }
                        }
                    }
                }
            }
        }
    };
    layout::page(Section::Brains, t(S::Title), body)
}

/// Which preset on the `extends` chain sets `role` for brain `id`.
fn origin_of(presets: &[BrainPreset], id: &str, role: Role) -> String {
    let find = |id: &str| presets.iter().rev().find(|p| p.id == id);
    let mut current = find(id);
    for _ in 0..32 {
        let Some(preset) = current else { break };
        let sets = preset
            .roles
            .as_ref()
            .is_some_and(|roles| roles.contains_key(&role));
        match preset
            .extends
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            Some(parent) if !sets => current = find(parent),
            _ => return preset.id.clone(),
        }
    }
    id.to_string()
}

async fn brain_page(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    use axum::response::IntoResponse;
    let presets = match braincode_config::load_brains(&state.home) {
        Ok(presets) => presets,
        Err(err) => {
            return layout::page(
                Section::Brains,
                t(S::Title),
                layout::problem(&err.to_string()),
            )
            .into_response();
        }
    };
    let Some(preset) = presets.iter().rev().find(|p| p.id == id) else {
        return (
            axum::http::StatusCode::NOT_FOUND,
            layout::page(
                Section::Brains,
                t(S::NoSuch),
                html! { p { (tf(S::NoSuchText, &[&id])) " " a href="/brains" { (t(S::SeeAll)) } } },
            ),
        )
            .into_response();
    };
    let version = store::version_of(&state.home.brains_path()).unwrap_or_default();
    let body = match select_brain(&presets, &id) {
        Err(err) => {
            html! { (layout::problem(&err.to_string())) (form(&presets, preset, None, &version)) }
        }
        Ok(brain) => form(&presets, preset, Some(&brain), &version),
    };
    layout::page(Section::Brains, &tf(S::BrainTitle, &[&id]), body).into_response()
}

fn form(
    presets: &[BrainPreset],
    preset: &BrainPreset,
    brain: Option<&braincode_brain::BrainModel>,
    version: &str,
) -> Markup {
    let others: Vec<&str> = presets
        .iter()
        .map(|p| p.id.as_str())
        .filter(|other| *other != preset.id)
        .collect();
    html! {
        @if let Some(description) = &preset.description { p.lede { (description) } }
        form #brain-form data-api=(format!("/api/brains/{}", preset.id)) data-reload {
            (layout::version_field(version))
            label { (t(S::Extends))
                select name="extends" {
                    option value="" selected[preset.extends.is_none()] { (t(S::Nothing)) }
                    @for other in &others { option value=(other) selected[preset.extends.as_deref() == Some(*other)] { (other) } }
                }
            }
            fieldset.budget {
                legend { (t(S::Budget)) }
                p.hint { (t(S::BudgetHint)) }
                div.grid {
                    label { (t(S::MostTokens)) input name="budget.maxTokens" data-type="tokens" inputmode="decimal" value=[brain.and_then(|b| b.budget.max_tokens)] placeholder=(t(S::NoLimitTokens)); }
                    label { (t(S::MostCost)) input name="budget.maxCostUsd" data-type="dollars" inputmode="decimal" value=[brain.and_then(|b| b.budget.max_cost_usd)] placeholder=(t(S::NoLimitCost)); }
                }
            }
            table #roles {
                thead { tr { th { (t(S::Role)) } th { (t(S::Model)) } th { (t(S::Fallbacks)) } th { (t(S::SetBy)) } } }
                tbody {
                    @for role in Role::ALL {
                        @let policy = brain.map(|b| b.policy(role));
                        @let origin = origin_of(presets, &preset.id, role);
                        tr {
                            td { (role.as_str()) }
                            td { input name=(format!("roles.{}.modelId", role.as_str())) value=(policy.map(|p| p.model_id.as_str()).unwrap_or_default()); }
                            td { input name=(format!("roles.{}.fallbackModelIds", role.as_str())) value=(policy.map(|p| p.fallback_model_ids.join(", ")).unwrap_or_default()); }
                            td { @if origin == preset.id { (t(S::ThisBrain)) } @else { (t(S::InheritedFrom)) " " a href=(format!("/brains/{origin}")) { (origin) } } }
                        }
                    }
                }
            }
            button type="submit" { (t(layout::L::Save)) }
            (layout::status_line())
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleFields {
    #[serde(default)]
    model_id: String,
    #[serde(default)]
    fallback_model_ids: String,
}

/// The budget fields as the form sends them: the text typed (`50k`, `1.5m`, empty for no
/// limit) or a number from a script. Read by [`BudgetFields::budget`], which refuses what it
/// cannot read instead of taking it for "no limit".
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BudgetFields {
    #[serde(default)]
    max_tokens: serde_json::Value,
    #[serde(default)]
    max_cost_usd: serde_json::Value,
}

impl BudgetFields {
    fn budget(&self) -> Result<BrainBudget, ApiError> {
        Ok(BrainBudget {
            max_tokens: input::token_count(&self.max_tokens)
                .map_err(|err| ApiError::at("budget.maxTokens", err))?,
            max_cost_usd: input::dollars(&self.max_cost_usd)
                .map_err(|err| ApiError::at("budget.maxCostUsd", err))?,
        })
    }
}

#[derive(Deserialize)]
struct SaveBody {
    version: String,
    #[serde(default)]
    extends: String,
    #[serde(default)]
    roles: BTreeMap<Role, RoleFields>,
    #[serde(default)]
    budget: BudgetFields,
}

fn split_chain(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Applies the form to the user's copy of the preset (a built-in one is copied first); only
/// roles whose chain differs from what the brain resolves to now are written.
fn apply(
    doc: &mut BrainsDocument,
    presets: &[BrainPreset],
    id: &str,
    body: &SaveBody,
) -> Result<(), ApiError> {
    let current = select_brain(presets, id).ok();
    let index = match doc.brains.iter().position(|p| p.id == id) {
        Some(index) => index,
        None => {
            let base = presets
                .iter()
                .rev()
                .find(|p| p.id == id)
                .cloned()
                .ok_or_else(|| ApiError::NotFound(tf(S::NoBrain, &[&format!("{id:?}")])))?;
            doc.brains.push(base);
            doc.brains.len() - 1
        }
    };
    let budget = body.budget.budget()?;
    let preset = &mut doc.brains[index];
    if current.as_ref().map(|brain| brain.budget) != Some(budget) {
        preset.budget = (budget != BrainBudget::default()).then_some(budget);
    }
    let extends = body.extends.trim();
    preset.extends = (!extends.is_empty()).then(|| extends.to_string());
    for (role, fields) in &body.roles {
        let model = fields.model_id.trim();
        let field = format!("roles.{}.modelId", role.as_str());
        if model.is_empty() {
            return Err(ApiError::at(field, t(S::NeedsModel)));
        }
        let fallbacks = split_chain(&fields.fallback_model_ids);
        let unchanged = current.as_ref().is_some_and(|brain| {
            let policy = brain.policy(*role);
            policy.model_id == model && policy.fallback_model_ids == fallbacks
        });
        if unchanged {
            continue;
        }
        let entry = preset
            .roles
            .get_or_insert_with(BTreeMap::new)
            .entry(*role)
            .or_default();
        entry.model_id = Some(model.to_string());
        entry.fallback_model_ids = Some(fallbacks);
    }
    Ok(())
}

/// Checks what a run would: every brain still resolves, and every model of this brain's
/// chains is in the catalogue.
fn check(
    state: &AppState,
    before: &[BrainPreset],
    doc: &BrainsDocument,
    id: &str,
) -> Result<(), ApiError> {
    let presets = braincode_config::merge_brains(doc.brains.clone());
    let brain = select_brain(&presets, id).map_err(|err| match err {
        BrainError::UnknownParent { .. } | BrainError::Cycle { .. } => {
            ApiError::at("extends", err.to_string())
        }
        other => ApiError::invalid(other.to_string()),
    })?;
    for other in presets.iter().filter(|p| p.id != id) {
        if let Err(err) = select_brain(&presets, &other.id)
            && select_brain(before, &other.id).is_ok()
        {
            return Err(ApiError::invalid(tf(
                S::Breaks,
                &[&format!("{:?}", other.id), &err],
            )));
        }
    }
    let models = braincode_config::load_models(&state.home)
        .map_err(|err| ApiError::Conflict(tf(S::FixModels, &[&err])))?;
    let known: HashSet<&str> = models.iter().map(|m| m.id.as_str()).collect();
    for role in Role::ALL {
        let policy = brain.policy(role);
        let unknown = |model: &str| {
            let mut ids: Vec<&str> = known.iter().copied().collect();
            ids.sort_unstable();
            tf(S::Unknown, &[&format!("{model:?}"), &ids.join(", ")])
        };
        if !known.contains(policy.model_id.as_str()) {
            return Err(ApiError::at(
                format!("roles.{}.modelId", role.as_str()),
                unknown(&policy.model_id),
            ));
        }
        if let Some(missing) = policy
            .fallback_model_ids
            .iter()
            .find(|m| !known.contains(m.as_str()))
        {
            return Err(ApiError::at(
                format!("roles.{}.fallbackModelIds", role.as_str()),
                unknown(missing),
            ));
        }
    }
    Ok(())
}

async fn save(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<axum::Json<SaveBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let home = state.home.clone();
    let path = home.brains_path();
    let version = body.version.clone();
    let checked = state.clone();
    let brain_id = id.clone();
    let new_version = store::write_if_unchanged(&state, &path, &version, move || {
        let mut doc = braincode_config::read_brains_file(&home)
            .map_err(|err| ApiError::Conflict(tf(crate::api::E::FixFileFirst, &[&err])))?
            .unwrap_or_default();
        let presets = braincode_config::merge_brains(doc.brains.clone());
        apply(&mut doc, &presets, &brain_id, &body)?;
        check(&checked, &presets, &doc, &brain_id)?;
        braincode_config::save_brains(&home, &doc)
            .map_err(|err| ApiError::from_config(err, pages::strip_index_prefix))
    })
    .await?;
    Ok(api::ok(
        json!({"message": tf(S::Saved, &[&id]), "version": new_version}),
    ))
}
