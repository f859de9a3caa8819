//! The "Subscription login" page and the `/api/oauth/*` routes: start a GitHub Copilot or
//! ChatGPT (Codex) login, follow it, paste a code, cancel it; the auth status without
//! secrets. Every string the page shows is in [`TEXT`] (one table to translate).

mod sessions;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use braincode_config::{AuthStore, load_settings};
use braincode_protocol::OauthProvider;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::layout::{Section, page};

pub(crate) use sessions::LoginSessions;
use sessions::{SessionRefusal, Status};

const JS: &str = include_str!("../../../assets/auth.js");

/// Every user-visible string of the page and its script, by key: English, Chinese.
pub(crate) const TEXT: &[(&str, &str, &str)] = &[
    ("title", "Subscription login", "订阅登录"),
    (
        "intro",
        "Use a subscription instead of an API key. The tokens are saved in auth.json (mode 0600) and renewed automatically; an API key for the same provider wins.",
        "用订阅代替 API 密钥。令牌保存在 auth.json（权限 0600）中并自动续期；同一提供方的 API 密钥优先。",
    ),
    ("provider", "Provider", "提供方"),
    (
        "enterpriseDomain",
        "GitHub Enterprise domain (optional)",
        "GitHub Enterprise 域名（可选）",
    ),
    (
        "enterprisePlaceholder",
        "e.g. company.ghe.com",
        "例如 company.ghe.com",
    ),
    ("start", "Start login", "开始登录"),
    ("cancel", "Cancel", "取消"),
    ("manualCode", "Redirect URL or code", "跳转地址或授权码"),
    (
        "manualHint",
        "If the browser cannot reach this machine, paste the address it ended on (or the code) here.",
        "如果浏览器无法访问本机，请把它最后停留的地址（或授权码）粘贴到这里。",
    ),
    ("submitCode", "Submit code", "提交授权码"),
    (
        "anthropicNote",
        "Claude Pro/Max is not offered: Anthropic's terms do not allow its subscription in other clients. Use an API key (braincode auth set anthropic).",
        "不提供 Claude Pro/Max：Anthropic 的条款不允许在其他客户端中使用其订阅。请使用 API 密钥（braincode auth set anthropic）。",
    ),
    (
        "statusHeading",
        "Auth status (no secrets)",
        "认证状态（不含密钥）",
    ),
    ("status.starting", "Starting…", "正在开始…"),
    (
        "status.pending",
        "Waiting for you to authorize",
        "等待你授权",
    ),
    (
        "status.completed",
        "Logged in: the tokens are saved.",
        "已登录：令牌已保存。",
    ),
    ("status.failed", "The login failed", "登录失败"),
    (
        "status.cancelled",
        "The login was cancelled; nothing was saved.",
        "登录已取消；未保存任何内容。",
    ),
    (
        "openUrl",
        "Open this address and authorize:",
        "打开此地址并授权：",
    ),
    (
        "enterCode",
        "Open the address and enter the code",
        "打开该地址并输入代码",
    ),
    ("noAnswer", "The panel did not answer", "面板没有响应"),
];

/// The text of `key` in the request's language (`?` when missing, which a test rules out).
fn text(key: &str) -> &'static str {
    let zh = crate::i18n::Lang::current() == crate::i18n::Lang::Zh;
    TEXT.iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, en, chinese)| if zh { *chinese } else { *en })
        .unwrap_or("?")
}

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/auth", get(auth_page))
        .route(
            "/assets/auth.js",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                        (header::CACHE_CONTROL, "private, max-age=300"),
                    ],
                    JS,
                )
                    .into_response()
            }),
        )
        .route("/api/oauth/providers", get(providers))
        .route("/api/oauth/login", post(start_login))
        .route("/api/oauth/login/{id}", get(poll_login))
        .route("/api/oauth/login/{id}/manual-code", post(manual_code))
        .route("/api/oauth/login/{id}/cancel", post(cancel_login))
}

async fn providers() -> Response {
    let list: Vec<_> = OauthProvider::ALL
        .iter()
        .map(|p| json!({"id": p.id(), "name": p.display_name(), "usesCallbackServer": p.uses_callback_server()}))
        .collect();
    api::ok(json!({ "providers": list }))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartBody {
    // `provider` (the models.json provider) may come too: the login's id decides.
    oauth_provider_id: String,
    #[serde(default)]
    enterprise_domain: Option<String>,
}

async fn start_login(
    State(app): State<AppState>,
    body: Result<Json<StartBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let Some(provider) = OauthProvider::from_id(&body.oauth_provider_id) else {
        let offered: Vec<&str> = OauthProvider::ALL.iter().map(|p| p.id()).collect();
        return Err(ApiError::at(
            "oauthProviderId",
            format!(
                "{:?} has no subscription login here (logins: {}); Anthropic is not offered, use an API key",
                body.oauth_provider_id,
                offered.join(", ")
            ),
        ));
    };
    let domain = body.enterprise_domain.unwrap_or_default();
    if !domain.trim().is_empty() && provider != OauthProvider::GithubCopilot {
        return Err(ApiError::at(
            "enterpriseDomain",
            "a GitHub Enterprise domain is for github-copilot only",
        ));
    }
    let settings =
        load_settings(&app.home).map_err(|e| ApiError::from_config(e, str::to_string))?;
    let state = sessions::start(&app, provider, domain, settings.auth.oauth).await;
    Ok(api::ok(state))
}

fn refusal(err: SessionRefusal) -> ApiError {
    match err {
        SessionRefusal::Unknown => {
            ApiError::NotFound("no such login session (finished more than 30 minutes ago?)".into())
        }
        SessionRefusal::Finished => ApiError::invalid("this login has already finished"),
        SessionRefusal::NoManualCode => ApiError::invalid(
            "this login uses a device code: enter the code on the provider's page instead",
        ),
    }
}

async fn poll_login(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    app.oauth_logins
        .get(&id)
        .map(api::ok)
        .ok_or_else(|| refusal(SessionRefusal::Unknown))
}

#[derive(Deserialize)]
struct CodeBody {
    code: String,
}

async fn manual_code(
    State(app): State<AppState>,
    Path(id): Path<String>,
    body: Result<Json<CodeBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    if body.code.trim().is_empty() {
        return Err(ApiError::at("code", "paste the redirect URL or the code"));
    }
    app.oauth_logins.paste(&id, body.code).map_err(refusal)?;
    let state = sessions::wait_while(&app, &id, |s| s == Status::Pending).await;
    Ok(api::ok(state))
}

async fn cancel_login(
    State(app): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if !app.oauth_logins.cancel(&id) {
        return Err(refusal(SessionRefusal::Unknown));
    }
    let state = sessions::wait_while(&app, &id, |s| {
        matches!(s, Status::Starting | Status::Pending)
    })
    .await;
    Ok(api::ok(state))
}

async fn auth_page(State(app): State<AppState>) -> Response {
    let status = match AuthStore::new(&app.home).status() {
        Ok(status) => serde_json::to_string_pretty(&status).unwrap_or_default(),
        Err(err) => err.to_string(),
    };
    let texts: serde_json::Map<String, serde_json::Value> = TEXT
        .iter()
        .map(|(k, _, _)| ((*k).to_string(), json!(text(k))))
        .collect();
    page(
        Section::Auth,
        text("title"),
        body(&status, &serde_json::Value::Object(texts).to_string()),
    )
    .into_response()
}

fn body(status: &str, texts: &str) -> Markup {
    html! {
        script src="/assets/auth.js" defer {}
        section #subscription-login data-texts=(texts) {
            p { (text("intro")) }
            form #oauth-start {
                label { (text("provider")) " "
                    select name="oauthProviderId" {
                        @for provider in OauthProvider::ALL {
                            option value=(provider.id()) { (provider.display_name()) }
                        }
                    }
                }
                label #oauth-enterprise { (text("enterpriseDomain")) " "
                    input name="enterpriseDomain" placeholder=(text("enterprisePlaceholder"));
                }
                button type="submit" { (text("start")) }
                " "
                button #oauth-cancel type="button" hidden { (text("cancel")) }
            }
            div #oauth-state aria-live="polite" {}
            form #oauth-manual hidden {
                label { (text("manualCode")) " " input name="code"; }
                button type="submit" { (text("submitCode")) }
                p.hint { (text("manualHint")) }
            }
            p.hint { (text("anthropicNote")) }
            h2 { (text("statusHeading")) }
            pre #oauth-auth-status { (status) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_the_page_and_script_use_has_a_text() {
        // Calls of the script's `t("key")` (not `createElement("a")`).
        let keys = JS.match_indices("t(\"").filter_map(|(at, _)| {
            let before = JS[..at].chars().last()?;
            if before.is_alphanumeric() {
                return None;
            }
            JS[at + 3..].split('"').next()
        });
        // `t("status." + …)`: the statuses are checked below.
        for key in keys.filter(|key| !key.ends_with('.')) {
            assert!(TEXT.iter().any(|(k, _, _)| *k == key), "no text for {key}");
        }
        for status in ["starting", "pending", "completed", "failed", "cancelled"] {
            let key = format!("status.{status}");
            assert!(TEXT.iter().any(|(k, _, _)| *k == key), "no text for {key}");
        }
        let mut keys: Vec<_> = TEXT.iter().map(|(k, _, _)| k).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), TEXT.len(), "a key is listed twice");
    }
}
