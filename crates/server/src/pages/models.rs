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
use crate::i18n::{t, texts, tf};
use crate::layout::{self, Section};
use crate::{AppState, input, pages, splice, store};

texts! {
    pub(crate) enum S {
        Title => "Models", "模型";
        Lede => "Every model a brain can route to. Entries of {0} replace the built-in model with the same id.", "大脑可以路由到的所有模型。{0} 中的条目会替换同 ID 的内置模型。";
        Id => "ID", "ID";
        Api => "API", "API";
        Model => "Model", "模型";
        Context => "Context", "上下文";
        Price => "Price in / out (USD per M tokens)", "价格 输入 / 输出（美元 / 百万令牌）";
        Credential => "Credential", "凭据";
        Test => "Test", "测试";
        Remove => "Remove", "删除";
        RemoveConfirm => "Remove {0} from models.json?", "从 models.json 中删除 {0}？";
        AddTitle => "Add a model", "添加模型";
        IdLabel => "Id (one word, no spaces)", "ID（一个词，无空格）";
        Provider => "Provider", "提供方";
        ModelAtProvider => "Model name at the provider", "提供方的模型名";
        DisplayName => "Display name", "显示名称";
        TheId => "(the id)", "（同 ID）";
        BaseUrl => "Base URL (http or https)", "基础 URL（http 或 https）";
        ContextWindow => "Context window (tokens)", "上下文窗口（令牌）";
        InputPrice => "Input price (USD / M)", "输入价格（美元 / 百万）";
        OutputPrice => "Output price (USD / M)", "输出价格（美元 / 百万）";
        ToolCalls => "Tool calls", "工具调用";
        Images => "Images", "图像";
        Add => "Add", "添加";
        DiscoverTitle => "Discover from an endpoint", "从端点发现";
        BaseUrlShort => "Base URL", "基础 URL";
        ProviderKey => "Provider (its saved key is used)", "提供方（使用其已保存的密钥）";
        ListModels => "List its models", "列出其模型";
        Added => "added {0}", "已添加 {0}";
        Removed => "removed {0}", "已删除 {0}";
        OutputToo => "give the output price too", "请同时填写输出价格";
        InputToo => "give the input price too", "请同时填写输入价格";
        GiveField => "give the model's {0}", "请填写模型的 {0}";
        ZeroWindow => "the context window is 0; set it to the model's context size in tokens", "上下文窗口为 0；请设为模型的上下文大小（令牌数）";
        PriceBad => "a price must be a number of US dollars per million tokens, 0 or more", "价格必须是每百万令牌的美元数，0 或以上";
        ZeroFails => "0 would fail every call", "0 会让每次调用失败";
        TooLarge => "{0} tokens is more than a context window can be", "{0} 个令牌超过了上下文窗口的上限";
        Embedded => "the embedded model is built in; pull its weights with `braincode models pull`", "嵌入式模型是内置的；用 `braincode models pull` 下载其权重";
        Duplicate => "models.json already has a model {0}; pick another id or remove that one first", "models.json 已有模型 {0}；请换一个 ID 或先删除那个";
        NoModel => "models.json has no model {0}", "models.json 中没有模型 {0}";
        NotInCatalogue => "no model {0} in the catalogue", "目录中没有模型 {0}";
        AnsweredIn => "answered in {0} ms:", "在 {0} 毫秒内回答：";
        Hint => "Hint:", "提示：";
        GiveBaseUrl => "give the endpoint's base URL", "请填写端点的基础 URL";
        NoEndpoint => "the embedded model has no endpoint", "嵌入式模型没有端点";
        Found => "{0} model(s) at {1}. Pick one to fill the form above.", "在 {1} 找到 {0} 个模型。选择一个来填写上面的表单。";
        ContextAbout => "context ≈", "上下文 ≈";
        Use => "Use", "使用";
        EmbeddedCredential => "embedded", "嵌入式";
        Missing => "missing", "缺失";
        NotNeeded => "not needed (local endpoint)", "不需要（本地端点）";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/models", get(page))
        .route("/api/models", get(list).post(add))
        .route("/api/models/remove", post(remove))
        .route("/api/models/test", post(test))
        .route("/api/models/discover", post(discover))
}

/// The wires a model can be added with; `openai-images` is an image-generation model (what
/// a brain's imageMaker generates images with).
const APIS: [ModelApi; 6] = [
    ModelApi::OpenaiCompletions,
    ModelApi::OpenaiResponses,
    ModelApi::AnthropicMessages,
    ModelApi::GoogleGenerativeAi,
    ModelApi::AzureOpenaiResponses,
    ModelApi::OpenaiImages,
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
            p.lede { (tf(S::Lede, &[&home.models_path().display()])) }
            table #models {
                thead { tr { th { (t(S::Id)) } th { (t(S::Api)) } th { (t(S::Model)) } th.num { (t(S::Context)) } th { (t(S::Price)) } th { (t(S::Credential)) } th {} } }
                tbody {
                    @for model in &models { (row(&state, model, user_ids.contains(&model.id), &version)) }
                }
            }
            div.result #test-result role="status" {}
            (add_form(&version))
            (discover_form())
        },
    };
    layout::page(Section::Models, t(S::Title), body)
}

fn row(state: &AppState, model: &ModelDefinition, from_file: bool, version: &str) -> Markup {
    let credential = credential_status(&state.home, model);
    let price = model.pricing.map_or_else(
        || "—".to_string(),
        |p| format!("{} / {}", p.input, p.output),
    );
    html! {
        tr data-model=(model.id) {
            td { code { (model.id) } @if !from_file { " " span.tag { (t(layout::L::BuiltIn)) } } }
            td { (model.api.as_str()) }
            td { (layout::breakable(&model.model_id)) @if let Some(url) = &model.base_url { br; small { (layout::breakable(url)) } } }
            td.num { (layout::thousands(u64::from(model.context_window))) }
            td { (price) }
            td class=(if credential_usable(&credential) { "ok" } else { "bad" }) { (credential_text(&credential)) }
            td.actions {
                button type="button" data-action="/api/models/test" data-body=(json!({"id": model.id}).to_string()) data-target="#test-result" { (t(S::Test)) }
                @if from_file {
                    button.danger type="button" data-action="/api/models/remove" data-body=(json!({"id": model.id, "version": version}).to_string()) data-reload data-confirm=(tf(S::RemoveConfirm, &[&model.id])) { (t(S::Remove)) }
                }
            }
        }
    }
}

/// The credential's state in the page's language (a key's source, `auth.json` or `env X`,
/// is shown as it is).
fn credential_text(status: &str) -> String {
    match status {
        "embedded" => t(S::EmbeddedCredential).to_string(),
        "missing" => t(S::Missing).to_string(),
        "not needed (local endpoint)" => t(S::NotNeeded).to_string(),
        other => other.to_string(),
    }
}

fn add_form(version: &str) -> Markup {
    html! {
        section {
            h2 { (t(S::AddTitle)) }
            form #add-model data-api="/api/models" data-reload {
                (layout::version_field(version))
                div.grid {
                    label { (t(S::IdLabel)) input name="id" data-check="model-id" required placeholder="openrouter/qwen3-coder"; }
                    label { (t(S::Provider)) input name="provider" required placeholder="openrouter"; }
                    label { (t(S::ModelAtProvider)) input name="modelId" required placeholder="qwen/qwen3-coder"; }
                    label { (t(S::DisplayName)) input name="name" placeholder=(t(S::TheId)); }
                    label { (t(S::Api)) select name="api" { @for api in APIS { option value=(api.as_str()) { (api.as_str()) } } } }
                    label { (t(S::BaseUrl)) input name="baseUrl" data-check="url" placeholder="https://api.example.com/v1"; }
                    label { (t(S::ContextWindow)) input name="contextWindow" data-type="integer" required value="128000"; }
                    label { (t(S::InputPrice)) input name="pricing.input" data-type="number" placeholder="3"; }
                    label { (t(S::OutputPrice)) input name="pricing.output" data-type="number" placeholder="15"; }
                    label.check { input type="checkbox" name="supportsTools" checked; " " (t(S::ToolCalls)) }
                    label.check { input type="checkbox" name="supportsVision"; " " (t(S::Images)) }
                }
                button type="submit" { (t(S::Add)) }
                (layout::status_line())
            }
        }
    }
}

fn discover_form() -> Markup {
    html! {
        section {
            h2 { (t(S::DiscoverTitle)) }
            form data-api="/api/models/discover" data-target="#discovered" {
                div.grid {
                    label { (t(S::BaseUrlShort)) input name="baseUrl" data-check="url" required placeholder="http://127.0.0.1:11434/v1"; }
                    label { (t(S::Api)) select name="api" { @for api in APIS { option value=(api.as_str()) { (api.as_str()) } } } }
                    label { (t(S::ProviderKey)) input name="provider" placeholder="ollama"; }
                }
                button type="submit" { (t(S::ListModels)) }
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
        let tokens = input::positive_integer(value, input::S::ContextWindow)
            .and_then(|n| u32::try_from(n).map_err(|_| tf(S::TooLarge, &[&n])))
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
                return Err(ApiError::at("pricing.output", t(S::OutputToo)));
            }
            (false, true) => return Err(ApiError::at("pricing.input", t(S::InputToo))),
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
            return Err(ApiError::at(field, tf(S::GiveField, &[&field])));
        }
    }
    if model.context_window == 0 {
        return Err(ApiError::at("contextWindow", t(S::ZeroWindow)));
    }
    if let Some(field) = model.pricing.and_then(|p| p.invalid_field()) {
        return Err(ApiError::at(format!("pricing.{field}"), t(S::PriceBad)));
    }
    if let Some(field) = model.call_settings().invalid_field() {
        return Err(ApiError::at(field, t(S::ZeroFails)));
    }
    Ok(model)
}

fn take_version(fields: &mut Map<String, Value>) -> Result<String, ApiError> {
    match fields.remove("version") {
        Some(Value::String(version)) => Ok(version),
        _ => Err(ApiError::invalid(t(crate::api::E::NoVersion))),
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
        return Err(ApiError::at("api", t(S::Embedded)));
    }
    let home = state.home.clone();
    let path = home.models_path();
    let id = model.id.clone();
    let new_version = store::write_if_unchanged(&state, &path, &version, move || {
        let doc = read_doc(&home)?;
        if doc.models.iter().any(|m| m.id == model.id) {
            return Err(ApiError::at(
                "id",
                tf(S::Duplicate, &[&format!("{:?}", model.id)]),
            ));
        }
        let entry = serde_json::to_value(&model)
            .map_err(|err| ApiError::Internal(format!("cannot write the entry: {err}")))?;
        let expected = doc.models.len() + 1;
        write_models(
            &home,
            doc,
            expected,
            |text| splice::append_element(text, "models", &entry),
            |doc| doc.models.push(model),
        )
    })
    .await?;
    Ok(api::ok(
        json!({"message": tf(S::Added, &[&id]), "version": new_version}),
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
            return Err(ApiError::NotFound(tf(
                S::NoModel,
                &[&format!("{removed:?}")],
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
        json!({"message": tf(S::Removed, &[&id]), "version": new_version}),
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
        .ok_or_else(|| ApiError::NotFound(tf(S::NotInCatalogue, &[&format!("{id:?}")])))?;
    let (ok, html) = match test_model(&state.home, model).await {
        ModelTest::Embedded(message) => (true, html! { p { (message) } }),
        ModelTest::Tested(result) => match &result.failure {
            None => (
                true,
                html! { p.ok { "✓ " code { (id) } " " (tf(S::AnsweredIn, &[&result.latency_ms])) " " q { (result.reply) } } },
            ),
            Some(failure) => (
                false,
                html! { p.bad { "✗ " code { (id) } ": " (failure.kind) " — " (failure.explanation) } p { (t(S::Hint)) " " (failure.kind.hint()) } },
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
        return Err(ApiError::at("baseUrl", t(S::GiveBaseUrl)));
    }
    if body.api == ModelApi::Local {
        return Err(ApiError::at("api", t(S::NoEndpoint)));
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
        p { (tf(S::Found, &[&found.len(), &body.base_url])) }
        ul.discovered {
            @for model in &found {
                li {
                    code { (model.id) } " (" (t(S::ContextAbout)) " " (layout::thousands(u64::from(model.context_window_guess))) ") "
                    button type="button" data-fill="#add-model" data-values=(suggested_entry(&provider, body.base_url.trim(), body.api, model).to_string()) { (t(S::Use)) }
                }
            }
        }
    };
    Ok(api::ok(
        json!({"count": found.len(), "html": html.into_string()}),
    ))
}
