//! Models: the catalogue with each model's credential, adding and removing entries of
//! models.json, a connection test, and discovery from an endpoint's `/models`.

use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_config::ModelsDocument;
use braincode_llm::discover_models;
use braincode_protocol::{ModelApi, ModelDefinition};
use braincode_runtime::{
    ModelTest, credential_status, credential_usable, suggested_entry, test_model,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::api::{self, ApiError};
use crate::layout::{self, Section};
use crate::{AppState, input, pages, splice, store};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/models", get(page))
        .route("/api/models", get(list).post(add))
        .route("/api/models/remove", post(remove))
        .route("/api/models/test", post(test))
        .route("/api/models/discover", post(discover))
}

const APIS: [ModelApi; 5] = [
    ModelApi::OpenaiCompletions,
    ModelApi::OpenaiResponses,
    ModelApi::AnthropicMessages,
    ModelApi::GoogleGenerativeAi,
    ModelApi::AzureOpenaiResponses,
];

async fn page(State(state): State<AppState>) -> Html<String> {
    let home = &state.home;
    let version = store::version_of(&home.models_path()).unwrap_or_default();
    let user_ids: Vec<String> = match braincode_config::read_models_file(home) {
        Ok(doc) => doc
            .map(|d| d.models.into_iter().map(|m| m.id).collect())
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let body = match braincode_config::load_models(home) {
        Err(err) => layout::problem(&err.to_string()),
        Ok(models) => html! {
            p.lede { "Every model a brain can route to. Entries of " code { (home.models_path().display()) } " replace the built-in model with the same id." }
            table #models {
                thead { tr { th { "Id" } th { "API" } th { "Model" } th.num { "Context" } th { "Price in / out (USD per M tokens)" } th { "Credential" } th {} } }
                tbody {
                    @for model in &models { (row(&state, model, user_ids.contains(&model.id), &version)) }
                }
            }
            div.result #test-result role="status" {}
            (add_form(&version))
            (discover_form())
        },
    };
    layout::page(Section::Models, "Models", body)
}

fn row(state: &AppState, model: &ModelDefinition, from_file: bool, version: &str) -> Markup {
    let credential = credential_status(&state.home, model);
    let price = model.pricing.map_or_else(
        || "—".to_string(),
        |p| format!("{} / {}", p.input, p.output),
    );
    html! {
        tr data-model=(model.id) {
            td { code { (model.id) } @if !from_file { " " span.tag { "built-in" } } }
            td { (model.api.as_str()) }
            td { (layout::breakable(&model.model_id)) @if let Some(url) = &model.base_url { br; small { (layout::breakable(url)) } } }
            td.num { (layout::thousands(u64::from(model.context_window))) }
            td { (price) }
            td class=(if credential_usable(&credential) { "ok" } else { "bad" }) { (credential) }
            td.actions {
                button type="button" data-action="/api/models/test" data-body=(json!({"id": model.id}).to_string()) data-target="#test-result" { "Test" }
                @if from_file {
                    button.danger type="button" data-action="/api/models/remove" data-body=(json!({"id": model.id, "version": version}).to_string()) data-reload data-confirm=(format!("Remove {} from models.json?", model.id)) { "Remove" }
                }
            }
        }
    }
}

fn add_form(version: &str) -> Markup {
    html! {
        section {
            h2 { "Add a model" }
            form #add-model data-api="/api/models" data-reload {
                (layout::version_field(version))
                div.grid {
                    label { "Id (one word, no spaces)" input name="id" data-check="model-id" required placeholder="openrouter/qwen3-coder"; }
                    label { "Provider" input name="provider" required placeholder="openrouter"; }
                    label { "Model name at the provider" input name="modelId" required placeholder="qwen/qwen3-coder"; }
                    label { "Display name" input name="name" placeholder="(the id)"; }
                    label { "API" select name="api" { @for api in APIS { option value=(api.as_str()) { (api.as_str()) } } } }
                    label { "Base URL (http or https)" input name="baseUrl" data-check="url" placeholder="https://api.example.com/v1"; }
                    label { "Context window (tokens)" input name="contextWindow" data-type="integer" required value="128000"; }
                    label { "Input price (USD / M)" input name="pricing.input" data-type="number" placeholder="3"; }
                    label { "Output price (USD / M)" input name="pricing.output" data-type="number" placeholder="15"; }
                    label.check { input type="checkbox" name="supportsTools" checked; " Tool calls" }
                    label.check { input type="checkbox" name="supportsVision"; " Images" }
                }
                button type="submit" { "Add" }
                (layout::status_line())
            }
        }
    }
}

fn discover_form() -> Markup {
    html! {
        section {
            h2 { "Discover from an endpoint" }
            form data-api="/api/models/discover" data-target="#discovered" {
                div.grid {
                    label { "Base URL" input name="baseUrl" data-check="url" required placeholder="http://127.0.0.1:11434/v1"; }
                    label { "API" select name="api" { @for api in APIS { option value=(api.as_str()) { (api.as_str()) } } } }
                    label { "Provider (its saved key is used)" input name="provider" placeholder="ollama"; }
                }
                button type="submit" { "List its models" }
                (layout::status_line())
            }
            div #discovered {}
        }
    }
}

async fn list(State(state): State<AppState>) -> Result<Response, ApiError> {
    let models = braincode_config::load_models(&state.home)
        .map_err(|err| ApiError::Internal(err.to_string()))?;
    let version = store::version_of(&state.home.models_path())?;
    Ok(api::ok(json!({"models": models, "version": version})))
}

/// Checks the fields a person types, each at its own field, before serde reads the entry:
/// a value that cannot be read is refused with the reason, never dropped (an unreadable
/// context window must not become the default one).
fn check_fields(fields: &mut Map<String, Value>) -> Result<(), ApiError> {
    for key in ["id", "provider", "modelId", "baseUrl", "name"] {
        if let Some(Value::String(text)) = fields.get_mut(key) {
            *text = text.trim().to_string();
        }
    }
    if let Some(Value::String(id)) = fields.get("id")
        && let Some(problem) = input::model_id_problem(id)
    {
        return Err(ApiError::at("id", problem));
    }
    if let Some(Value::String(url)) = fields.get("baseUrl")
        && !url.is_empty()
        && let Some(problem) = input::base_url_problem(url)
    {
        return Err(ApiError::at("baseUrl", problem));
    }
    if let Some(value) = fields.get_mut("contextWindow")
        && !value.is_null()
        && value.as_str() != Some("")
    {
        let tokens = input::positive_integer(value, "context window")
            .and_then(|n| {
                u32::try_from(n)
                    .map_err(|_| format!("{n} tokens is more than a context window can be"))
            })
            .map_err(|err| ApiError::at("contextWindow", err))?;
        *value = Value::from(tokens);
    }
    if let Some(Value::Object(pricing)) = fields.get_mut("pricing") {
        for (key, value) in pricing.iter_mut() {
            if value.is_null() || value.as_str().is_some_and(|s| s.trim().is_empty()) {
                *value = Value::Null;
                continue;
            }
            let price =
                input::price(value).map_err(|err| ApiError::at(format!("pricing.{key}"), err))?;
            *value = Value::from(price);
        }
    }
    Ok(())
}

/// Turns the form's fields into a models.json entry: empty fields are left out, so the
/// entry's defaults apply; the rules models.json has for every entry are checked here, at
/// the field they concern.
fn entry_of(mut fields: Map<String, Value>) -> Result<ModelDefinition, ApiError> {
    check_fields(&mut fields)?;
    fields.retain(|_, value| !matches!(value, Value::Null) && value.as_str() != Some(""));
    if let Some(Value::Object(pricing)) = fields.get_mut("pricing") {
        pricing.retain(|_, value| !value.is_null());
        match (
            pricing.contains_key("input"),
            pricing.contains_key("output"),
        ) {
            (false, false) => {
                fields.remove("pricing");
            }
            (true, false) => {
                return Err(ApiError::at("pricing.output", "give the output price too"));
            }
            (false, true) => return Err(ApiError::at("pricing.input", "give the input price too")),
            (true, true) => {}
        }
    }
    if !fields.contains_key("name")
        && let Some(id) = fields.get("id").cloned()
    {
        fields.insert("name".into(), id);
    }
    let model: ModelDefinition = serde_json::from_value(Value::Object(fields)).map_err(|err| {
        let message = err.to_string();
        match pages::serde_field(&message) {
            Some(field) => ApiError::at(field, message),
            None => ApiError::invalid(message),
        }
    })?;
    for (field, value) in [("provider", &model.provider), ("modelId", &model.model_id)] {
        if value.is_empty() {
            return Err(ApiError::at(field, format!("give the model's {field}")));
        }
    }
    if model.context_window == 0 {
        return Err(ApiError::at(
            "contextWindow",
            "the context window is 0; set it to the model's context size in tokens",
        ));
    }
    if let Some(field) = model.pricing.and_then(|p| p.invalid_field()) {
        return Err(ApiError::at(
            format!("pricing.{field}"),
            "a price must be a number of US dollars per million tokens, 0 or more",
        ));
    }
    if let Some(field) = model.call_settings().invalid_field() {
        return Err(ApiError::at(field, "0 would fail every call"));
    }
    Ok(model)
}

fn take_version(fields: &mut Map<String, Value>) -> Result<String, ApiError> {
    match fields.remove("version") {
        Some(Value::String(version)) => Ok(version),
        _ => Err(ApiError::invalid(
            "the request names no file version; reload the page",
        )),
    }
}

async fn add(
    State(state): State<AppState>,
    body: Result<axum::Json<Map<String, Value>>, JsonRejection>,
) -> Result<Response, ApiError> {
    let mut fields = api::body(body)?;
    let version = take_version(&mut fields)?;
    let model = entry_of(fields)?;
    if model.api == ModelApi::Local {
        return Err(ApiError::at(
            "api",
            "the embedded model is built in; pull its weights with `braincode models pull`",
        ));
    }
    let home = state.home.clone();
    let path = home.models_path();
    let id = model.id.clone();
    let new_version = store::write_if_unchanged(&state, &path, &version, move || {
        let doc = read_doc(&home)?;
        if doc.models.iter().any(|m| m.id == model.id) {
            return Err(ApiError::at(
                "id",
                format!("models.json already has a model {:?}; pick another id or remove that one first", model.id),
            ));
        }
        let entry = serde_json::to_value(&model)
            .map_err(|err| ApiError::Internal(format!("cannot write the entry: {err}")))?;
        let expected = doc.models.len() + 1;
        write_models(&home, doc, expected, |text| splice::append_element(text, "models", &entry), |doc| doc.models.push(model))
    })
    .await?;
    Ok(api::ok(
        json!({"message": format!("added {id}"), "version": new_version}),
    ))
}

/// Writes models.json changed by `edit_text` (its other entries keep their bytes, even
/// those in the older TypeScript form, which the loader reads as it always did), or, when
/// there is no file yet or its text cannot be followed, by `edit_doc` on the document. The result must load with `expected` models, or
/// the file is put back as it was.
fn write_models(
    home: &braincode_config::Home,
    mut doc: ModelsDocument,
    expected: usize,
    edit_text: impl FnOnce(&str) -> Option<String>,
    edit_doc: impl FnOnce(&mut ModelsDocument),
) -> Result<(), ApiError> {
    let path = home.models_path();
    let before = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => {
            return Err(ApiError::Internal(format!(
                "cannot read {}: {err}",
                path.display()
            )));
        }
    };
    let edited = before
        .as_deref()
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .and_then(edit_text);
    match edited {
        Some(text) => braincode_config::write_bytes_atomic(&path, text.as_bytes(), 0o644)
            .map_err(|err| ApiError::Internal(err.to_string()))?,
        None => {
            edit_doc(&mut doc);
            braincode_config::save_models(home, &doc)
                .map_err(|err| ApiError::from_config(err, pages::strip_index_prefix))?;
        }
    }
    let loaded =
        braincode_config::read_models_file(home).map(|doc| doc.map_or(0, |doc| doc.models.len()));
    if loaded.as_ref().ok() == Some(&expected) {
        return Ok(());
    }
    // Never leave a file the loader refuses: put back what was there.
    let restored = match &before {
        Some(bytes) => braincode_config::write_bytes_atomic(&path, bytes, 0o644).is_ok(),
        None => std::fs::remove_file(&path).is_ok(),
    };
    Err(ApiError::Internal(format!(
        "the edited models.json did not load back ({}); {}",
        match loaded {
            Ok(count) => format!("{count} models instead of {expected}"),
            Err(err) => err.to_string(),
        },
        if restored {
            "the file was put back as it was"
        } else {
            "putting the file back failed too; check it with `braincode models list`"
        }
    )))
}

fn read_doc(home: &braincode_config::Home) -> Result<ModelsDocument, ApiError> {
    braincode_config::read_models_file(home)
        .map(Option::unwrap_or_default)
        .map_err(|err| ApiError::Conflict(format!("{err}; fix the file first, then reload")))
}

#[derive(Deserialize)]
struct RemoveBody {
    id: String,
    version: String,
}

async fn remove(
    State(state): State<AppState>,
    body: Result<axum::Json<RemoveBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let RemoveBody { id, version } = api::body(body)?;
    let home = state.home.clone();
    let path = home.models_path();
    let removed = id.clone();
    let new_version = store::write_if_unchanged(&state, &path, &version, move || {
        let doc = read_doc(&home)?;
        let Some(index) = doc.models.iter().position(|m| m.id == removed) else {
            return Err(ApiError::NotFound(format!(
                "models.json has no model {removed:?}"
            )));
        };
        let expected = doc.models.len() - 1;
        write_models(
            &home,
            doc,
            expected,
            |text| {
                // The entry's place in the file (entries the loader set aside count too).
                let value: Value = serde_json::from_str(text).ok()?;
                let at = value["models"]
                    .as_array()?
                    .iter()
                    .position(|m| m["id"].as_str() == Some(removed.as_str()))?;
                splice::remove_element(text, "models", at)
            },
            |doc| {
                doc.models.remove(index);
            },
        )
    })
    .await?;
    Ok(api::ok(
        json!({"message": format!("removed {id}"), "version": new_version}),
    ))
}

#[derive(Deserialize)]
struct TestBody {
    id: String,
}

async fn test(
    State(state): State<AppState>,
    body: Result<axum::Json<TestBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let TestBody { id } = api::body(body)?;
    let models = braincode_config::load_models(&state.home)
        .map_err(|err| ApiError::Internal(err.to_string()))?;
    let model = models
        .iter()
        .find(|m| m.id == id)
        .ok_or_else(|| ApiError::NotFound(format!("no model {id:?} in the catalogue")))?;
    let (ok, html) = match test_model(&state.home, model).await {
        ModelTest::Embedded(message) => (true, html! { p { (message) } }),
        ModelTest::Tested(result) => match &result.failure {
            None => (
                true,
                html! { p.ok { "✓ " code { (id) } " answered in " (result.latency_ms) " ms: " q { (result.reply) } } },
            ),
            Some(failure) => (
                false,
                html! { p.bad { "✗ " code { (id) } ": " (failure.kind) " — " (failure.explanation) } p { "Hint: " (failure.kind.hint()) } },
            ),
        },
    };
    Ok(api::ok(json!({"ok": ok, "html": html.into_string()})))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiscoverBody {
    base_url: String,
    api: ModelApi,
    #[serde(default)]
    provider: Option<String>,
}

async fn discover(
    State(state): State<AppState>,
    body: Result<axum::Json<DiscoverBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    if body.base_url.trim().is_empty() {
        return Err(ApiError::at("baseUrl", "give the endpoint's base URL"));
    }
    if body.api == ModelApi::Local {
        return Err(ApiError::at("api", "the embedded model has no endpoint"));
    }
    let provider = body
        .provider
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty());
    let key = provider.as_deref().and_then(|provider| {
        braincode_config::resolve_api_key(&state.home, provider, None)
            .map(|k| k.expose().to_string())
    });
    let provider = provider.unwrap_or_else(|| "custom".to_string());
    let found = discover_models(body.base_url.trim(), body.api, key.as_deref())
        .await
        .map_err(|err| {
            ApiError::at(
                "baseUrl",
                format!("{}: {} — {}", err.kind, err.message, err.kind.hint()),
            )
        })?;
    let html = html! {
        p { (found.len()) " model(s) at " code { (body.base_url) } ". Pick one to fill the form above." }
        ul.discovered {
            @for model in &found {
                li {
                    code { (model.id) } " (context ≈ " (layout::thousands(u64::from(model.context_window_guess))) ") "
                    button type="button" data-fill="#add-model" data-values=(suggested_entry(&provider, body.base_url.trim(), body.api, model).to_string()) { "Use" }
                }
            }
        }
    };
    Ok(api::ok(
        json!({"count": found.len(), "html": html.into_string()}),
    ))
}
