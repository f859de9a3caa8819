//! Tools: a card per built-in tool with its switch and approval policy (tools.json, edited
//! in its text), and the Tavily web-search quick setup (the `braincode mcp add tavily`
//! engine: the key goes to auth.json and is never shown again).

use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_config::{Added, AuthStore, OnExisting, Scope, TAVILY, TavilyKey};
use braincode_tools::{ApprovalPolicy, BUILTIN_TOOLS, ToolEntry, ToolsConfig};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout::{self, Section};
use crate::{AppState, splice, store};
use braincode_config::json_edit::{self as splice_path, Step};

texts! {
    pub(crate) enum S {
        Title => "Tools", "工具";
        Lede => "The built-in tools agents may call, from {0}. A switched-off tool is not offered to agents; \"ask when dangerous\" asks before a call that looks risky.", "智能体可调用的内置工具，来自 {0}。关闭的工具不会提供给智能体；“危险时询问”会在看起来有风险的调用前询问。";
        Enabled => "Enabled", "启用";
        Approval => "Approval", "审批";
        Allow => "allow (never asks)", "允许（从不询问）";
        ConfirmDangerous => "ask when dangerous", "危险时询问";
        Permission => "Permission", "权限";
        Risk => "Risk", "风险";
        Saved => "saved {0}", "已保存 {0}";
        UnknownTool => "there is no built-in tool {0}", "没有名为 {0} 的内置工具";
        PolicyBad => "{0} is not an approval policy; use allow or confirm-dangerous", "{0} 不是审批策略；请使用 allow 或 confirm-dangerous";
        EnabledBad => "{0} is not on or off (true or false)", "{0} 不是开或关（true 或 false）";
        Tavily => "Web search (Tavily)", "网络搜索（Tavily）";
        TavilyLede => "Adds the Tavily MCP server to your mcp.json; its key is kept in auth.json (mode 0600) and mcp.json only refers to it. Get a key at https://app.tavily.com.", "将 Tavily MCP 服务器加入你的 mcp.json；密钥保存在 auth.json（权限 0600），mcp.json 只引用它。在 https://app.tavily.com 获取密钥。";
        TavilyKeyLabel => "Tavily API key", "Tavily API 密钥";
        TavilyKeyStored => "a key is saved", "已保存密钥";
        TavilyKeyMissing => "no key saved", "未保存密钥";
        TavilyServerThere => "the server is in mcp.json", "服务器已在 mcp.json 中";
        TavilyServerMissing => "the server is not in mcp.json", "服务器不在 mcp.json 中";
        Replace => "Replace an existing tavily server", "替换已有的 tavily 服务器";
        SetUp => "Set up", "设置";
        TavilyAdded => "added the tavily server; its key is saved in auth.json", "已添加 tavily 服务器；密钥已保存在 auth.json";
        TavilyReplaced => "replaced the tavily server; its key is saved in auth.json", "已替换 tavily 服务器；密钥已保存在 auth.json";
        KeyEmpty => "write the Tavily API key (from https://app.tavily.com)", "请填写 Tavily API 密钥（来自 https://app.tavily.com）";
        ServerExists => "mcp.json already has a server named tavily; tick \"Replace\" to replace it", "mcp.json 已有名为 tavily 的服务器；勾选“替换”以替换它";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/tools", get(page))
        .route("/api/tools/tavily", post(tavily))
        .route("/api/tools/{name}", post(save))
}

/// Whether the user's mcp.json has a server named tavily.
fn has_tavily_server(home: &braincode_config::Home) -> bool {
    braincode_config::read_mcp_file(&home.mcp_path(), Scope::User)
        .0
        .iter()
        .any(|server| server.name == TAVILY)
}

fn policy_name(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Allow => "allow",
        ApprovalPolicy::ConfirmDangerous => "confirm-dangerous",
    }
}

async fn page(State(state): State<AppState>) -> Html<String> {
    let path = state.home.tools_path();
    let version = store::version_of(&path).unwrap_or_default();
    let cards = match braincode_runtime::read_tools_file(&state.home) {
        Err(err) => layout::problem(&err.to_string()),
        Ok(file) => {
            let tools = file.unwrap_or_default();
            html! {
                div.cards #tool-cards {
                    @for spec in BUILTIN_TOOLS {
                        @let entry = tools.tools.iter().find(|e| e.name == spec.name).cloned().unwrap_or_else(|| ToolEntry::builtin_default(spec.name));
                        (card(&entry, &version))
                    }
                }
            }
        }
    };
    let store = AuthStore::new(&state.home);
    let has_key = store.api_key(TAVILY).ok().flatten().is_some();
    let has_server = has_tavily_server(&state.home);
    let body = html! {
        p.lede { (tf(S::Lede, &[&path.display()])) }
        (cards)
        section #tavily {
            h2 { (t(S::Tavily)) }
            p.hint { (t(S::TavilyLede)) }
            p #tavily-state {
                span class=(if has_server { "ok" } else { "muted" }) { (t(if has_server { S::TavilyServerThere } else { S::TavilyServerMissing })) }
                " · "
                span class=(if has_key { "ok" } else { "muted" }) { (t(if has_key { S::TavilyKeyStored } else { S::TavilyKeyMissing })) }
            }
            form #tavily-form data-api="/api/tools/tavily" data-reload {
                div.grid {
                    label { (t(S::TavilyKeyLabel)) input name="key" type="password" autocomplete="off" required; }
                    label.check { input type="checkbox" name="replace" checked[has_server]; " " (t(S::Replace)) }
                }
                button type="submit" { (t(S::SetUp)) }
                (layout::status_line())
            }
        }
    };
    layout::page(Section::Tools, t(S::Title), body)
}

fn card(entry: &ToolEntry, version: &str) -> Markup {
    html! {
        form.card data-tool=(entry.name) data-api=(format!("/api/tools/{}", entry.name)) data-live data-reload {
            h3 { code { (entry.name) } }
            p.muted { (t(S::Permission)) ": " (layout::serde_name(&entry.permissions)) " · " (t(S::Risk)) ": " (layout::serde_name(&entry.risk)) }
            (layout::version_field(version))
            label.check { input type="checkbox" name="enabled" checked[entry.enabled]; " " (t(S::Enabled)) }
            label { (t(S::Approval)) select name="approvalPolicy" {
                option value="allow" selected[entry.approval_policy == ApprovalPolicy::Allow] { (t(S::Allow)) }
                option value="confirm-dangerous" selected[entry.approval_policy == ApprovalPolicy::ConfirmDangerous] { (t(S::ConfirmDangerous)) }
            } }
            (layout::status_line())
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SaveBody {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    enabled: Option<Value>,
    #[serde(default)]
    approval_policy: Option<Value>,
}

/// What to write for a tool: its switch and policy, each checked at its field.
fn read_body(body: &SaveBody) -> Result<(Option<bool>, Option<ApprovalPolicy>), ApiError> {
    let enabled = match &body.enabled {
        None => None,
        Some(Value::Bool(on)) => Some(*on),
        Some(other) => return Err(ApiError::at("enabled", tf(S::EnabledBad, &[other]))),
    };
    let policy = match &body.approval_policy {
        None => None,
        Some(value) => Some(match value.as_str().map(str::trim) {
            Some("allow") => ApprovalPolicy::Allow,
            Some("confirm-dangerous") => ApprovalPolicy::ConfirmDangerous,
            _ => return Err(ApiError::at("approvalPolicy", tf(S::PolicyBad, &[value]))),
        }),
    };
    Ok((enabled, policy))
}

/// `text` (tools.json) with the tool's values set: in its entry when the file has one, else
/// in a new entry that names only what differs from the defaults.
fn edit_text(
    text: &str,
    name: &str,
    enabled: Option<bool>,
    policy: Option<ApprovalPolicy>,
) -> Option<String> {
    let value: Value = serde_json::from_str(text).ok()?;
    let index = value
        .get("tools")
        .and_then(Value::as_array)
        .and_then(|tools| tools.iter().position(|t| t["name"].as_str() == Some(name)));
    let mut fields: Vec<(&str, Value)> = Vec::new();
    if let Some(on) = enabled {
        fields.push(("enabled", on.into()));
    }
    if let Some(policy) = policy {
        fields.push(("approvalPolicy", policy_name(policy).into()));
    }
    match index {
        Some(index) => {
            let mut text = text.to_string();
            for (key, value) in fields {
                text = splice_path::set(
                    &text,
                    &[Step::Key("tools"), Step::Index(index), Step::Key(key)],
                    &value,
                )?;
            }
            Some(text)
        }
        None => {
            let defaults = ToolEntry::builtin_default(name);
            let mut entry = serde_json::Map::new();
            entry.insert("name".into(), name.into());
            for (key, value) in fields {
                let default: Value = match key {
                    "enabled" => defaults.enabled.into(),
                    _ => policy_name(defaults.approval_policy).into(),
                };
                if value != default {
                    entry.insert(key.into(), value);
                }
            }
            let entry = Value::Object(entry);
            match value.get("tools") {
                Some(_) => splice::append_element(text, "tools", &entry),
                None => splice_path::set(text, &[Step::Key("tools")], &json!([entry])),
            }
        }
    }
}

async fn save(
    State(state): State<AppState>,
    Path(name): Path<String>,
    body: Result<axum::Json<SaveBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    if !BUILTIN_TOOLS.iter().any(|spec| spec.name == name) {
        return Err(ApiError::NotFound(tf(
            S::UnknownTool,
            &[&format!("{name:?}")],
        )));
    }
    let version = api::need_version(body.version.clone())?;
    let (enabled, policy) = read_body(&body)?;
    let home = state.home.clone();
    let path = home.tools_path();
    let new_version = store::write_if_unchanged(&state, &path, &version, || {
        store::edit_in_place(
            &path,
            "{\n  \"tools\": []\n}\n",
            0o644,
            |text| edit_text(text, &name, enabled, policy),
            || {
                let loaded: ToolsConfig = braincode_runtime::read_tools_file(&home)
                    .map_err(|err| ApiError::invalid(err.to_string()))?
                    .unwrap_or_default();
                let entry = loaded.tools.iter().find(|e| e.name == name);
                let ok = entry.is_some_and(|e| {
                    enabled.is_none_or(|on| e.enabled == on)
                        && policy.is_none_or(|p| e.approval_policy == p)
                });
                if ok {
                    Ok(())
                } else {
                    Err(ApiError::Internal(format!(
                        "the edited {} did not load back with the change; the file was put back as it was",
                        home.tools_path().display()
                    )))
                }
            },
        )
    })
    .await?;
    Ok(api::ok(
        json!({"message": tf(S::Saved, &[&name]), "version": new_version}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TavilyBody {
    #[serde(default)]
    key: String,
    #[serde(default)]
    replace: bool,
}

async fn tavily(
    State(state): State<AppState>,
    body: Result<axum::Json<TavilyBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let key = body.key.trim().to_string();
    if key.is_empty() {
        return Err(ApiError::at("key", t(S::KeyEmpty)));
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ApiError::at("key", t(S::KeyEmpty)));
    }
    let on_existing = if body.replace {
        OnExisting::Replace
    } else {
        OnExisting::Refuse
    };
    let home = state.home.clone();
    let _held = state.write_lock.lock().await;
    if on_existing == OnExisting::Refuse && has_tavily_server(&home) {
        return Err(ApiError::at("replace", t(S::ServerExists)));
    }
    let added = braincode_config::setup_tavily(&home, TavilyKey::Given(&key), on_existing)
        .map_err(|err| ApiError::invalid(err.to_string()))?;
    let message = match added {
        Added::New => t(S::TavilyAdded),
        Added::Replaced => t(S::TavilyReplaced),
    };
    Ok(api::ok(json!({"message": message})))
}
