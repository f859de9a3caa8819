//! One module per section of the panel: its page (GET, server-rendered) and its JSON actions.

pub(crate) mod auth;
pub(crate) mod brains;
pub(crate) mod hooks;
pub(crate) mod mcp;
pub(crate) mod models;
pub(crate) mod permissions;
pub(crate) mod prompts;
pub(crate) mod routing;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod tools;
pub(crate) mod usage;

use axum::Router;
use axum::response::Redirect;
use axum::routing::get;

use crate::AppState;

pub(crate) use auth::LoginSessions;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/models") }))
        .merge(settings::routes())
        .merge(tools::routes())
        .merge(hooks::routes())
        .merge(prompts::routes())
        .route(
            "/api/health",
            get(|| async {
                crate::api::ok(serde_json::json!({"name": "braincode", "status": "ok"}))
            }),
        )
        .merge(models::routes())
        .merge(brains::routes())
        .merge(routing::routes())
        .merge(permissions::routes())
        .merge(mcp::routes())
        .merge(sessions::routes())
        .merge(usage::routes())
        .merge(auth::routes())
}

/// Takes a document's own prefix (`models[3].`, `brains[0].`) off a field path, leaving the
/// name the form uses.
pub(crate) fn strip_index_prefix(field: &str) -> String {
    match field.split_once("].") {
        Some((head, rest)) if head.contains('[') => rest.to_string(),
        _ => field.to_string(),
    }
}

/// The field a serde error names (`missing field `x``, `unknown field `x``), if any.
pub(crate) fn serde_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_lose_the_document_prefix() {
        assert_eq!(
            strip_index_prefix("models[3].contextWindow"),
            "contextWindow"
        );
        assert_eq!(
            strip_index_prefix("models[0].pricing.input"),
            "pricing.input"
        );
        assert_eq!(strip_index_prefix("version"), "version");
        assert_eq!(
            serde_field("missing field `modelId` at line 1").as_deref(),
            Some("modelId")
        );
        assert_eq!(serde_field("invalid type"), None);
    }
}
