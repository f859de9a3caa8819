//! The JSON side of the panel: every answer is `{ok: true, data}` or `{ok: false, error,
//! field?}`, with a status that says which kind of failure it is.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use braincode_config::ConfigError;
use serde::Serialize;
use serde_json::json;

use crate::i18n::{t, texts, tf};

texts! {
    pub(crate) enum E {
        NoVersion => "the request names no file version; reload the page", "请求没有给出文件版本；请重新加载页面";
        Changed => "{0} changed since this page read it (someone else saved it); reload the page to see the current file, then make your change again", "{0} 在此页面读取后已被修改（有人保存过）；请重新加载页面查看当前文件，然后再修改一次";
        BadBody => "the request is not what this form sends: {0}", "请求不是此表单发送的内容：{0}";
        FixFileFirst => "{0}; fix the file first, then reload", "{0}；请先修复该文件，然后重新加载";
    }
}

/// A failed request, said so that the page can show it at the right field.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// The input is wrong (400); `field` names the form field when known.
    #[error("{message}")]
    Invalid {
        message: String,
        field: Option<String>,
    },
    /// The file changed on disk since the page read it (409).
    #[error("{0}")]
    Conflict(String),
    /// No such thing (404).
    #[error("{0}")]
    NotFound(String),
    /// Anything else (500).
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            field: None,
        }
    }

    pub(crate) fn at(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// A loader's error: a broken rule becomes a field error (the field path with the
    /// document's own prefix, such as `models[3].`, taken off by `strip`).
    pub(crate) fn from_config(err: ConfigError, strip: impl Fn(&str) -> String) -> Self {
        match &err {
            ConfigError::Invalid { location, .. } | ConfigError::Field { location, .. } => {
                Self::Invalid {
                    message: err.to_string(),
                    field: location.field.as_deref().map(strip),
                }
            }
            ConfigError::Syntax { .. } => Self::invalid(err.to_string()),
            _ => Self::Internal(err.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, field) = match &self {
            ApiError::Invalid { field, .. } => (StatusCode::BAD_REQUEST, field.clone()),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, None),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, None),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, None),
        };
        let text = self.to_string();
        let message = braincode_protocol::secrets::redact_secrets(&text).into_owned();
        (
            status,
            Json(json!({"ok": false, "error": message, "field": field})),
        )
            .into_response()
    }
}

/// `{ok: true, data}`.
pub(crate) fn ok<T: Serialize>(data: T) -> Response {
    Json(json!({"ok": true, "data": data})).into_response()
}

/// A JSON body that failed to parse is a 400 that says why, not axum's plain-text 422.
pub(crate) fn body<T: serde::de::DeserializeOwned>(
    body: Result<Json<T>, axum::extract::rejection::JsonRejection>,
) -> Result<T, ApiError> {
    body.map(|Json(value)| value)
        .map_err(|rejection| ApiError::invalid(tf(E::BadBody, &[&rejection.body_text()])))
}

/// The `version` a save names (the file's version when its page was read).
pub(crate) fn need_version(version: Option<String>) -> Result<String, ApiError> {
    version
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::invalid(t(E::NoVersion)))
}
