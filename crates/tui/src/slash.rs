//! Slash commands: the table (name, arguments, one-line help) and the parser that turns a
//! `/command args` line into a typed [`SlashCommand`] with its arguments validated.
//!
//! Running a command is the event loop's business; this module only says what was asked.

use braincode_protocol::Mode;
use braincode_runtime::PermissionMode;

/// One command of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandInfo {
    /// The name, without the slash.
    pub name: &'static str,
    /// Other names that run the same command.
    pub aliases: &'static [&'static str],
    /// The arguments as shown in help (`<task>`, `[id]`), empty when there are none.
    pub args: &'static str,
    /// One line of help.
    pub help: &'static str,
}

impl CommandInfo {
    /// `/name args`, as shown in help and in the completion popup.
    pub fn usage(&self) -> String {
        if self.args.is_empty() {
            format!("/{}", self.name)
        } else {
            format!("/{} {}", self.name, self.args)
        }
    }
}

/// Every command, in the order `/help` lists them.
pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        name: "help",
        aliases: &["?"],
        args: "",
        help: "list the commands and keys",
    },
    CommandInfo {
        name: "plan",
        aliases: &[],
        args: "<task>",
        help: "show the plan the Brain would make for a task, without running it",
    },
    CommandInfo {
        name: "intent",
        aliases: &[],
        args: "",
        help: "the latest request's plan as a graph: routing, todos and what waits on what (Ctrl+O)",
    },
    CommandInfo {
        name: "image",
        aliases: &[],
        args: "<path>",
        help: "attach an image (png, jpeg, gif, webp) to the next request and preview it",
    },
    CommandInfo {
        name: "team-test",
        aliases: &["team"],
        args: "<task>",
        help: "every routed role answers the task on its own, to compare them (no router)",
    },
    CommandInfo {
        name: "mode",
        aliases: &[],
        args: "[auto|radical]",
        help: "show or set the orchestration mode",
    },
    CommandInfo {
        name: "brain",
        aliases: &[],
        args: "[id]",
        help: "list the Brain Models, or pick one",
    },
    CommandInfo {
        name: "model",
        aliases: &[],
        args: "",
        help: "show which model each role uses",
    },
    CommandInfo {
        name: "permissions",
        aliases: &[],
        args: "[ask|edits|yes|read-only]",
        help: "show or set what may change without asking (Shift+Tab cycles)",
    },
    CommandInfo {
        name: "sessions",
        aliases: &[],
        args: "",
        help: "list this project's sessions",
    },
    CommandInfo {
        name: "resume",
        aliases: &[],
        args: "[id]",
        help: "continue an earlier session (an id or a unique prefix)",
    },
    CommandInfo {
        name: "new",
        aliases: &[],
        args: "",
        help: "start a new session",
    },
    CommandInfo {
        name: "clear",
        aliases: &[],
        args: "",
        help: "clear the transcript (the session goes on)",
    },
    CommandInfo {
        name: "handoff",
        aliases: &["fork"],
        args: "[focus]",
        help: "summarize this session into a new one",
    },
    CommandInfo {
        name: "mcp",
        aliases: &[],
        args: "[on|off <name> | trust]",
        help: "list the MCP servers and their health; switch one of yours on or off; trust the project",
    },
    CommandInfo {
        name: "theme",
        aliases: &[],
        args: "[dark|light|auto]",
        help: "switch the colours for a dark or light terminal (auto: BRAINCODE_THEME, COLORFGBG)",
    },
    CommandInfo {
        name: "hooks",
        aliases: &[],
        args: "[trust|on <n>|off <n>]",
        help: "list the hooks of this project and of the user; switch the user's hook <n> on or off; trust the project so its own run",
    },
    CommandInfo {
        name: "skill",
        aliases: &["skills"],
        args: "[id] [task]",
        help: "list the skills, show one, or run a task with it (also /<id> [task])",
    },
    CommandInfo {
        name: "agents",
        aliases: &[],
        args: "",
        help: "show which AGENTS.md files are read",
    },
    CommandInfo {
        name: "files",
        aliases: &[],
        args: "",
        help: "re-read the project's files for @ completion",
    },
    CommandInfo {
        name: "usage",
        aliases: &[],
        args: "",
        help: "token usage of this session",
    },
    CommandInfo {
        name: "doctor",
        aliases: &[],
        args: "",
        help: "check the configuration, the models and the sandbox",
    },
    CommandInfo {
        name: "quit",
        aliases: &["exit"],
        args: "",
        help: "leave Braincode",
    },
];

/// What `/mcp` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpAction {
    /// List the servers, checked live.
    List,
    /// Switch one of the user's servers on or off (`disabled` in `~/.braincode/mcp.json`).
    Switch {
        /// The server's name.
        name: String,
        /// On (`true`) or off.
        on: bool,
    },
    /// Trust the project, so its own servers (and hooks, settings, checks) may run.
    Trust,
}

/// What `/hooks` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HooksAction {
    /// List the hooks.
    List,
    /// Switch the user's hook number `number` (as `/hooks` numbers them) on or off.
    Switch {
        /// 1-based, in the user's hooks.json order.
        number: usize,
        /// On or off.
        switch: braincode_config::HookSwitch,
    },
    /// Trust the project, so its own hooks (and MCP servers, settings, checks) run.
    Trust,
}

/// A parsed slash command, arguments validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/help`.
    Help,
    /// `/plan <task>`: a dry run of the Brain's plan.
    Plan {
        /// The task to plan (never empty).
        task: String,
    },
    /// `/intent`: the latest request's intent graph.
    Intent,
    /// `/team-test <task>`: every routed role answers the task independently.
    TeamTest {
        /// The task (never empty).
        task: String,
    },
    /// `/image <path>`: attach an image to the next request.
    Image {
        /// The path as typed (quotes and `~` resolved by the session; never empty).
        path: String,
    },
    /// `/mode [auto|radical]`: `None` shows the current mode.
    Mode(Option<Mode>),
    /// `/brain [id]`: `None` lists the brains.
    Brain(Option<String>),
    /// `/model`.
    Model,
    /// `/permissions [ask|edits|yes|read-only]`: `None` shows the current permission mode.
    Permissions(Option<PermissionMode>),
    /// `/sessions`.
    Sessions,
    /// `/resume [id]`: `None` opens the session list.
    Resume(Option<String>),
    /// `/new`.
    New,
    /// `/clear`.
    Clear,
    /// `/handoff [focus]`.
    Handoff {
        /// What the new session should focus on.
        focus: Option<String>,
    },
    /// `/mcp`, `/mcp on|off <name>`, `/mcp trust`.
    Mcp(McpAction),
    /// `/hooks`, or `/hooks trust`: trust the project so its own hooks run.
    Hooks(HooksAction),
    /// `/theme [dark|light|auto]`: `None` switches to the other palette; `Some(None)` is
    /// `auto` (detected again).
    Theme(Option<Option<crate::view::theme::Palette>>),
    /// `/skill [id] [task]` (or `/skills`): `None` lists the skills; an id alone shows that
    /// skill; with a task, runs it with the skill applied.
    Skill {
        /// The skill's id.
        id: Option<String>,
        /// The task to run with it.
        task: Option<String>,
    },
    /// `/<name> [args]` where `name` is no command: a skill's id (`/review fix the parser`),
    /// or a mistyped command — the session knows the skills and tells them apart.
    Other {
        /// The word after the slash.
        name: String,
        /// The rest of the line (a skill's task), trimmed.
        args: String,
    },
    /// `/agents`.
    Agents,
    /// `/files`.
    Files,
    /// `/usage`.
    Usage,
    /// `/doctor`.
    Doctor,
    /// `/quit` or `/exit`.
    Quit,
}

impl SlashCommand {
    /// The command's name in [`COMMANDS`].
    pub fn name(&self) -> &'static str {
        match self {
            SlashCommand::Help => "help",
            SlashCommand::Plan { .. } => "plan",
            SlashCommand::TeamTest { .. } => "team-test",
            SlashCommand::Image { .. } => "image",
            SlashCommand::Intent => "intent",
            SlashCommand::Mode(_) => "mode",
            SlashCommand::Brain(_) => "brain",
            SlashCommand::Model => "model",
            SlashCommand::Permissions(_) => "permissions",
            SlashCommand::Sessions => "sessions",
            SlashCommand::Resume(_) => "resume",
            SlashCommand::New => "new",
            SlashCommand::Clear => "clear",
            SlashCommand::Handoff { .. } => "handoff",
            SlashCommand::Mcp(_) => "mcp",
            SlashCommand::Hooks(_) => "hooks",
            SlashCommand::Theme(_) => "theme",
            SlashCommand::Skill { .. } => "skill",
            SlashCommand::Other { .. } => "other",
            SlashCommand::Agents => "agents",
            SlashCommand::Files => "files",
            SlashCommand::Usage => "usage",
            SlashCommand::Doctor => "doctor",
            SlashCommand::Quit => "quit",
        }
    }
}

/// The table entry for a name or alias (without the slash).
pub fn lookup(name: &str) -> Option<&'static CommandInfo> {
    COMMANDS
        .iter()
        .find(|c| c.name == name || c.aliases.contains(&name))
}

/// Parses a `/command args` line (leading and trailing whitespace ignored). A word that is no
/// command is [`SlashCommand::Other`] (a skill, or a typo [`unknown_command`] explains);
/// missing, extra or invalid arguments are an error with the usage.
pub fn parse(line: &str) -> Result<SlashCommand, String> {
    let line = line.trim();
    let Some(rest) = line.strip_prefix('/') else {
        return Err(format!(
            "`{line}` is not a command: commands start with `/` (type /help)"
        ));
    };
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((name, args)) => (name, args.trim()),
        None => (rest, ""),
    };
    if name.is_empty() {
        return Err("type a command after `/` (type /help for the list)".into());
    }
    let Some(info) = lookup(name) else {
        return Ok(SlashCommand::Other {
            name: name.to_string(),
            args: args.to_string(),
        });
    };
    let usage = || format!("usage: {} — {}", info.usage(), info.help);
    let no_args = |command: SlashCommand| {
        if args.is_empty() {
            Ok(command)
        } else {
            Err(format!("/{} takes no arguments ({})", info.name, usage()))
        }
    };
    let one_word = || -> Result<Option<String>, String> {
        match args.split_whitespace().count() {
            0 => Ok(None),
            1 => Ok(Some(args.to_string())),
            _ => Err(format!("/{} takes one word ({})", info.name, usage())),
        }
    };
    match info.name {
        "help" => no_args(SlashCommand::Help),
        "plan" if args.is_empty() => Err(format!("/plan needs a task ({})", usage())),
        "plan" => Ok(SlashCommand::Plan {
            task: args.to_string(),
        }),
        "intent" => no_args(SlashCommand::Intent),
        "image" if args.is_empty() => Err(usage()),
        "image" => Ok(SlashCommand::Image {
            path: args.to_string(),
        }),
        "team-test" if args.is_empty() => Err(format!("/team-test needs a task ({})", usage())),
        "team-test" => Ok(SlashCommand::TeamTest {
            task: args.to_string(),
        }),
        "mode" => match one_word()? {
            None => Ok(SlashCommand::Mode(None)),
            Some(word) => word
                .to_ascii_lowercase()
                .parse::<Mode>()
                .map(|mode| SlashCommand::Mode(Some(mode)))
                .map_err(|_| format!("unknown mode `{word}` ({})", usage())),
        },
        "brain" => one_word().map(SlashCommand::Brain),
        "model" => no_args(SlashCommand::Model),
        "permissions" => match one_word()? {
            None => Ok(SlashCommand::Permissions(None)),
            Some(word) => parse_permissions(&word)
                .map(|mode| SlashCommand::Permissions(Some(mode)))
                .ok_or_else(|| format!("unknown permission level `{word}` ({})", usage())),
        },
        "sessions" => no_args(SlashCommand::Sessions),
        "resume" => one_word().map(SlashCommand::Resume),
        "new" => no_args(SlashCommand::New),
        "clear" => no_args(SlashCommand::Clear),
        "handoff" => Ok(SlashCommand::Handoff {
            focus: (!args.is_empty()).then(|| args.to_string()),
        }),
        "mcp" => {
            let words: Vec<&str> = args.split_whitespace().collect();
            match words.as_slice() {
                [] => Ok(SlashCommand::Mcp(McpAction::List)),
                ["trust"] => Ok(SlashCommand::Mcp(McpAction::Trust)),
                ["on", name] => Ok(SlashCommand::Mcp(McpAction::Switch {
                    name: (*name).to_string(),
                    on: true,
                })),
                ["off", name] => Ok(SlashCommand::Mcp(McpAction::Switch {
                    name: (*name).to_string(),
                    on: false,
                })),
                _ => Err(format!("usage: {} — {}", info.usage(), info.help)),
            }
        }
        "hooks" => match args {
            "" => Ok(SlashCommand::Hooks(HooksAction::List)),
            "trust" => Ok(SlashCommand::Hooks(HooksAction::Trust)),
            _ => {
                let words: Vec<&str> = args.split_whitespace().collect();
                let switch = match words.first().copied() {
                    Some("on") => Some(braincode_config::HookSwitch::On),
                    Some("off") => Some(braincode_config::HookSwitch::Off),
                    _ => None,
                };
                match (switch, &words[1..]) {
                    (Some(switch), [number]) => match number.parse::<usize>() {
                        Ok(number) if number > 0 => {
                            Ok(SlashCommand::Hooks(HooksAction::Switch { number, switch }))
                        }
                        _ => Err(format!(
                            "`{number}` is not a hook number: `/hooks` lists them numbered from 1"
                        )),
                    },
                    _ => Err(format!("usage: {} — {}", info.usage(), info.help)),
                }
            }
        },
        "theme" => match one_word()? {
            None => Ok(SlashCommand::Theme(None)),
            Some(word) if word.eq_ignore_ascii_case("auto") => Ok(SlashCommand::Theme(Some(None))),
            Some(word) => crate::view::theme::Palette::from_name(&word)
                .map(|palette| SlashCommand::Theme(Some(Some(palette))))
                .ok_or_else(|| format!("unknown theme `{word}` ({})", usage())),
        },
        "skill" => {
            let (id, task) = match args.split_once(char::is_whitespace) {
                Some((id, task)) => (Some(id.to_string()), Some(task.trim().to_string())),
                None => ((!args.is_empty()).then(|| args.to_string()), None),
            };
            Ok(SlashCommand::Skill { id, task })
        }
        "agents" => no_args(SlashCommand::Agents),
        "files" => no_args(SlashCommand::Files),
        "usage" => no_args(SlashCommand::Usage),
        "doctor" => no_args(SlashCommand::Doctor),
        "quit" => no_args(SlashCommand::Quit),
        // Every name of the table is matched above; a new entry without a case lands here.
        other => Err(format!("/{other} is not wired to a command yet")),
    }
}

/// `read-only`, `edits` or `yes` (the flag names `--allow-edits` and `--yes` also work).
fn parse_permissions(word: &str) -> Option<PermissionMode> {
    match word.to_ascii_lowercase().as_str() {
        "ask" | "default" => Some(PermissionMode::Ask),
        "read-only" | "readonly" | "read" | "plan" => Some(PermissionMode::ReadOnly),
        "edits" | "allow-edits" | "--allow-edits" => Some(PermissionMode::AllowEdits),
        "yes" | "--yes" => Some(PermissionMode::Yes),
        _ => None,
    }
}

/// The user-facing name of a permission level, as `/permissions` takes it.
pub fn permission_name(mode: PermissionMode) -> &'static str {
    mode.label()
}

/// The commands whose name or alias starts with `prefix` (without the slash), table order;
/// when none does, those that contain the prefix's letters in order.
pub fn completions(prefix: &str) -> Vec<&'static CommandInfo> {
    let prefix = prefix.to_ascii_lowercase();
    let starts: Vec<_> = COMMANDS
        .iter()
        .filter(|c| c.name.starts_with(&prefix) || c.aliases.iter().any(|a| a.starts_with(&prefix)))
        .collect();
    if !starts.is_empty() {
        return starts;
    }
    COMMANDS
        .iter()
        .filter(|c| is_subsequence(&prefix, c.name))
        .collect()
}

/// The keys of the session, as `/help` lists them after the commands.
pub const KEYS: &[(&str, &str)] = &[
    (
        "Enter",
        "send the request (Shift+Enter or Alt+Enter: a new line)",
    ),
    (
        "Shift+Tab",
        "cycle the permission mode: ask → edits → yes → read-only",
    ),
    ("@", "complete a file path; / completes a command"),
    ("↑ ↓", "move in the draft, then through earlier prompts"),
    ("PgUp PgDn", "scroll the transcript"),
    (
        "Ctrl+↑ Ctrl+↓",
        "select a worker or tool call; Tab expands it (its diff, its output)",
    ),
    (
        "Esc",
        "close this text, clear the selection, or interrupt the running request",
    ),
    ("Ctrl-C", "interrupt the running request; twice quits"),
    ("Ctrl-D", "quit when the draft is empty"),
    (
        "y / a / n",
        "in an approval: yes once / yes for this session / no",
    ),
    ("r", "in an approval: no, with a reason the agent reads"),
];

/// `/help`'s lines: one per command, `usage` padded, then its help; then the keys.
pub fn help_lines() -> Vec<String> {
    let mut lines = command_lines();
    lines.push(String::new());
    lines.push("keys".into());
    let width = KEYS
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    lines.extend(
        KEYS.iter()
            .map(|(key, what)| format!("{key:width$}  {what}")),
    );
    lines
}

fn command_lines() -> Vec<String> {
    let width = COMMANDS
        .iter()
        .map(|c| c.usage().chars().count())
        .max()
        .unwrap_or(0);
    COMMANDS
        .iter()
        .map(|c| {
            let aliases = if c.aliases.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = c.aliases.iter().map(|a| format!("/{a}")).collect();
                format!(" (also {})", names.join(", "))
            };
            format!("{:width$}  {}{aliases}", c.usage(), c.help)
        })
        .collect()
}

fn is_subsequence(needle: &str, haystack: &str) -> bool {
    let mut hay = haystack.chars();
    needle.chars().all(|n| hay.any(|h| h == n))
}

/// The message for a word that is no command (nor a skill): names the closest command when
/// there is one.
pub fn unknown_command(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    if lower != name
        && let Some(info) = lookup(&lower)
    {
        return format!("unknown command /{name}: did you mean /{}?", info.name);
    }
    let best = COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
        .map(|candidate| {
            let distance = if candidate.starts_with(&lower) {
                0
            } else {
                braincode_protocol::edit_distance(&lower, candidate)
            };
            (distance, candidate)
        })
        .min_by_key(|(distance, _)| *distance);
    match best {
        Some((distance, candidate)) if distance <= (lower.chars().count() / 2).max(2) => {
            let target = lookup(candidate).map_or(candidate, |c| c.name);
            format!("unknown command /{name}: did you mean /{target}? (type /help for the list)")
        }
        _ => format!("unknown command /{name} (type /help for the list)"),
    }
}

#[cfg(test)]
#[path = "slash_tests.rs"]
mod tests;
