//! The page shell: header, navigation and the embedded stylesheet and script.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

/// The sections of the panel, in navigation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Models,
    Brains,
    Routing,
    Permissions,
    Mcp,
    Sessions,
    Usage,
    Auth,
}

impl Section {
    const ALL: [Section; 8] = [
        Section::Models,
        Section::Brains,
        Section::Routing,
        Section::Permissions,
        Section::Mcp,
        Section::Sessions,
        Section::Usage,
        Section::Auth,
    ];

    fn href(self) -> &'static str {
        match self {
            Section::Models => "/models",
            Section::Brains => "/brains",
            Section::Routing => "/routing",
            Section::Permissions => "/permissions",
            Section::Mcp => "/mcp",
            Section::Sessions => "/sessions",
            Section::Usage => "/usage",
            Section::Auth => "/auth",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Section::Models => "Models",
            Section::Brains => "Brains",
            Section::Routing => "Routing",
            Section::Permissions => "Tools & permissions",
            Section::Mcp => "MCP & hooks",
            Section::Sessions => "Sessions",
            Section::Usage => "Usage",
            Section::Auth => "Subscriptions",
        }
    }
}

/// A full page of the panel.
pub(crate) fn page(section: Section, title: &str, body: Markup) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · Braincode" }
                    link rel="stylesheet" href="/assets/app.css";
                    script src="/assets/app.js" defer {}
                }
                body {
                    header {
                        a.brand href="/" { "BRAIN/CODE" }
                        nav {
                            @for item in Section::ALL {
                                a href=(item.href()) class=[(item == section).then_some("active")] { (item.label()) }
                            }
                        }
                    }
                    main { h1 { (title) } (body) }
                }
            }
        }
        .into_string(),
    )
}

/// A page with no navigation, for refusals (it must not need the stylesheet, which sits
/// behind the same guard).
pub(crate) fn bare_page(title: &str, message: &str) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang="en" {
                head { meta charset="utf-8"; title { (title) " · Braincode" } }
                body { h1 { (title) } p { (message) } }
            }
        }
        .into_string(),
    )
}

/// Unknown paths: a page for browsers, the JSON error shape under `/api/`.
pub(crate) async fn not_found(uri: axum::http::Uri) -> Response {
    if uri.path().starts_with("/api/") {
        return crate::api::ApiError::NotFound("Not found".into()).into_response();
    }
    (
        StatusCode::NOT_FOUND,
        page(
            Section::Models,
            "Not found",
            html! { p { "Nothing lives at " code { (uri.path()) } "." } },
        ),
    )
        .into_response()
}

/// A hidden field carrying the version of the file a form edits.
pub(crate) fn version_field(version: &str) -> Markup {
    html! { input type="hidden" name="version" value=(version); }
}

/// The line where a form says how its request went.
pub(crate) fn status_line() -> Markup {
    html! { p.status data-status role="status" {} }
}

/// An error box for a file that cannot be read.
pub(crate) fn problem(message: &str) -> Markup {
    html! { div.problem role="alert" { (message) } }
}

/// A number with thousands separators.
pub(crate) fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A path or URL that may wrap after each `/` (and, as a last resort, anywhere: `.path`),
/// so that a narrow column breaks it between its parts rather than inside a word.
pub(crate) fn breakable(text: &str) -> Markup {
    let mut parts = text.split_inclusive('/').peekable();
    html! {
        span.path {
            @while let Some(part) = parts.next() {
                (part) @if parts.peek().is_some() { wbr; }
            }
        }
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The serde name of a value (`backend`, `support`, `confirm-dangerous`).
pub(crate) fn serde_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
