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
use crate::layout::{self, Section};
use crate::{AppState, input, pages, store};

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
                p.lede { "A brain routes each role to a chain of models: the first that answers is used, the rest are fallbacks." }
                table #brains {
                    thead { tr { th { "Brain" } th { "Extends" } th { "Description" } th { "Primary (backend)" } th {} } }
                    tbody {
                        @for preset in &presets {
                            @let resolved = select_brain(&presets, &preset.id);
                            tr {
                                td { a href=(format!("/brains/{}", preset.id)) { code { (preset.id) } } " " (preset.name.as_deref().unwrap_or_default())
                                    @if preset.id == default { " " span.tag { "default" } }
                                    @if !user.contains(&preset.id) { " " span.tag { "built-in" } } }
                                td { (preset.extends.as_deref().unwrap_or("—")) }
                                td { (preset.description.as_deref().unwrap_or_default()) }
                                @match &resolved {
                                    Ok(brain) => td { code { (brain.policy(Role::Backend).chain().join(" → ")) } },
                                    Err(err) => td.bad { (err) },
                                }
                                td { a href=(format!("/brains/{}", preset.id)) { "Edit" } }
                            }
                        }
                    }
                }
            }
        }
    };
    layout::page(Section::Brains, "Brains", body)
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
            return layout::page(Section::Brains, "Brains", layout::problem(&err.to_string()))
                .into_response();
        }
    };
    let Some(preset) = presets.iter().rev().find(|p| p.id == id) else {
        return (
            axum::http::StatusCode::NOT_FOUND,
            layout::page(
                Section::Brains,
                "No such brain",
                html! { p { "There is no brain " code { (id) } ". " a href="/brains" { "See them all." } } },
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
    layout::page(Section::Brains, &format!("Brain {id}"), body).into_response()
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
            label { "Extends "
                select name="extends" {
                    option value="" selected[preset.extends.is_none()] { "(nothing: a complete brain)" }
                    @for other in &others { option value=(other) selected[preset.extends.as_deref() == Some(*other)] { (other) } }
                }
            }
            fieldset.budget {
                legend { "Budget per run" }
                p.hint { "Tokens: a whole number, or with k (thousand) or m (million): 50000, 50k, 1.5m. Cost: US dollars, such as 5 or 0.50. Leave a field empty for no limit of this brain's own." }
                div.grid {
                    label { "Most tokens" input name="budget.maxTokens" data-type="tokens" inputmode="decimal" value=[brain.and_then(|b| b.budget.max_tokens)] placeholder="empty: no limit (e.g. 2m)"; }
                    label { "Most cost (USD)" input name="budget.maxCostUsd" data-type="dollars" inputmode="decimal" value=[brain.and_then(|b| b.budget.max_cost_usd)] placeholder="empty: no limit (e.g. 5)"; }
                }
            }
            table #roles {
                thead { tr { th { "Role" } th { "Model" } th { "Fallbacks (comma-separated)" } th { "Set by" } } }
                tbody {
                    @for role in Role::ALL {
                        @let policy = brain.map(|b| b.policy(role));
                        @let origin = origin_of(presets, &preset.id, role);
                        tr {
                            td { (role.as_str()) }
                            td { input name=(format!("roles.{}.modelId", role.as_str())) value=(policy.map(|p| p.model_id.as_str()).unwrap_or_default()); }
                            td { input name=(format!("roles.{}.fallbackModelIds", role.as_str())) value=(policy.map(|p| p.fallback_model_ids.join(", ")).unwrap_or_default()); }
                            td { @if origin == preset.id { "this brain" } @else { "inherited from " a href=(format!("/brains/{origin}")) { (origin) } } }
                        }
                    }
                }
            }
            button type="submit" { "Save" }
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
                .ok_or_else(|| ApiError::NotFound(format!("there is no brain {id:?}")))?;
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
            return Err(ApiError::at(field, "every role needs a model"));
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
            return Err(ApiError::invalid(format!(
                "this change breaks brain {:?}: {err}",
                other.id
            )));
        }
    }
    let models = braincode_config::load_models(&state.home)
        .map_err(|err| ApiError::Conflict(format!("{err}; fix models.json first")))?;
    let known: HashSet<&str> = models.iter().map(|m| m.id.as_str()).collect();
    for role in Role::ALL {
        let policy = brain.policy(role);
        let unknown = |model: &str| {
            let mut ids: Vec<&str> = known.iter().copied().collect();
            ids.sort_unstable();
            format!(
                "no model {model:?} in the catalogue; known ids: {} (add it on the Models page)",
                ids.join(", ")
            )
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
            .map_err(|err| ApiError::Conflict(format!("{err}; fix the file first, then reload")))?
            .unwrap_or_default();
        let presets = braincode_config::merge_brains(doc.brains.clone());
        apply(&mut doc, &presets, &brain_id, &body)?;
        check(&checked, &presets, &doc, &brain_id)?;
        braincode_config::save_brains(&home, &doc)
            .map_err(|err| ApiError::from_config(err, pages::strip_index_prefix))
    })
    .await?;
    Ok(api::ok(
        json!({"message": format!("saved brain {id}"), "version": new_version}),
    ))
}
