//! [`TestRun`]: one orchestrated run, in process, against scripted models — a temporary home
//! and project, the run's memory journal, its events and every model request.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use braincode_config::{Home, Settings};
use braincode_protocol::{FinalReport, Mode, ModelDefinition, SessionId};
use braincode_runtime::{
    EventSubscriber, JournalTarget, MemoryJournal, PermissionMode, RoutingChoice, RunRequest,
    RunServices, run,
};
use braincode_test_support::{TempHome, TempRepo};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::call::RequestLog;
use super::fixtures::{BrainConfig, TEST_BRAIN_ID, scripted_model};
use super::journal::{JournalView, LiveJournal};
use super::script::ScriptedModels;
use braincode_test_support::Script;

/// The longest a test run may take before the kit gives up on it (a guard against a hung
/// test, not a timing assertion).
pub const RUN_GUARD: Duration = Duration::from_secs(120);

/// The project a run works in: a git repository or a plain directory.
pub enum Project {
    /// A git repository with an initial commit.
    Git(TempRepo),
    /// A plain temporary directory.
    Plain(tempfile::TempDir),
    /// A directory the test owns (several runs in one project).
    Given(PathBuf),
}

impl Project {
    /// The project root.
    pub fn path(&self) -> &Path {
        match self {
            Project::Git(repo) => repo.path(),
            Project::Plain(dir) => dir.path(),
            Project::Given(path) => path,
        }
    }
}

/// The temporary home and project of a run; removed when dropped.
pub struct Fixtures {
    /// The Braincode home.
    pub home: TempHome,
    /// The project.
    pub project: Project,
}

/// Builds one in-process run. Defaults: the [`BrainConfig::per_role`] brain in mode `auto`,
/// a plain project directory, read-only, routing `auto`, and an empty script.
pub struct TestRun {
    prompt: String,
    brain: BrainConfig,
    extra_models: Vec<ModelDefinition>,
    models_json: Option<Value>,
    brains_json: Option<Value>,
    settings: Settings,
    permission: PermissionMode,
    routing: RoutingChoice,
    mode: Option<Mode>,
    git: bool,
    files: Vec<(String, String)>,
    home_files: Vec<(String, String)>,
    shared: Option<(
        Arc<braincode_runtime::McpHubCache>,
        Arc<tokio::runtime::Runtime>,
    )>,
    project_dir: Option<PathBuf>,
    script: Script,
    session_id: Option<SessionId>,
    trusted: bool,
}

impl TestRun {
    /// A run of `prompt`.
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            brain: BrainConfig::per_role(),
            extra_models: Vec::new(),
            models_json: None,
            brains_json: None,
            settings: Settings {
                default_brain_id: TEST_BRAIN_ID.to_string(),
                mode: Mode::Auto,
                ..Settings::default()
            },
            permission: PermissionMode::ReadOnly,
            routing: RoutingChoice::Auto,
            mode: None,
            git: false,
            files: Vec::new(),
            home_files: Vec::new(),
            shared: None,
            project_dir: None,
            script: Script::new(),
            session_id: None,
            trusted: false,
        }
    }
    /// The brain (its model ids make up `models.json`, plus [`model`](Self::model)s).
    pub fn brain(mut self, brain: BrainConfig) -> Self {
        self.brain = brain;
        self
    }
    /// Adds a catalogue entry.
    pub fn model(mut self, definition: ModelDefinition) -> Self {
        self.extra_models.push(definition);
        self
    }
    /// Writes this `models.json` verbatim instead of the one derived from the brain.
    pub fn models_json(mut self, document: Value) -> Self {
        self.models_json = Some(document);
        self
    }
    /// Writes this `brains.json` verbatim instead of the typed brain.
    pub fn brains_json(mut self, document: Value) -> Self {
        self.brains_json = Some(document);
        self
    }
    /// Changes `settings.json` (defaults: brain `test`, mode `auto`).
    pub fn settings(mut self, change: impl FnOnce(&mut Settings)) -> Self {
        change(&mut self.settings);
        self
    }
    /// How much the run may change.
    pub fn permission(mut self, permission: PermissionMode) -> Self {
        self.permission = permission;
        self
    }
    /// How the run is planned.
    pub fn routing(mut self, routing: RoutingChoice) -> Self {
        self.routing = routing;
        self
    }
    /// The run's mode (instead of the settings').
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }
    /// Makes the project a git repository (`git init` and an initial commit).
    pub fn git_repo(mut self) -> Self {
        self.git = true;
        self
    }
    /// Writes a project file before the run (committed when the project is a git repo).
    pub fn file(mut self, relative: &str, text: &str) -> Self {
        self.files.push((relative.to_string(), text.to_string()));
        self
    }
    /// Writes a file of the Braincode home before the run (e.g. `mcp.json`).
    pub fn home_file(mut self, relative: &str, text: &str) -> Self {
        self.home_files
            .push((relative.to_string(), text.to_string()));
        self
    }
    /// Runs like one request of an interactive session: on `runtime` (shared with the
    /// session's other runs) with the session's MCP hub cache.
    pub fn in_session(
        mut self,
        hubs: Arc<braincode_runtime::McpHubCache>,
        runtime: Arc<tokio::runtime::Runtime>,
    ) -> Self {
        self.shared = Some((hubs, runtime));
        self
    }
    /// Runs in this existing directory instead of a fresh project (project files are not
    /// written).
    pub fn project_dir(mut self, path: &Path) -> Self {
        self.project_dir = Some(path.to_path_buf());
        self
    }
    /// The scripted models' script.
    pub fn script(mut self, script: Script) -> Self {
        self.script = script;
        self
    }
    /// Continues this session instead of starting a new one.
    pub fn session(mut self, id: SessionId) -> Self {
        self.session_id = Some(id);
        self
    }

    /// The project is trusted (`braincode trust`) before the run: its checks run without a
    /// person.
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    fn fixtures(&self) -> Fixtures {
        let home = TempHome::new();
        match &self.models_json {
            Some(document) => {
                home.write_json("models.json", document);
            }
            None => {
                let mut models: Vec<ModelDefinition> = self
                    .brain
                    .model_ids()
                    .iter()
                    .map(|id| scripted_model(id))
                    .collect();
                models.extend(self.extra_models.iter().cloned());
                home.write_models(&models);
            }
        }
        match &self.brains_json {
            Some(document) => home.write_brains(document),
            None => home.write_brains(&to_json(&self.brain.document())),
        };
        home.write_settings(&to_json(&self.settings));
        for (relative, text) in &self.home_files {
            std::fs::write(home.path().join(relative), text)
                .unwrap_or_else(|err| panic!("write {relative} in the home: {err}"));
        }
        if let Some(path) = &self.project_dir {
            return Fixtures {
                home,
                project: Project::Given(path.clone()),
            };
        }
        let project = if self.git {
            let repo = TempRepo::new();
            for (relative, text) in &self.files {
                repo.write(relative, text);
            }
            if !self.files.is_empty() {
                repo.commit("test files");
            }
            Project::Git(repo)
        } else {
            let dir = tempfile::Builder::new()
                .prefix("braincode-project-")
                .tempdir()
                .unwrap_or_else(|err| panic!("create a temporary project: {err}"));
            for (relative, text) in &self.files {
                let path = dir.path().join(relative);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .unwrap_or_else(|err| panic!("create {}: {err}", parent.display()));
                }
                std::fs::write(&path, text)
                    .unwrap_or_else(|err| panic!("write {}: {err}", path.display()));
            }
            Project::Plain(dir)
        };
        Fixtures { home, project }
    }

    /// Starts the run on the current runtime and returns at once.
    pub fn start(self) -> LiveRun {
        let fixtures = self.fixtures();
        if self.trusted {
            let home = Home::at(fixtures.home.path());
            braincode_config::trust_project(&home, fixtures.project.path())
                .unwrap_or_else(|err| panic!("trust the project: {err}"));
        }
        let models = ScriptedModels::new(self.script);
        let memory = MemoryJournal::default();
        let live = LiveJournal::default();
        let mut services = RunServices::new(Home::at(fixtures.home.path()));
        services.client_override = Some(Arc::new(models.clone()));
        services.journal = JournalTarget::Memory(memory.clone());
        let subscriber: Arc<dyn EventSubscriber> = Arc::new(live.clone());
        services.subscribers = vec![subscriber];
        let cancel = services.cancel.clone();
        let cancel_reason = services.cancel_reason.clone();
        let shared_runtime = self.shared.map(|(hubs, runtime)| {
            services.mcp_hubs = Some(hubs);
            runtime
        });
        let request = RunRequest {
            session_id: self.session_id,
            mode: self.mode,
            permission: self.permission,
            routing: self.routing,
            ..RunRequest::new(self.prompt, fixtures.project.path().to_path_buf())
        };
        // `run`'s future is not `Send` (the CLI blocks on it): it gets a thread and a runtime
        // of its own, as in the binary, and the test's runtime stays free to watch it.
        let (done, handle) = oneshot::channel();
        std::thread::Builder::new()
            .name("braincode-test-run".into())
            .spawn(move || {
                let report = match shared_runtime {
                    Some(runtime) => runtime.block_on(Box::pin(run(request, services))),
                    None => {
                        let runtime = tokio::runtime::Builder::new_multi_thread()
                            .worker_threads(2)
                            .enable_all()
                            .build()
                            .unwrap_or_else(|err| panic!("build the run's runtime: {err}"));
                        runtime.block_on(Box::pin(run(request, services)))
                    }
                };
                let _ = done.send(report);
            })
            .unwrap_or_else(|err| panic!("start the run's thread: {err}"));
        LiveRun {
            handle,
            fixtures,
            models,
            memory,
            live,
            cancel,
            cancel_reason,
        }
    }

    /// Runs to the one final answer.
    pub async fn run(self) -> TestOutcome {
        self.start().finish().await
    }
}

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_else(|err| panic!("serialize a fixture: {err}"))
}

/// A run in flight.
pub struct LiveRun {
    handle: oneshot::Receiver<FinalReport>,
    fixtures: Fixtures,
    models: ScriptedModels,
    memory: MemoryJournal,
    live: LiveJournal,
    cancel: CancellationToken,
    cancel_reason: Arc<OnceLock<String>>,
}

impl LiveRun {
    /// The run's events as they come (wait on it with [`LiveJournal::wait_for`]).
    pub fn journal(&self) -> &LiveJournal {
        &self.live
    }
    /// The model requests so far.
    pub fn requests(&self) -> RequestLog {
        self.models.log()
    }
    /// The project root.
    pub fn project(&self) -> PathBuf {
        self.fixtures.project.path().to_path_buf()
    }
    /// Cancels the run, as Ctrl-C would, saying `reason`.
    pub fn cancel(&self, reason: &str) {
        let _ = self.cancel_reason.set(reason.to_string());
        self.cancel.cancel();
    }
    /// Waits for the run's report (at most [`RUN_GUARD`]).
    pub async fn finish(self) -> TestOutcome {
        let report = match tokio::time::timeout(RUN_GUARD, self.handle).await {
            Ok(Ok(report)) => report,
            Ok(Err(_)) => panic!("the run's thread stopped without a report (it panicked)"),
            Err(_) => panic!(
                "the run did not finish within {RUN_GUARD:?}; records: {:?}",
                self.live.snapshot().types()
            ),
        };
        TestOutcome {
            report,
            journal: JournalView::new(self.memory.entries()),
            requests: self.models.log(),
            events: self.live,
            fixtures: self.fixtures,
        }
    }
}

/// What a finished run left: its report, its journal, the model requests and the events.
pub struct TestOutcome {
    /// The report `run` returned.
    pub report: FinalReport,
    /// The records of the memory journal.
    pub journal: JournalView,
    /// Every model request.
    pub requests: RequestLog,
    /// What subscribers saw (records, statuses, the final answer).
    pub events: LiveJournal,
    /// The home and project (still on disk until the outcome is dropped).
    pub fixtures: Fixtures,
}

impl TestOutcome {
    /// The report the fold of the journal gives.
    pub fn folded_report(&self) -> FinalReport {
        self.journal.fold(&self.report.session_id)
    }
    /// The project root.
    pub fn project(&self) -> &Path {
        self.fixtures.project.path()
    }
}
