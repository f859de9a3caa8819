//! Settings: the user settings of settings.json worth changing by hand (the panel's address,
//! the mode, the default brain, feature switches, sandbox network, `@path` reach, context
//! compaction). Each value is checked at its field; a save rewrites only the values that
//! changed, in the file's text, and the result must load back.

use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_config::{HandoffSummarizer, Settings};
use braincode_protocol::Mode;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout::{self, L, Section};
use crate::{AppState, store};
use braincode_config::json_edit::{self as splice_path, Step};

texts! {
    pub(crate) enum S {
        Title => "Settings", "设置";
        Lede => "Values of {0}. Only what you change is rewritten; the rest of the file keeps its bytes.", "{0} 中的值。只改写你修改的部分；文件其余内容保持原样。";
        Server => "Control panel address", "控制面板地址";
        Host => "Host (this machine only)", "主机（仅限本机）";
        Port => "Port (1–65535)", "端口（1–65535）";
        NextStart => "Host and port apply on the next start of `braincode config`.", "主机和端口在下次启动 `braincode config` 时生效。";
        Runs => "Runs", "运行";
        ModeLabel => "Mode", "模式";
        ModeHint => "auto: focused plans, risky actions need approval. radical: expansive plans, tool calls approved (deny rules still apply).", "auto：聚焦的计划，有风险的操作需要批准。radical：大胆的计划，工具调用自动批准（拒绝规则仍然有效）。";
        Brain => "Default brain", "默认大脑";
        Hooks => "Run hooks from hooks.json", "运行 hooks.json 中的钩子";
        Dispatch => "Let the primary agent dispatch specialists", "允许主代理派遣专家";
        Network => "Let commands reach the network (sandbox)", "允许命令访问网络（沙箱）";
        Outside => "Let @path read files outside the project", "允许 @path 读取项目之外的文件";
        Context => "Context", "上下文";
        Compact => "Compact at (percent of the window, 30–95)", "压缩阈值（窗口百分比，30–95）";
        Summarizer => "Handoff summary written by", "交接摘要的撰写方";
        Heuristic => "heuristic (no model call)", "启发式（不调用模型）";
        ModelRole => "model (the brain's summarize role)", "模型（大脑的 summarize 角色）";
        Saved => "saved {0} change(s) to settings.json", "已将 {0} 项修改保存到 settings.json";
        NothingChanged => "nothing changed", "没有修改";
        HostBad => "{0} is not this machine: the panel listens on 127.0.0.1, localhost or ::1 only (a public address would let any host on the network change your settings)", "{0} 不是本机：面板只监听 127.0.0.1、localhost 或 ::1（公开地址会让网络上的任何主机修改你的设置）";
        PortBad => "{0} is not a port; use a whole number from 1 to 65535 (default 14580)", "{0} 不是端口；请使用 1 到 65535 之间的整数（默认 14580）";
        PercentBad => "{0} is not a percentage from 30 to 95 (default 80)", "{0} 不是 30 到 95 之间的百分比（默认 80）";
        ChoiceBad => "{0} is not one of: {1}", "{0} 不是以下之一：{1}";
        BoolBad => "{0} is not on or off (true or false)", "{0} 不是开或关（true 或 false）";
        BrainBad => "there is no brain {0}; pick one of: {1}", "没有名为 {0} 的大脑；请从以下选择：{1}";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/settings", get(page))
        .route("/api/settings", post(save))
}

fn brain_ids(state: &AppState) -> Vec<String> {
    braincode_config::load_brains(&state.home)
        .map(|presets| {
            // A user's brain of a built-in's id overrides it: one entry per id.
            let mut seen = std::collections::HashSet::new();
            presets
                .into_iter()
                .map(|p| p.id)
                .filter(|id| seen.insert(id.clone()))
                .collect()
        })
        .unwrap_or_default()
}

async fn page(State(state): State<AppState>) -> Html<String> {
    let path = state.home.settings_path();
    let version = store::version_of(&path).unwrap_or_default();
    let body = match braincode_config::load_settings(&state.home) {
        Err(err) => layout::problem(&err.to_string()),
        Ok(settings) => form(
            &settings,
            &brain_ids(&state),
            &version,
            &path.display().to_string(),
        ),
    };
    layout::page(Section::Settings, t(S::Title), body)
}

fn form(settings: &Settings, brains: &[String], version: &str, path: &str) -> Markup {
    let check = |name: &str, label: S, on: bool| {
        html! { label.check { input type="checkbox" name=(name) checked[on]; " " (t(label)) } }
    };
    html! {
        p.lede { (tf(S::Lede, &[&path])) }
        form #settings-form data-api="/api/settings" data-reload {
            (layout::version_field(version))
            fieldset {
                legend { (t(S::Server)) }
                div.grid {
                    label { (t(S::Host)) input name="configServer.host" required value=(settings.config_server.host); }
                    label { (t(S::Port)) input name="configServer.port" data-type="integer" inputmode="numeric" required value=(settings.config_server.port); }
                }
                p.hint #next-start { (t(S::NextStart)) }
            }
            fieldset {
                legend { (t(S::Runs)) }
                div.grid {
                    label { (t(S::ModeLabel)) select name="mode" {
                        option value="auto" selected[settings.mode == Mode::Auto] { "auto" }
                        option value="radical" selected[settings.mode == Mode::Radical] { "radical" }
                    } }
                    label { (t(S::Brain)) select name="defaultBrainId" {
                        @if !brains.contains(&settings.default_brain_id) { option value=(settings.default_brain_id) selected { (settings.default_brain_id) } }
                        @for id in brains { option value=(id) selected[*id == settings.default_brain_id] { (id) } }
                    } }
                }
                p.hint { (t(S::ModeHint)) }
                div.checks {
                    (check("features.hooks", S::Hooks, settings.features.hooks))
                    (check("features.dynamicDispatch", S::Dispatch, settings.features.dynamic_dispatch))
                    (check("sandbox.allowNetwork", S::Network, settings.sandbox.allow_network))
                    (check("references.allowOutsideProject", S::Outside, settings.references.allow_outside_project))
                }
            }
            fieldset {
                legend { (t(S::Context)) }
                div.grid {
                    label { (t(S::Compact)) input name="context.compactAtPercent" data-type="integer" inputmode="numeric" value=(settings.context.compact_at_percent); }
                    label { (t(S::Summarizer)) select name="context.handoffSummarizer" {
                        option value="heuristic" selected[settings.context.handoff_summarizer == HandoffSummarizer::Heuristic] { (t(S::Heuristic)) }
                        option value="model" selected[settings.context.handoff_summarizer == HandoffSummarizer::Model] { (t(S::ModelRole)) }
                    } }
                }
            }
            button type="submit" { (t(L::Save)) }
            (layout::status_line())
        }
    }
}

/// The form as sent: every field optional (a script may send only some), each read and
/// checked by [`edits`].
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SaveBody {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    config_server: Group,
    #[serde(default)]
    mode: Option<Value>,
    #[serde(default)]
    default_brain_id: Option<Value>,
    #[serde(default)]
    features: Group,
    #[serde(default)]
    sandbox: Group,
    #[serde(default)]
    references: Group,
    #[serde(default)]
    context: Group,
}

type Group = serde_json::Map<String, Value>;

/// One value to write: its path in settings.json and its JSON.
struct Edit {
    path: Vec<&'static str>,
    value: Value,
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.trim().to_string(),
        other => other.to_string(),
    }
}

fn host(value: &Value) -> Result<String, ApiError> {
    let text = text_of(value);
    let loopback = matches!(text.as_str(), "localhost" | "127.0.0.1" | "::1")
        || text
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if loopback {
        Ok(text)
    } else {
        Err(ApiError::at(
            "configServer.host",
            tf(S::HostBad, &[&format!("{text:?}")]),
        ))
    }
}

fn whole(
    value: &Value,
    field: &str,
    range: std::ops::RangeInclusive<u64>,
    bad: S,
) -> Result<u64, ApiError> {
    let number = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.trim().parse::<u64>().ok(),
        _ => None,
    };
    number
        .filter(|n| range.contains(n))
        .ok_or_else(|| ApiError::at(field, tf(bad, &[&text_of(value)])))
}

fn switch(value: &Value, field: &str) -> Result<bool, ApiError> {
    match value {
        Value::Bool(on) => Ok(*on),
        Value::String(text) if text == "true" || text == "on" => Ok(true),
        Value::String(text) if text == "false" || text == "off" || text.is_empty() => Ok(false),
        other => Err(ApiError::at(field, tf(S::BoolBad, &[other]))),
    }
}

fn choice(value: &Value, field: &str, choices: &[&str]) -> Result<String, ApiError> {
    let text = text_of(value);
    if choices.contains(&text.as_str()) {
        Ok(text)
    } else {
        Err(ApiError::at(
            field,
            tf(S::ChoiceBad, &[&format!("{text:?}"), &choices.join(", ")]),
        ))
    }
}

/// What the form changes, every field checked first: one bad field refuses the whole save.
fn edits(current: &Settings, body: &SaveBody, brains: &[String]) -> Result<Vec<Edit>, ApiError> {
    let mut out = Vec::new();
    let mut push = |path: Vec<&'static str>, value: Value, now: Value| {
        if value != now {
            out.push(Edit { path, value });
        }
    };
    if let Some(value) = body.config_server.get("host") {
        push(
            vec!["configServer", "host"],
            host(value)?.into(),
            current.config_server.host.clone().into(),
        );
    }
    if let Some(value) = body.config_server.get("port") {
        let port = whole(value, "configServer.port", 1..=65_535, S::PortBad)?;
        push(
            vec!["configServer", "port"],
            port.into(),
            current.config_server.port.into(),
        );
    }
    if let Some(value) = &body.mode {
        let mode = choice(value, "mode", &["auto", "radical"])?;
        push(
            vec!["mode"],
            mode.into(),
            layout::serde_name(&current.mode).into(),
        );
    }
    if let Some(value) = &body.default_brain_id {
        let id = text_of(value);
        if !brains.contains(&id) {
            return Err(ApiError::at(
                "defaultBrainId",
                tf(S::BrainBad, &[&format!("{id:?}"), &brains.join(", ")]),
            ));
        }
        let now = if current.default_brain_explicit {
            current.default_brain_id.clone().into()
        } else {
            Value::Null
        };
        push(vec!["defaultBrainId"], id.into(), now);
    }
    let switches: [(&Group, &'static str, &'static str, bool); 4] = [
        (&body.features, "features", "hooks", current.features.hooks),
        (
            &body.features,
            "features",
            "dynamicDispatch",
            current.features.dynamic_dispatch,
        ),
        (
            &body.sandbox,
            "sandbox",
            "allowNetwork",
            current.sandbox.allow_network,
        ),
        (
            &body.references,
            "references",
            "allowOutsideProject",
            current.references.allow_outside_project,
        ),
    ];
    for (group, parent, key, now) in switches {
        if let Some(value) = group.get(key) {
            let on = switch(value, &format!("{parent}.{key}"))?;
            push(vec![parent, key], on.into(), now.into());
        }
    }
    if let Some(value) = body.context.get("compactAtPercent") {
        let percent = whole(value, "context.compactAtPercent", 30..=95, S::PercentBad)?;
        push(
            vec!["context", "compactAtPercent"],
            percent.into(),
            current.context.compact_at_percent.into(),
        );
    }
    if let Some(value) = body.context.get("handoffSummarizer") {
        let who = choice(value, "context.handoffSummarizer", &["heuristic", "model"])?;
        push(
            vec!["context", "handoffSummarizer"],
            who.into(),
            layout::serde_name(&current.context.handoff_summarizer).into(),
        );
    }
    for (group, name) in [
        (&body.config_server, "configServer"),
        (&body.features, "features"),
        (&body.sandbox, "sandbox"),
        (&body.references, "references"),
        (&body.context, "context"),
    ] {
        let known: &[&str] = match name {
            "configServer" => &["host", "port"],
            "features" => &["hooks", "dynamicDispatch"],
            "sandbox" => &["allowNetwork"],
            "references" => &["allowOutsideProject"],
            _ => &["compactAtPercent", "handoffSummarizer"],
        };
        if let Some(unknown) = group.keys().find(|key| !known.contains(&key.as_str())) {
            let field = format!("{name}.{unknown}");
            return Err(ApiError::at(
                field.clone(),
                tf(S::ChoiceBad, &[&field, &known.join(", ")]),
            ));
        }
    }
    Ok(out)
}

async fn save(
    State(state): State<AppState>,
    body: Result<axum::Json<SaveBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let version = api::need_version(body.version.clone())?;
    let current = braincode_config::load_settings(&state.home)
        .map_err(|err| ApiError::Conflict(tf(api::E::FixFileFirst, &[&err])))?;
    let changes = edits(&current, &body, &brain_ids(&state))?;
    if changes.is_empty() {
        return Ok(api::ok(
            json!({"message": t(S::NothingChanged), "version": version}),
        ));
    }
    let count = changes.len();
    let home = state.home.clone();
    let path = home.settings_path();
    let new_version = store::write_if_unchanged(&state, &path, &version, || {
        store::edit_in_place(
            &path,
            "{\n  \"version\": 1\n}\n",
            0o644,
            |text| {
                let mut text = text.to_string();
                for edit in &changes {
                    let steps: Vec<Step> = edit.path.iter().map(|key| Step::Key(key)).collect();
                    text = splice_path::set(&text, &steps, &edit.value)?;
                }
                Some(text)
            },
            || {
                braincode_config::load_settings(&home)
                    .map(drop)
                    .map_err(|err| ApiError::from_config(err, str::to_string))
            },
        )
    })
    .await?;
    Ok(api::ok(
        json!({"message": tf(S::Saved, &[&count]), "version": new_version}),
    ))
}
