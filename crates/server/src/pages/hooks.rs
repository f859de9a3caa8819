//! Hooks: the user's hooks.json can be edited here (add, change, remove, switch a handler
//! on or off); a project's `.agents/hooks.json` is shown, and edited only when the project is
//! trusted (an untrusted project's hooks never run, and the panel does not make them). Every
//! edit changes the file's text where the handler is, and the file must load back.

use std::path::PathBuf;

use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::Response;
use axum::routing::post;
use braincode_config::{HOOK_EVENTS, HookSwitch, ProjectTrust, Scope, check_trust};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout::{self, L};
use crate::{AppState, store};
use braincode_config::json_edit::{self as splice_path, Step};

/// The longest a hook may run, in seconds (an hour).
pub(crate) const MAX_HOOK_TIMEOUT_S: u64 = 3_600;

texts! {
    pub(crate) enum S {
        Title => "Hooks", "钩子";
        Empty => "No hooks yet.", "还没有钩子。";
        Event => "Event", "事件";
        Matcher => "Matcher", "匹配";
        Command => "Command", "命令";
        Timeout => "Timeout (s)", "超时（秒）";
        Runs => "Runs", "运行";
        Disabled => "disabled", "已停用";
        NotTrusted => "no: not trusted", "否：未信任";
        TurnOn => "Turn on", "启用";
        TurnOff => "Turn off", "停用";
        Remove => "Remove", "删除";
        Edit => "Edit", "编辑";
        UserFile => "Your hooks ({0})", "你的钩子（{0}）";
        ProjectFile => "This project's hooks ({0})", "此项目的钩子（{0}）";
        ProjectReadOnly => "The project is not trusted: its hooks are shown, never run, and cannot be edited here (`braincode trust` trusts it).", "项目未被信任：其钩子只显示、不运行，也不能在此编辑（用 `braincode trust` 信任它）。";
        Add => "Add a hook", "添加钩子";
        MatcherHint => "empty or * matches everything", "留空或 * 匹配全部";
        Trusted => "Trusted (allowed to run)", "已信任（允许运行）";
        AddButton => "Add", "添加";
        Added => "added a {0} hook", "已添加一个 {0} 钩子";
        Changed => "saved the hook", "已保存钩子";
        Removed => "removed the hook", "已删除钩子";
        SwitchedOn => "the hook is on", "钩子已启用";
        SwitchedOff => "the hook is off", "钩子已停用";
        EventBad => "{0} is not a hook event; use one of: {1}", "{0} 不是钩子事件；请使用以下之一：{1}";
        CommandEmpty => "write the command the hook runs", "请填写钩子要运行的命令";
        TimeoutBad => "{0} is not a timeout; use whole seconds from 1 to {1} (empty: 600)", "{0} 不是有效超时；请使用 1 到 {1} 之间的整秒数（留空：600）";
        ScopeBad => "{0} is not user or project", "{0} 不是 user 或 project";
        ProjectUntrusted => "this project is not trusted: its hooks cannot be edited from the panel (run `braincode trust` in it first)", "此项目未被信任：不能在面板中编辑其钩子（先在项目中运行 `braincode trust`）";
        NoSuchHook => "there is no such hook in the file any more; reload the page", "文件中已没有这个钩子；请重新加载页面";
        ActionBad => "{0} is not add, edit, remove or toggle", "{0} 不是 add、edit、remove 或 toggle";
        MatcherBad => "{0} is not a valid pattern: {1}", "{0} 不是有效的模式：{1}";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new().route("/api/hooks", post(change))
}

fn path_of(state: &AppState, scope: Scope) -> PathBuf {
    match scope {
        Scope::User => state.home.hooks_path(),
        Scope::Project => braincode_config::project_hooks_path(&state.project_root),
    }
}

/// The hooks section of the MCP & hooks page.
pub(super) fn section(state: &AppState, trust: &ProjectTrust) -> Markup {
    let editable_project = trust.is_trusted();
    let files = [(Scope::User, true), (Scope::Project, editable_project)];
    html! {
        section #hooks-section {
            h2 { (t(S::Title)) }
            @for (scope, editable) in files {
                @let path = path_of(state, scope);
                @let text = std::fs::read_to_string(&path).ok();
                @if scope == Scope::User || text.is_some() {
                    (file_block(scope, &path, text.as_deref(), editable, trust.is_trusted()))
                }
            }
        }
    }
}

fn file_block(
    scope: Scope,
    path: &std::path::Path,
    text: Option<&str>,
    editable: bool,
    project_trusted: bool,
) -> Markup {
    let version = store::version_of(path).unwrap_or_default();
    let rows = text.map(braincode_config::hook_rows).unwrap_or_default();
    let scope_name = scope.as_str();
    let heading = match scope {
        Scope::User => tf(S::UserFile, &[&path.display()]),
        Scope::Project => tf(S::ProjectFile, &[&path.display()]),
    };
    html! {
        h3 { (heading) }
        @if scope == Scope::Project && !editable { p.bad { (t(S::ProjectReadOnly)) } }
        @if rows.is_empty() {
            p.muted { (t(S::Empty)) }
        } @else {
            table.hooks data-scope=(scope_name) {
                thead { tr { th { (t(S::Event)) } th { (t(S::Matcher)) } th { (t(S::Command)) } th.num { (t(S::Timeout)) } th { (t(S::Runs)) } th {} } }
                tbody {
                    @for row in &rows {
                        @let at = json!({"version": version, "scope": scope_name, "event": row.event, "group": row.group, "index": row.index});
                        @let runs = row.enabled && (row.trusted || (scope == Scope::Project && project_trusted));
                        tr data-hook=(format!("{}/{}/{}", row.event, row.group, row.index)) {
                            td { (row.event) }
                            td { code { (if row.matcher.is_empty() { "*" } else { row.matcher.as_str() }) } }
                            td { code { (row.command) } }
                            td.num { (row.timeout.map_or_else(|| "600".to_string(), |s| s.to_string())) }
                            td {
                                @if !row.enabled { span.muted { (t(S::Disabled)) } }
                                @else if runs { span.ok { (t(L::Yes)) } }
                                @else { span.bad { (t(S::NotTrusted)) } }
                            }
                            td.actions {
                                @if editable {
                                    @let toggle = with(&at, &[("action", "toggle".into()), ("enabled", (!row.enabled).into())]);
                                    @let remove = with(&at, &[("action", "remove".into())]);
                                    button type="button" data-action="/api/hooks" data-body=(toggle) data-reload { (t(if row.enabled { S::TurnOff } else { S::TurnOn })) }
                                    " "
                                    button.danger type="button" data-action="/api/hooks" data-body=(remove) data-reload data-confirm=(format!("{}: {}?", t(S::Remove), row.command)) { (t(S::Remove)) }
                                    details.edit {
                                        summary { (t(S::Edit)) }
                                        form data-api="/api/hooks" data-reload {
                                            (layout::version_field(&version))
                                            input type="hidden" name="action" value="edit";
                                            input type="hidden" name="scope" value=(scope_name);
                                            input type="hidden" name="event" value=(row.event);
                                            input type="hidden" name="group" value=(row.group) data-type="integer";
                                            input type="hidden" name="index" value=(row.index) data-type="integer";
                                            label { (t(S::Matcher)) input name="matcher" value=(row.matcher) placeholder=(t(S::MatcherHint)); }
                                            label { (t(S::Command)) input name="command" required value=(row.command); }
                                            label { (t(S::Timeout)) input name="timeout" inputmode="numeric" value=[row.timeout]; }
                                            button type="submit" { (t(L::Save)) }
                                            (layout::status_line())
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if editable {
            details.add-hook open[rows.is_empty() && scope == Scope::User] {
                summary { (t(S::Add)) }
                form data-api="/api/hooks" data-reload data-scope=(scope_name) {
                    (layout::version_field(&version))
                    input type="hidden" name="action" value="add";
                    input type="hidden" name="scope" value=(scope_name);
                    div.grid {
                        label { (t(S::Event)) select name="event" { @for event in HOOK_EVENTS { option value=(event) { (event) } } } }
                        label { (t(S::Matcher)) input name="matcher" placeholder=(t(S::MatcherHint)); }
                        label { (t(S::Command)) input name="command" required placeholder="./scripts/check.sh"; }
                        label { (t(S::Timeout)) input name="timeout" inputmode="numeric" placeholder="600"; }
                        @if scope == Scope::User { label.check { input type="checkbox" name="trusted" checked; " " (t(S::Trusted)) } }
                    }
                    button type="submit" { (t(S::AddButton)) }
                    (layout::status_line())
                }
            }
        }
    }
}

/// `base` (an object) with `extra` fields, as the text a button sends.
fn with(base: &Value, extra: &[(&str, Value)]) -> String {
    let mut value = base.clone();
    if let Some(object) = value.as_object_mut() {
        for (key, field) in extra {
            object.insert((*key).to_string(), field.clone());
        }
    }
    value.to_string()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeBody {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    action: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    event: String,
    #[serde(default)]
    group: Option<usize>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    matcher: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    timeout: Option<Value>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    trusted: Option<bool>,
}

fn timeout(value: Option<&Value>) -> Result<Option<u64>, ApiError> {
    let bad = |shown: &dyn std::fmt::Display| {
        ApiError::at("timeout", tf(S::TimeoutBad, &[shown, &MAX_HOOK_TIMEOUT_S]))
    };
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(value) => {
            let number = match value {
                Value::Number(n) => n.as_u64(),
                Value::String(text) => text.trim().parse::<u64>().ok(),
                _ => None,
            };
            match number {
                Some(s) if (1..=MAX_HOOK_TIMEOUT_S).contains(&s) => Ok(Some(s)),
                _ => Err(bad(value)),
            }
        }
    }
}

fn command(body: &ChangeBody) -> Result<String, ApiError> {
    body.command
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .ok_or_else(|| ApiError::at("command", t(S::CommandEmpty)))
}

fn matcher(body: &ChangeBody) -> Result<Option<String>, ApiError> {
    let text = body.matcher.as_deref().map(str::trim).unwrap_or_default();
    if text.is_empty() || text == "*" {
        return Ok(None);
    }
    // The runtime falls back to a literal match when a pattern does not compile; here a
    // person is typing it, so say so at the field rather than match something else.
    regex::Regex::new(text)
        .map_err(|err| ApiError::at("matcher", tf(S::MatcherBad, &[&format!("{text:?}"), &err])))?;
    Ok(Some(text.to_string()))
}

/// The new text of the file for one change, every field checked first.
fn plan(body: &ChangeBody, text: &str) -> Result<(Option<String>, &'static str), ApiError> {
    if !HOOK_EVENTS.contains(&body.event.as_str()) {
        return Err(ApiError::at(
            "event",
            tf(
                S::EventBad,
                &[&format!("{:?}", body.event), &HOOK_EVENTS.join(", ")],
            ),
        ));
    }
    let event = body.event.as_str();
    let place = |body: &ChangeBody| -> Result<(usize, usize), ApiError> {
        let (Some(group), Some(index)) = (body.group, body.index) else {
            return Err(ApiError::NotFound(t(S::NoSuchHook).into()));
        };
        let exists = serde_json::from_str::<Value>(text)
            .ok()
            .is_some_and(|v| v["hooks"][event][group]["hooks"][index].is_object());
        if exists {
            Ok((group, index))
        } else {
            Err(ApiError::NotFound(t(S::NoSuchHook).into()))
        }
    };
    let handler_path = |group: usize, index: usize| {
        [
            Step::Key("hooks"),
            Step::Key(event),
            Step::Index(group),
            Step::Key("hooks"),
            Step::Index(index),
        ]
    };
    match body.action.as_str() {
        "add" => {
            let command = command(body)?;
            let timeout = timeout(body.timeout.as_ref())?;
            let matcher = matcher(body)?;
            let mut handler = json!({"type": "command", "command": command});
            if let Some(seconds) = timeout {
                handler["timeout"] = seconds.into();
            }
            if body.trusted.unwrap_or(false) {
                handler["trusted"] = true.into();
            }
            let mut group = serde_json::Map::new();
            if let Some(matcher) = matcher {
                group.insert("matcher".into(), matcher.into());
            }
            group.insert("hooks".into(), json!([handler]));
            Ok((
                splice_path::push(
                    text,
                    &[Step::Key("hooks"), Step::Key(event)],
                    &Value::Object(group),
                ),
                "added",
            ))
        }
        "edit" => {
            let (group, index) = place(body)?;
            let command = command(body)?;
            let timeout = timeout(body.timeout.as_ref())?;
            let matcher = matcher(body)?;
            let at = handler_path(group, index);
            let mut out = splice_path::set(
                text,
                &[&at[..], &[Step::Key("command")]].concat(),
                &command.into(),
            );
            out = out.and_then(|text| match timeout {
                Some(seconds) => splice_path::set(
                    &text,
                    &[&at[..], &[Step::Key("timeout")]].concat(),
                    &seconds.into(),
                ),
                None => splice_path::remove(&text, &[&at[..], &[Step::Key("timeout")]].concat())
                    .or(Some(text)),
            });
            let group_at = [
                Step::Key("hooks"),
                Step::Key(event),
                Step::Index(group),
                Step::Key("matcher"),
            ];
            out = out.and_then(|text| match &matcher {
                Some(matcher) => splice_path::set(&text, &group_at, &matcher.clone().into()),
                None => splice_path::remove(&text, &group_at).or(Some(text)),
            });
            Ok((out, "changed"))
        }
        "remove" => {
            let (group, index) = place(body)?;
            let handlers = serde_json::from_str::<Value>(text)
                .ok()
                .and_then(|v| v["hooks"][event][group]["hooks"].as_array().map(Vec::len))
                .unwrap_or(0);
            // The last handler of a group takes its group (and matcher) with it.
            let out = if handlers <= 1 {
                splice_path::remove(
                    text,
                    &[Step::Key("hooks"), Step::Key(event), Step::Index(group)],
                )
            } else {
                splice_path::remove(text, &handler_path(group, index))
            };
            Ok((out, "removed"))
        }
        "toggle" => {
            let (group, index) = place(body)?;
            let on = body.enabled.unwrap_or(true);
            let row = braincode_config::hook_rows(text)
                .into_iter()
                .find(|row| row.event == event && row.group == group && row.index == index);
            // On is the default: switching on removes the flag rather than writing `true`.
            let switch = if on { HookSwitch::On } else { HookSwitch::Off };
            let out = row.and_then(|row| braincode_config::switch_hook_text(text, &row, switch));
            Ok((out, if on { "on" } else { "off" }))
        }
        other => Err(ApiError::at(
            "action",
            tf(S::ActionBad, &[&format!("{other:?}")]),
        )),
    }
}

async fn change(
    State(state): State<AppState>,
    body: Result<axum::Json<ChangeBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    let scope = match body.scope.as_str() {
        "user" => Scope::User,
        "project" => Scope::Project,
        other => {
            return Err(ApiError::at(
                "scope",
                tf(S::ScopeBad, &[&format!("{other:?}")]),
            ));
        }
    };
    if scope == Scope::Project {
        let (trust, _) = check_trust(&state.home, &state.project_root);
        if !trust.is_trusted() {
            return Err(ApiError::at("scope", t(S::ProjectUntrusted)));
        }
    }
    let version = api::need_version(body.version.clone())?;
    let path = path_of(&state, scope);
    let mut done = "";
    let new_version = store::write_if_unchanged(&state, &path, &version, || {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                "{\n  \"hooks\": {}\n}\n".to_string()
            }
            Err(err) => {
                return Err(ApiError::Internal(format!(
                    "cannot read {}: {err}",
                    path.display()
                )));
            }
        };
        let (edited, what) = plan(&body, &text)?;
        done = what;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                ApiError::Internal(format!("cannot create {}: {err}", parent.display()))
            })?;
        }
        store::edit_in_place(
            &path,
            "{\n  \"hooks\": {}\n}\n",
            0o644,
            |_| edited,
            || {
                braincode_config::read_hooks_file(&path, scope)
                    .map(drop)
                    .map_err(|err| ApiError::from_config(err, str::to_string))
            },
        )
    })
    .await?;
    let message = match done {
        "added" => tf(S::Added, &[&body.event]),
        "changed" => t(S::Changed).to_string(),
        "removed" => t(S::Removed).to_string(),
        "on" => t(S::SwitchedOn).to_string(),
        _ => t(S::SwitchedOff).to_string(),
    };
    Ok(api::ok(json!({"message": message, "version": new_version})))
}
