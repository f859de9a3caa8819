//! The page shell: header, navigation and the embedded stylesheet and script.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::i18n::{Lang, t, texts};

texts! {
    pub(crate) enum L {
        NavSettings => "Settings", "设置";
        NavModels => "Models", "模型";
        NavBrains => "Brains", "大脑";
        NavRouting => "Routing", "路由";
        NavTools => "Tools", "工具";
        NavPermissions => "Permissions", "权限";
        NavMcp => "MCP & hooks", "MCP 与钩子";
        NavSessions => "Sessions", "会话";
        NavUsage => "Usage", "用量";
        NavAuth => "Subscriptions", "订阅登录";
        Language => "Language", "语言";
        NotFound => "Not found", "未找到";
        NothingLivesAt => "Nothing lives at", "此地址没有页面：";
        SignIn => "Sign-in needed", "需要登录";
        Refused => "Refused", "已拒绝";
        HostRefused => "This panel answers only to 127.0.0.1 and localhost on its own port (the Host header names another host).", "此面板只响应本端口上的 127.0.0.1 和 localhost（Host 头指向了其他主机）。";
        OriginRefused => "Requests from another site are refused (the Origin header is not this panel).", "来自其他网站的请求被拒绝（Origin 头不是此面板）。";
        OwnPagesOnly => "Changes must come from the panel's own pages.", "修改只能来自面板自己的页面。";
        WrongToken => "This token is not the one `braincode config` printed. Open the address it printed.", "此令牌不是 `braincode config` 打印的那个。请打开它打印的地址。";
        NoToken => "Open the address that `braincode config` printed: it carries this panel's token.", "请打开 `braincode config` 打印的地址：它带有此面板的令牌。";
        BuiltIn => "built-in", "内置";
        Default => "default", "默认";
        Yes => "yes", "是";
        No => "no", "否";
        Save => "Save", "保存";
        JsFixField => "Nothing was saved: fix the field marked in red.", "未保存：请修正标红的字段。";
        JsWorking => "Working…", "处理中…";
        JsNoAnswer => "The panel did not answer:", "面板没有响应：";
        JsNotNumber => "is not a number", "不是数字";
        JsNotPositive => "is not a positive whole number", "不是正整数";
        JsNotTokens => "is not a token count; write a whole number of tokens such as 50000, 50k or 1.5m, or leave it empty for no limit", "不是令牌数；请写整数，如 50000、50k 或 1.5m，留空表示不限";
        JsZeroTokens => "0 tokens would stop every run before it starts; write a whole number of tokens such as 50000, 50k or 1.5m, or leave it empty for no limit", "0 个令牌会让每次运行在开始前就停止；请写整数，如 50000、50k 或 1.5m，留空表示不限";
        JsNotDollars => "is not an amount; write US dollars such as 5 or 0.50, or leave it empty for no limit", "不是金额；请写美元金额，如 5 或 0.50，留空表示不限";
        JsIdComma => "an id cannot contain a comma (commas separate the models of a fallback chain)", "ID 不能包含逗号（逗号用于分隔回退链中的模型）";
        JsIdSpace => "an id is one word, with no spaces; write it like provider/model, e.g. openrouter/qwen3-coder", "ID 是一个词，不能有空格；写成 provider/model，例如 openrouter/qwen3-coder";
        JsNotUrl => "is not an http or https URL; write the endpoint's address, such as https://api.example.com/v1", "不是 http 或 https 地址；请写端点地址，例如 https://api.example.com/v1";
        JsFollowing => "running — following live", "运行中 — 实时跟踪";
        JsCompleted => "completed", "已完成";
    }
}

/// The messages the page's script shows, by the name it asks for them.
fn script_messages() -> String {
    let pairs = [
        ("fixField", L::JsFixField),
        ("working", L::JsWorking),
        ("noAnswer", L::JsNoAnswer),
        ("notNumber", L::JsNotNumber),
        ("notPositive", L::JsNotPositive),
        ("notTokens", L::JsNotTokens),
        ("zeroTokens", L::JsZeroTokens),
        ("notDollars", L::JsNotDollars),
        ("idComma", L::JsIdComma),
        ("idSpace", L::JsIdSpace),
        ("notUrl", L::JsNotUrl),
        ("following", L::JsFollowing),
        ("completed", L::JsCompleted),
    ];
    let map: serde_json::Map<String, serde_json::Value> = pairs
        .into_iter()
        .map(|(name, key)| (name.to_string(), t(key).into()))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// The sections of the panel, in navigation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    Settings,
    Models,
    Brains,
    Routing,
    Tools,
    Permissions,
    Mcp,
    Sessions,
    Usage,
    Auth,
}

impl Section {
    const ALL: [Section; 10] = [
        Section::Settings,
        Section::Models,
        Section::Brains,
        Section::Routing,
        Section::Tools,
        Section::Permissions,
        Section::Mcp,
        Section::Sessions,
        Section::Usage,
        Section::Auth,
    ];

    fn href(self) -> &'static str {
        match self {
            Section::Settings => "/settings",
            Section::Tools => "/tools",
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
        t(match self {
            Section::Settings => L::NavSettings,
            Section::Models => L::NavModels,
            Section::Brains => L::NavBrains,
            Section::Routing => L::NavRouting,
            Section::Tools => L::NavTools,
            Section::Permissions => L::NavPermissions,
            Section::Mcp => L::NavMcp,
            Section::Sessions => L::NavSessions,
            Section::Usage => L::NavUsage,
            Section::Auth => L::NavAuth,
        })
    }
}

/// A full page of the panel.
pub(crate) fn page(section: Section, title: &str, body: Markup) -> Html<String> {
    let lang = Lang::current();
    Html(
        html! {
            (DOCTYPE)
            html lang=(lang.code()) {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    title { (title) " · Braincode" }
                    link rel="stylesheet" href="/assets/app.css";
                    script src="/assets/app.js" defer {}
                }
                body data-messages=(script_messages()) {
                    header {
                        a.brand href="/" { "BRAIN/CODE" }
                        nav {
                            @for item in Section::ALL {
                                a href=(item.href()) class=[(item == section).then_some("active")] { (item.label()) }
                            }
                        }
                        (language_switch(lang))
                    }
                    main { h1 { (title) } (body) }
                }
            }
        }
        .into_string(),
    )
}

/// The header's EN/中文 switch: a link that works without the script (this page in that
/// language); the script also keeps the choice (cookie and localStorage) for every page.
fn language_switch(lang: Lang) -> Markup {
    html! {
        div.lang role="group" aria-label=(t(L::Language)) {
            @for (choice, label) in [(Lang::En, "EN"), (Lang::Zh, "中文")] {
                a href=(format!("?lang={}", choice.code())) data-lang=(choice.code())
                    class=[(choice == lang).then_some("active")] aria-current=[(choice == lang).then_some("true")] { (label) }
            }
        }
    }
}

/// A page with no navigation, for refusals (it must not need the stylesheet, which sits
/// behind the same guard).
pub(crate) fn bare_page(title: &str, message: &str) -> Html<String> {
    Html(
        html! {
            (DOCTYPE)
            html lang=(Lang::current().code()) {
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
        return crate::api::ApiError::NotFound(t(L::NotFound).into()).into_response();
    }
    (
        StatusCode::NOT_FOUND,
        page(
            Section::Models,
            t(L::NotFound),
            html! { p { (t(L::NothingLivesAt)) " " code { (uri.path()) } } },
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
