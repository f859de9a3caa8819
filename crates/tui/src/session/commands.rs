//! The slash commands of the session: what each one does to it.

use braincode_config::{ListOptions, latest_session_for_project, list_sessions, resolve_session};
use braincode_runtime::{
    PermissionMode, RoutingChoice, RunRequest, RunServices, new_session_id, plan_only,
};

use super::panels::plan_lines;
use super::skills::{self, SkillAction, SkillRequest};
use super::{Session, listings, reopen, status};
use crate::slash::{self, HooksAction, McpAction, SlashCommand};

impl Session {
    pub(super) fn command(&mut self, command: SlashCommand) {
        match command {
            SlashCommand::Help => self.info = Some(slash::help_lines()),
            SlashCommand::Image { path } => self.attach_image(&path),
            SlashCommand::Quit => {
                if self.running.is_some() {
                    self.note("a request is still running: Esc interrupts it, Ctrl-C twice quits");
                } else {
                    self.quit = true;
                }
            }
            SlashCommand::Clear => self.app.clear_transcript(),
            SlashCommand::New => {
                self.session_id = new_session_id();
                self.app.set_session_id(self.session_id.to_string());
                self.info = Some(vec![format!("new session {}", self.session_id.short())]);
            }
            SlashCommand::Mode(Some(mode)) => {
                self.mode = Some(mode);
                self.info = Some(vec![format!(
                    "orchestration mode {} for the next requests",
                    mode.as_str()
                )]);
            }
            SlashCommand::Mode(None) => {
                let configured = status::configured_brain(
                    &self.options.home,
                    &self.options.project_root,
                    self.brain.as_deref(),
                )
                .map(|brain| brain.mode);
                let line = match (self.mode, configured) {
                    (Some(mode), _) => format!("orchestration mode: {mode} (set in this session)"),
                    (None, Some(mode)) => format!("orchestration mode: {mode} (from settings.json)"),
                    (None, None) => "orchestration mode: auto (the configuration does not load; a request will say why)".to_string(),
                };
                self.info = Some(vec![
                    line,
                    "/mode auto|radical changes it; the permission mode (what may change without asking) is /permissions or Shift+Tab".into(),
                ]);
            }
            SlashCommand::Brain(Some(id)) => {
                self.info = Some(vec![format!("brain {id} for the next requests")]);
                self.brain = Some(id);
            }
            SlashCommand::Brain(None) => {
                self.info = Some(listings::brains(&self.options.home, self.brain.as_deref()));
            }
            SlashCommand::Permissions(Some(permission)) => self.set_permission(permission),
            SlashCommand::Permissions(None) => {
                self.info = Some(status::mode_lines(self.permission, false));
            }
            SlashCommand::Usage => self.info = Some(status::usage_lines(&self.app)),
            SlashCommand::Plan { task } => self.plan(task),
            SlashCommand::Intent => self.info = Some(self.intent()),
            SlashCommand::Theme(choice) => {
                use crate::view::theme::Palette;
                self.palette = match choice {
                    None if self.palette == Palette::Dark => Palette::Light,
                    None => Palette::Dark,
                    Some(None) => Palette::from_env(),
                    Some(Some(palette)) => palette,
                };
                self.info = Some(vec![format!(
                    "colours for a {} background (BRAINCODE_THEME={} makes it the default)",
                    self.palette.as_str(),
                    self.palette.as_str()
                )]);
            }
            SlashCommand::TeamTest { task } if self.running.is_some() => {
                self.note(format!(
                    "a request is running: send /team-test {task} when it has answered"
                ));
            }
            SlashCommand::TeamTest { task } => {
                self.start_routed(task, braincode_runtime::RoutingChoice::TeamTest);
            }
            SlashCommand::Sessions => self.info = Some(self.sessions()),
            SlashCommand::Resume(target) => self.resume(target),
            SlashCommand::Files => {
                self.input.refresh_files();
                self.info = Some(vec![
                    "re-reading the project's files for @ completion".into(),
                ]);
            }
            SlashCommand::Model => {
                self.info = Some(listings::models(
                    &self.options.home,
                    &self.options,
                    self.brain.as_deref(),
                ));
            }
            SlashCommand::Agents => {
                self.info = Some(listings::agents(
                    &self.options.home,
                    &self.options,
                    self.brain.as_deref(),
                ));
            }
            SlashCommand::Skill { id: None, .. } => self.skill(SkillRequest::List),
            SlashCommand::Skill { id: Some(id), task } => self.skill(SkillRequest::Named {
                id: &id,
                task: task.as_deref(),
            }),
            SlashCommand::Other { name, args } => self.skill(SkillRequest::Command {
                name: &name,
                args: &args,
            }),
            SlashCommand::Hooks(HooksAction::List) => {
                self.info = Some(listings::hooks(&self.options.home, &self.options));
            }
            SlashCommand::Hooks(HooksAction::Trust) => self.trust_project(),
            SlashCommand::Hooks(HooksAction::Switch { number, switch }) => {
                let path = self.options.home.hooks_path();
                self.info = Some(vec![
                    match braincode_config::switch_hook(&path, number, switch) {
                        Ok(row) => format!(
                            "hook {number} ({} {} {}) is {}; the next request uses it so",
                            row.event,
                            row.matcher_shown(),
                            row.command,
                            if row.enabled { "on" } else { "off" }
                        ),
                        Err(err) => err.to_string(),
                    },
                ]);
            }
            SlashCommand::Mcp(McpAction::List) => self.mcp(),
            SlashCommand::Mcp(McpAction::Switch { name, on }) => {
                self.info = Some(vec![match braincode_config::set_user_server_enabled(
                    &self.options.home,
                    &name,
                    on,
                ) {
                    Ok(()) => format!(
                        "MCP server {name} is {} for your next requests (~/.braincode/mcp.json)",
                        if on { "on" } else { "off" }
                    ),
                    Err(err) => format!(
                        "{err} (only your own servers switch here; a project's are its .mcp.json)"
                    ),
                }]);
            }
            SlashCommand::Mcp(McpAction::Trust) => self.trust_project(),
            SlashCommand::Handoff { focus } => self.handoff(focus.as_deref()),
            SlashCommand::Doctor => {
                let info = self.info_tx.clone();
                let root = self.options.project_root.clone();
                self.info = Some(vec![
                    "checking the configuration, models and sandbox…".into(),
                ]);
                tokio::spawn(async move {
                    let _ = info.send(status::doctor_lines(&root).await);
                });
            }
        }
    }

    /// `/skill …` and `/<skill-id> …`: a listing or a skill's body, else a request with the
    /// skill applied (queued like any request while one runs).
    fn skill(&mut self, request: SkillRequest<'_>) {
        let skills = skills::load_skills(&self.options.home, &self.options.project_root);
        match skills::skill_action(skills, request) {
            SkillAction::Show(lines) => self.info = Some(lines),
            SkillAction::Run(prompt) => self.submit(prompt),
        }
    }

    /// `/plan <task>`: the plan, without running anything (in the background).
    fn plan(&mut self, task: String) {
        let request = RunRequest {
            routing: RoutingChoice::Auto,
            ..self.request(task)
        };
        let services = RunServices::new(self.options.home.clone());
        let info = self.info_tx.clone();
        self.info = Some(vec!["planning…".into()]);
        tokio::spawn(async move {
            let lines = match plan_only(request, services).await {
                Ok(plan) => plan_lines(&plan),
                Err(err) => vec![format!("no plan: {err}")],
            };
            let _ = info.send(lines);
        });
    }

    fn sessions(&self) -> Vec<String> {
        let options = ListOptions {
            limit: 15,
            project: Some(self.options.project_root.clone()),
            all: false,
        };
        match list_sessions(&self.options.home, &options) {
            Ok(list) if list.is_empty() => vec!["no sessions in this project yet".into()],
            Ok(list) => list
                .iter()
                .map(|s| {
                    format!(
                        "{}  {:>2} run(s)  {}",
                        s.id.short(),
                        s.runs,
                        s.prompt_preview.as_deref().unwrap_or("")
                    )
                })
                .chain(std::iter::once("/resume <id> continues one".to_string()))
                .collect(),
            Err(err) => vec![format!("sessions could not be listed: {err}")],
        }
    }

    /// Shows an earlier session's runs (their records, folded as they were) and says that
    /// new requests continue it.
    pub(super) fn reopen(&mut self) {
        self.info = Some(reopen::show_session(
            &mut self.app,
            &self.options.home,
            &self.session_id,
        ));
    }

    pub(super) fn set_permission(&mut self, permission: PermissionMode) {
        self.permission = permission;
        self.app.set_permission(slash::permission_name(permission));
        self.info = Some(status::mode_lines(permission, true));
    }

    fn resume(&mut self, target: Option<String>) {
        let home = &self.options.home;
        let found = match &target {
            Some(prefix) => resolve_session(home, prefix).map_err(|e| e.to_string()),
            None => latest_session_for_project(home, &self.options.project_root)
                .map_err(|e| e.to_string())
                .and_then(|id| id.ok_or_else(|| "no earlier session in this project".to_string())),
        };
        match found {
            Ok(id) => {
                self.session_id = id;
                self.app.set_session_id(self.session_id.to_string());
                self.reopen();
            }
            Err(err) => self.info = Some(vec![err]),
        }
    }
}
