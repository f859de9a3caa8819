//! The interactive session: one event loop over the terminal's keys, the running request's
//! events and the approvals it waits for. It redraws only when something changed, and ticks
//! only while something moves (a run, a background load), so an idle session uses no CPU.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use braincode_config::Home;
use braincode_config::journal::now_ms;
use braincode_protocol::{Mode, RunEvent, SessionId};
use braincode_runtime::{
    ChannelSubscriber, PermissionMode, RoutingChoice, RunRequest, RunServices, new_session_id, run,
};
use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::app::{App, AppConfig};
use crate::approval::{ApprovalPanel, PanelAction, TuiApprover};
use crate::input::{self, InputAction, InputState};
use crate::pet::{IDLE_FRAME_MS, Pet};
use crate::slash;
use crate::terminal::TerminalGuard;
use crate::view;

mod attach;
mod commands;
mod handoff;
mod listings;
pub mod mcp;
mod panels;
mod pet_watch;
mod reopen;
pub mod skills;
mod status;

use panels::draw_welcome;
pub use panels::{draw_info, info_height};
use pet_watch::PetWatch;

/// How the session starts.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    /// The Braincode home.
    pub home: Home,
    /// The project (tools are confined to it).
    pub project_root: PathBuf,
    /// A session to reopen (`--session`, `--continue`); a new one otherwise.
    pub session_id: Option<SessionId>,
    /// Brain instead of the configured default.
    pub brain: Option<String>,
    /// Mode instead of the configured one.
    pub mode: Option<Mode>,
    /// How much requests may change.
    pub permission: PermissionMode,
    /// Whether commands may reach the network.
    pub allow_network: bool,
    /// What the OS sandbox is, for the status line (empty: probed by the session itself).
    pub sandbox: String,
}

/// Two Ctrl-C within this window quit.
const DOUBLE_PRESS: Duration = Duration::from_secs(2);
/// How often moving things (spinners, clocks, background loads) are redrawn.
const TICK: Duration = Duration::from_millis(140);
/// How long after start the input's background loads (file index, sessions) are polled.
const LOAD_WINDOW: Duration = Duration::from_secs(10);
/// How long quitting waits for a cancelled request to journal its end.
const QUIT_GRACE: Duration = Duration::from_secs(3);

/// A request in flight.
struct Running {
    cancel: CancellationToken,
    reason: Arc<OnceLock<String>>,
    handle: tokio::task::JoinHandle<braincode_protocol::FinalReport>,
}

/// Everything the loop holds.
struct Session {
    options: TuiOptions,
    session_id: SessionId,
    brain: Option<String>,
    mode: Option<Mode>,
    permission: PermissionMode,
    app: App,
    pet: Pet,
    pet_watch: PetWatch,
    input: InputState,
    panel: ApprovalPanel,
    approver: Arc<TuiApprover>,
    run_tx: mpsc::UnboundedSender<RunEvent>,
    info_tx: mpsc::UnboundedSender<Vec<String>>,
    /// Lines shown in the panel area until Esc (help, command output, notices).
    info: Option<Vec<String>>,
    running: Option<Running>,
    queue: VecDeque<String>,
    ctrl_c_at: Option<Instant>,
    started: Instant,
    quit: bool,
    /// MCP servers kept up between this session's requests.
    mcp_hubs: Arc<braincode_runtime::McpHubCache>,
    /// The background the screen is drawn for (`/theme`).
    palette: view::theme::Palette,
    /// Images (`/image`, a pasted path) that go with the next request.
    pending_images: Vec<braincode_config::ImageAttachment>,
    /// The preview of the latest attached image, while its panel is open.
    preview: Option<attach::Preview>,
    /// Where the info panel was last drawn (the preview goes inside it).
    info_area: std::cell::Cell<Option<ratatui::layout::Rect>>,
}

/// Runs the interactive session until the user quits.
pub async fn run_tui(options: TuiOptions) -> std::io::Result<TuiExit> {
    let mut guard = TerminalGuard::enter()?;
    let (run_tx, mut run_rx) = mpsc::unbounded_channel();
    let (info_tx, mut info_rx) = mpsc::unbounded_channel();
    let (pet_tx, mut pet_rx) = mpsc::unbounded_channel();
    let (approver, mut approvals) = TuiApprover::new();
    let session_id = options.session_id.clone().unwrap_or_else(new_session_id);
    let mut session = Session {
        app: App::new(AppConfig {
            session_id: session_id.to_string(),
            permission: slash::permission_name(options.permission).to_string(),
            sandbox: options.sandbox.clone(),
            brain: None,
        }),
        pet: Pet::from_env(),
        pet_watch: PetWatch::new(pet_tx),
        input: InputState::new(options.project_root.clone(), Some(&options.home)),
        panel: ApprovalPanel::new(),
        approver: Arc::new(approver),
        session_id,
        brain: options.brain.clone(),
        mode: options.mode,
        permission: options.permission,
        run_tx,
        info_tx,
        info: None,
        running: None,
        queue: VecDeque::new(),
        ctrl_c_at: None,
        started: Instant::now(),
        quit: false,
        mcp_hubs: braincode_runtime::McpHubCache::new(),
        palette: view::theme::Palette::from_env(),
        pending_images: Vec::new(),
        preview: None,
        info_area: std::cell::Cell::new(None),
        options,
    };
    if session.options.session_id.is_some() {
        session.reopen();
    }
    // The status line names the Brain the next request uses and the sandbox its commands run
    // in from the start; loading the configuration (and probing local model servers and the
    // OS sandbox, a bubblewrap run) must not hold the first frame.
    let (brain_tx, mut brain_rx) = tokio::sync::oneshot::channel();
    {
        let home = session.options.home.clone();
        let root = session.options.project_root.clone();
        let requested = session.brain.clone();
        tokio::task::spawn_blocking(move || {
            let sandbox = braincode_sandbox::status().kind.to_string();
            let brain = status::configured_brain(&home, &root, requested.as_deref());
            let _ = brain_tx.send((brain, sandbox));
        });
    }
    let mut brain_pending = true;
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // The idle pet dozes at its own slow pace, so an idle session wakes once per frame.
    let mut pet_tick = tokio::time::interval(Duration::from_millis(IDLE_FRAME_MS.unsigned_abs()));
    pet_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // Each pass draws once, then sleeps until something happens: a key, a run event, an
    // approval, command output, or a tick while something moves.
    while !session.quit {
        for warning in session.input.take_warnings() {
            session.note(warning);
        }
        guard.terminal().draw(|frame| session.draw(frame))?;
        let info_area = session.info_area.get();
        if session.paint_preview(info_area, guard.terminal().backend_mut())? {
            guard.terminal().clear()?;
        }
        let moving = session.app.is_running()
            || session.started.elapsed() < LOAD_WINDOW
            || session.panel.is_active();
        let dozing = !moving && session.pet.animations();
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => session.on_terminal(event),
                Some(Err(err)) => return Err(err),
                None => break,
            },
            Some(event) = run_rx.recv() => {
                let done = matches!(event, RunEvent::Final { .. });
                session.app.on_event(&event);
                if done {
                    session.pet_watch.stop();
                    session.pet.clear_model_reply();
                    session.running = None;
                    session.start_next();
                }
            }
            Some(pending) = approvals.recv() => session.panel.push(pending),
            probed = &mut brain_rx, if brain_pending => {
                brain_pending = false;
                if let Ok((brain, sandbox)) = probed {
                    session.app.set_configured_brain(brain);
                    session.app.set_sandbox(sandbox);
                }
            }
            Some(lines) = info_rx.recv() => session.info = Some(lines),
            Some(message) = pet_rx.recv() => session.pet_watch.on_message(message, &mut session.pet),
            _ = tokio::time::sleep_until(session.pet_watch.deadline()), if session.pet_watch.armed() => {
                session.ask_pet();
            }
            _ = tick.tick(), if moving => {
                session.input.poll();
                session.panel.prune_abandoned();
            }
            _ = pet_tick.tick(), if dozing => {}
        }
    }
    session.stop_running("the session was closed").await;
    session.mcp_hubs.shutdown().await;
    drop(guard);
    Ok(TuiExit {
        session_id: session.session_id.clone(),
        requests: session.app.turns().len(),
    })
}

/// How the session ended: what to tell the person to come back to it.
#[derive(Debug, Clone)]
pub struct TuiExit {
    /// The session last shown.
    pub session_id: SessionId,
    /// Requests shown in it (0: nothing to resume).
    pub requests: usize,
}

impl TuiExit {
    /// The line printed after the screen is restored, or `None` when nothing ran.
    pub fn resume_hint(&self) -> Option<String> {
        (self.requests > 0).then(|| {
            format!(
                "session {}: `braincode --continue` resumes it here, `braincode tui --session {}` from anywhere",
                self.session_id.short(),
                self.session_id.short()
            )
        })
    }
}

impl Session {
    fn draw(&self, frame: &mut ratatui::Frame<'_>) {
        let area = frame.area();
        let width = area.width;
        let panel_height = if self.panel.is_active() {
            self.panel.height(width)
        } else {
            // Command output may take the screen down to three transcript rows.
            let room = area
                .height
                .saturating_sub(self.input.height(width))
                .saturating_sub(4);
            self.info
                .as_ref()
                .map_or(0, |lines| panels::info_height(lines, width).min(room))
        };
        let areas = view::layout(area, self.input.height(width), panel_height);
        view::draw_with_pet(frame, areas.view, &self.app, &self.pet, now_ms());
        if self.app.turns().is_empty() {
            let (transcript, _) = view::split_pet(areas.transcript);
            draw_welcome(frame, transcript, &self.options.project_root);
        }
        if self.panel.is_active() {
            crate::approval::draw(frame, areas.panel, &self.panel);
        } else if let Some(lines) = &self.info {
            draw_info(frame, areas.panel, lines);
        }
        self.info_area
            .set((!self.panel.is_active() && self.info.is_some()).then_some(areas.panel));
        input::draw(frame, areas.input, &self.input);
        if self.palette == view::theme::Palette::Light {
            view::theme::adapt(frame.buffer_mut(), area);
        }
    }

    /// The latest request's intent graph (`/intent`, Ctrl+O).
    fn intent(&self) -> Vec<String> {
        match self.app.turns().last() {
            Some(turn) => {
                crate::intent::intent_lines(&turn.state().report(), turn.state().dependencies())
            }
            None => vec!["no request yet: /intent (Ctrl+O) shows the latest request's plan".into()],
        }
    }

    fn note(&mut self, line: impl Into<String>) {
        self.info.get_or_insert_with(Vec::new).push(line.into());
    }

    fn on_terminal(&mut self, event: Event) {
        match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => self.on_key(key),
            Event::Paste(text) if self.panel.is_active() => self.panel.handle_paste(&text),
            Event::Paste(text) => {
                // A file dragged into the terminal pastes its path: an image is attached.
                let home_dir = std::env::var_os("HOME").map(PathBuf::from);
                match crate::image::pasted_image_path(
                    &text,
                    &self.options.project_root,
                    home_dir.as_deref(),
                ) {
                    Some(path) => self.attach_image(&path.to_string_lossy()),
                    None => self.input.handle_paste(text),
                }
            }
            _ => {}
        }
    }

    fn on_key(&mut self, key: KeyEvent) {
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl_c {
            self.on_ctrl_c();
            return;
        }
        let ctrl_v =
            key.code == KeyCode::Char('v') && key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl_v && !self.panel.is_active() {
            self.paste_clipboard_image();
            return;
        }
        if self.panel.is_active() {
            if let PanelAction::Unhandled = self.panel.handle_key(key) {
                self.on_ctrl_c();
            }
            return;
        }
        match self.input.handle_key(key) {
            InputAction::None => {}
            InputAction::Submit(text) => self.submit(text),
            InputAction::SlashCommand(Ok(command)) => self.command(command),
            InputAction::SlashCommand(Err(message)) => self.info = Some(vec![message]),
            InputAction::Cancel => self.on_escape(),
            InputAction::Unhandled => self.navigate(key),
        }
    }

    /// Keys the editor leaves: transcript scrolling, selection, expanding, Ctrl-D.
    fn navigate(&mut self, key: KeyEvent) {
        let ctrl_or_alt = key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::PageUp => self.app.page_up(),
            KeyCode::PageDown => self.app.page_down(),
            KeyCode::Up if ctrl_or_alt => self.app.select_prev(),
            KeyCode::Down if ctrl_or_alt => self.app.select_next(),
            KeyCode::Tab if self.app.selection().is_some() => {
                self.app.toggle_expanded();
            }
            KeyCode::BackTab => self.set_permission(self.permission.next()),
            KeyCode::Char('o') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                let lines = self.intent();
                if self.info.as_ref() == Some(&lines) {
                    self.info = None;
                } else {
                    self.info = Some(lines);
                }
            }
            KeyCode::Char('d') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                if self.running.is_some() {
                    self.note("a request is still running: Esc interrupts it, Ctrl-C twice quits");
                } else {
                    self.quit = true;
                }
            }
            _ => {}
        }
    }

    fn on_escape(&mut self) {
        if self.info.take().is_some() {
            return;
        }
        if self.app.selection().is_some() {
            self.app.clear_selection();
            return;
        }
        if let Some(running) = &self.running {
            let _ = running.reason.set("Esc pressed".into());
            running.cancel.cancel();
            self.panel.deny_all("interrupted by Esc");
        }
    }

    fn on_ctrl_c(&mut self) {
        let again = self.ctrl_c_at.is_some_and(|at| at.elapsed() < DOUBLE_PRESS);
        if again {
            self.quit = true;
            return;
        }
        self.ctrl_c_at = Some(Instant::now());
        if let Some(running) = &self.running {
            let _ = running.reason.set("Ctrl-C pressed".into());
            running.cancel.cancel();
            self.panel.deny_all("interrupted by Ctrl-C");
            self.note("request interrupted; press Ctrl-C again to quit");
        } else {
            self.note("press Ctrl-C again to quit");
        }
    }

    fn submit(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        if self.running.is_some() {
            self.queue.push_back(text);
            self.pet.set_queued(self.queue.len());
            self.note(format!(
                "queued: it runs when the current request ends ({} waiting)",
                self.queue.len()
            ));
            return;
        }
        self.start(text);
    }

    fn start_next(&mut self) {
        if let Some(next) = self.queue.pop_front() {
            self.pet.set_queued(self.queue.len());
            self.start(next);
        }
    }

    fn services(&self) -> RunServices {
        let mut services = RunServices::new(self.options.home.clone());
        services
            .subscribers
            .push(Arc::new(ChannelSubscriber(self.run_tx.clone())));
        services.approver = Some(self.approver.clone());
        services.mcp_hubs = Some(self.mcp_hubs.clone());
        services
    }

    fn request(&self, prompt: String) -> RunRequest {
        RunRequest {
            session_id: Some(self.session_id.clone()),
            brain_id: self.brain.clone(),
            mode: self.mode,
            permission: self.permission,
            allow_network: self.options.allow_network,
            ..RunRequest::new(prompt, self.options.project_root.clone())
        }
    }

    fn start(&mut self, prompt: String) {
        self.start_routed(prompt, RoutingChoice::Auto);
    }

    /// Starts `prompt` planned by `routing` (`/team-test`: every role answers).
    fn start_routed(&mut self, prompt: String, routing: RoutingChoice) {
        self.info = None;
        if self.permission == PermissionMode::ReadOnly
            && braincode_brain::Signals::detect(&prompt).file_edit
        {
            // It runs (an explanation may be all that is wanted) but says it changes nothing.
            self.info = Some(vec![
                "read-only mode: this request asks for a change, and nothing will be changed"
                    .into(),
                "Shift+Tab switches to ask mode (each edit asks first, with its diff)".into(),
            ]);
        }
        self.app.begin_turn(prompt.clone());
        let services = self.services();
        let cancel = services.cancel.clone();
        let reason = services.cancel_reason.clone();
        let request = RunRequest {
            routing,
            images: std::mem::take(&mut self.pending_images),
            ..self.request(prompt)
        };
        let handle = tokio::spawn(run(request, services));
        self.pet_watch
            .start(&self.options.home, self.brain.clone(), &self.pet);
        self.running = Some(Running {
            cancel,
            reason,
            handle,
        });
    }

    /// Asks the pet model about the running request, when its panel is on screen.
    fn ask_pet(&mut self) {
        let visible =
            crossterm::terminal::size().is_ok_and(|(width, _)| view::pet_width(width).is_some());
        let snapshot = crate::pet::snapshot(&self.app, self.queue.len());
        self.pet_watch
            .ask(snapshot, &self.session_id, visible, &self.pet);
    }

    /// Cancels the running request and waits (briefly) for its end to be journaled.
    async fn stop_running(&mut self, reason: &str) {
        self.panel.deny_all(reason);
        if let Some(running) = self.running.take() {
            let _ = running.reason.set(reason.to_string());
            running.cancel.cancel();
            let _ = tokio::time::timeout(QUIT_GRACE, running.handle).await;
        }
    }
}
