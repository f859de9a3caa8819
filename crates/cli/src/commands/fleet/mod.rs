//! `braincode fleet`: a task queue and workers on NATS JetStream (see `braincode-fleet`).

mod budget;
mod follow;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use braincode_config::Home;
use braincode_fleet::task::{Permission, parse_tasks_jsonl};
use braincode_fleet::worker::WorkerConfig;
use braincode_fleet::{Fleet, NatsOptions, TaskSpec, TaskState, TaskStatus};

/// `braincode fleet …`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Start a server with `nats-server -js`, then workers on any machines that reach it \
(`braincode fleet worker --nats nats://HOST:4222`), then submit tasks from anywhere. \
BRAINCODE_NATS holds the URL when --nats is not given.")]
pub struct FleetArgs {
    #[command(flatten)]
    nats: NatsArgs,
    #[command(subcommand)]
    command: FleetCommand,
}

/// How to reach the NATS server.
#[derive(Debug, clap::Args)]
struct NatsArgs {
    /// The NATS server (`nats://host:4222`; a cluster: comma-separated URLs).
    #[arg(long, global = true, value_name = "URL")]
    nats: Option<String>,
    /// User name (with --nats-password).
    #[arg(long, global = true, value_name = "USER")]
    nats_user: Option<String>,
    /// Password (or BRAINCODE_NATS_PASSWORD).
    #[arg(long, global = true, value_name = "PASSWORD")]
    nats_password: Option<String>,
    /// Token (or BRAINCODE_NATS_TOKEN).
    #[arg(long, global = true, value_name = "TOKEN")]
    nats_token: Option<String>,
    /// A file holding an nkey seed.
    #[arg(long, global = true, value_name = "FILE")]
    nats_nkey: Option<PathBuf>,
    /// A `.creds` file (JWT and nkey seed).
    #[arg(long, global = true, value_name = "FILE")]
    nats_creds: Option<PathBuf>,
    /// Require TLS.
    #[arg(long, global = true)]
    nats_tls: bool,
    /// CA certificate(s) that sign the server's, PEM.
    #[arg(long, global = true, value_name = "FILE")]
    nats_tls_ca: Option<PathBuf>,
    /// Client certificate, PEM (with --nats-tls-key).
    #[arg(long, global = true, value_name = "FILE")]
    nats_tls_cert: Option<PathBuf>,
    /// Client key, PEM.
    #[arg(long, global = true, value_name = "FILE")]
    nats_tls_key: Option<PathBuf>,
    /// Replicas of the fleet's streams and buckets when they are first created (3 on a
    /// 3-node cluster).
    #[arg(long, global = true, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=5))]
    replicas: u8,
}

impl NatsArgs {
    fn options(&self, name: &str) -> NatsOptions {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        NatsOptions {
            url: self
                .nats
                .clone()
                .or_else(|| env("BRAINCODE_NATS"))
                .unwrap_or_default(),
            user: self.nats_user.clone(),
            password: self
                .nats_password
                .clone()
                .or_else(|| env("BRAINCODE_NATS_PASSWORD")),
            token: self
                .nats_token
                .clone()
                .or_else(|| env("BRAINCODE_NATS_TOKEN")),
            nkey_file: self.nats_nkey.clone(),
            creds_file: self.nats_creds.clone(),
            tls_ca: self.nats_tls_ca.clone(),
            tls_cert: self.nats_tls_cert.clone(),
            tls_key: self.nats_tls_key.clone(),
            tls: self.nats_tls,
            replicas: usize::from(self.replicas),
            name: Some(name.to_string()),
        }
    }
}

/// `--nats URL` of `sessions list|show`, `replay` and `config`: the fleet's journals copied
/// into this machine's sessions first (and, for the panel, as they are written).
#[derive(Debug, Clone, clap::Args)]
pub struct FleetJournals {
    /// Copy the fleet's journals from this NATS server into the local sessions first
    /// (credentials: BRAINCODE_NATS_PASSWORD or BRAINCODE_NATS_TOKEN; `braincode fleet sync`
    /// takes every connection option).
    #[arg(long = "nats", value_name = "URL")]
    pub url: Option<String>,
}

impl FleetJournals {
    /// Copies every fleet journal into `home`'s sessions, then (`follow`) keeps copying new
    /// records until the process ends. Nothing to do without `--nats`.
    pub async fn mirror(&self, home: &Home, follow: bool) -> anyhow::Result<()> {
        let Some(url) = &self.url else {
            return Ok(());
        };
        let args = NatsArgs {
            nats: Some(url.clone()),
            nats_user: None,
            nats_password: None,
            nats_token: None,
            nats_nkey: None,
            nats_creds: None,
            nats_tls: false,
            nats_tls_ca: None,
            nats_tls_cert: None,
            nats_tls_key: None,
            replicas: 1,
        };
        let name = format!("braincode-sessions-{}", std::process::id());
        let fleet = Fleet::connect(&args.options(&name))
            .await
            .map_err(anyhow::Error::msg)?;
        let dir = home.sessions_dir();
        let copied = braincode_fleet::journal::mirror(&fleet, &dir, follow)
            .await
            .map_err(anyhow::Error::msg)?;
        eprintln!(
            "{} fleet sessions ({} records) copied from {url}",
            copied.sessions, copied.lines
        );
        Ok(())
    }

    /// [`FleetJournals::mirror`] once, on a runtime of its own (for synchronous commands).
    pub fn mirror_now(&self, home: &Home) -> anyhow::Result<()> {
        if self.url.is_none() {
            return Ok(());
        }
        super::tokio_runtime()?.block_on(self.mirror(home, false))
    }
}

#[derive(Debug, clap::Subcommand)]
enum FleetCommand {
    /// Pull tasks from the queue and run them, until Ctrl-C (running tasks finish first).
    Worker(WorkerArgs),
    /// Queue a task (the words), or every task of a JSONL file, and print their ids.
    Submit(SubmitArgs),
    /// Every task and where it is.
    List(JsonArg),
    /// One task: its state, answer, error, session and patch size.
    Show(IdArgs),
    /// A task's journal, live, until it ends.
    Watch(IdArgs),
    /// Stop a task (queued: at once; running: its run is cancelled).
    Cancel(IdArgs),
    /// A finished task's patch (printed, or applied here), its report or its journal.
    Fetch(FetchArgs),
    /// Show the token and cost budgets, or set the fleet's (or a submitter's) with --tokens
    /// or --usd.
    Budget(budget::BudgetArgs),
    /// Copy every fleet run's journal into this machine's sessions (`--follow`: and keep
    /// copying, live), so `braincode sessions`, `replay` and the control panel see them.
    Sync(SyncArgs),
}

#[derive(Debug, clap::Args)]
struct SyncArgs {
    /// Keep copying new records as they are published, until Ctrl-C.
    #[arg(long)]
    follow: bool,
}

#[derive(Debug, clap::Args)]
struct WorkerArgs {
    /// Runs at once on this worker.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    concurrency: u16,
    /// This worker's name (default: host name and process id).
    #[arg(long)]
    name: Option<String>,
    /// Where task clones are made (default: `~/.cache/braincode-fleet/<name>`; never inside
    /// the Braincode home).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct SubmitArgs {
    /// The task's prompt.
    #[arg(
        value_name = "PROMPT",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    prompt: Vec<String>,
    /// Tasks, one JSON object per line: {"prompt", "repo", "ref", "brain", "mode",
    /// "permission", "maxTokens", "maxCost", "pushBranch", "submitter"}.
    #[arg(long, value_name = "JSONL")]
    file: Option<PathBuf>,
    /// The repository: a URL or a path every worker can read (default: the current
    /// directory's repository).
    #[arg(long, value_name = "URL|PATH", conflicts_with = "file")]
    repo: Option<String>,
    /// The commit, branch or tag to start from (default: the repository's HEAD).
    #[arg(long = "ref", value_name = "REF", conflicts_with = "file")]
    git_ref: Option<String>,
    /// The brain (default: each worker's own).
    #[arg(long, conflicts_with = "file")]
    brain: Option<String>,
    /// auto or radical.
    #[arg(long, conflicts_with = "file")]
    mode: Option<String>,
    /// read-only, allow-edits (default) or yes.
    #[arg(long, value_parser = ["read-only", "allow-edits", "yes"], conflicts_with = "file")]
    permission: Option<String>,
    /// Token budget of the run.
    #[arg(long, conflicts_with = "file")]
    max_tokens: Option<u64>,
    /// Cost budget of the run, in US dollars.
    #[arg(long, conflicts_with = "file")]
    max_cost: Option<f64>,
    /// Push the result to this branch of the repository.
    #[arg(long, value_name = "BRANCH", conflicts_with = "file")]
    push_branch: Option<String>,
    /// Who submits (default: $USER).
    #[arg(long)]
    submitter: Option<String>,
    /// Wait until every task ends; exit 1 if one did not end `done`.
    #[arg(long)]
    wait: bool,
    /// Print the ids (and with --wait, the states) as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct JsonArg {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct IdArgs {
    /// The task's id.
    id: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct FetchArgs {
    /// The task's id.
    id: String,
    /// Apply the patch to the repository in the current directory (`git apply`) instead of
    /// printing it.
    #[arg(long, conflicts_with_all = ["report", "journal"])]
    apply: bool,
    /// Print the run's report (JSON) instead.
    #[arg(long, conflicts_with = "journal")]
    report: bool,
    /// Copy the run's journal into this machine's sessions (then `braincode sessions show`,
    /// `replay` and the panel see it).
    #[arg(long)]
    journal: bool,
}

/// Runs the command.
pub fn execute(args: Box<FleetArgs>) -> anyhow::Result<ExitCode> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let runtime = super::tokio_runtime()?;
    runtime.block_on(async move {
        let name = match &args.command {
            FleetCommand::Worker(worker) => worker.name.clone().unwrap_or_else(default_name),
            _ => format!("braincode-fleet-{}", std::process::id()),
        };
        let fleet = Fleet::connect(&args.nats.options(&name))
            .await
            .map_err(anyhow::Error::msg)?;
        match args.command {
            FleetCommand::Worker(worker) => Box::pin(run_worker(fleet, &home, worker, name)).await,
            FleetCommand::Submit(submit) => run_submit(&fleet, submit).await,
            FleetCommand::List(list) => run_list(&fleet, list.json).await,
            FleetCommand::Show(show) => run_show(&fleet, &show).await,
            FleetCommand::Watch(watch) => follow::watch(&fleet, &watch.id, watch.json).await,
            FleetCommand::Cancel(cancel) => {
                let changed = braincode_fleet::cancel(&fleet, &cancel.id)
                    .await
                    .map_err(anyhow::Error::msg)?;
                println!(
                    "{}",
                    if changed {
                        format!("task {}: cancel asked", cancel.id)
                    } else {
                        format!("task {} had already ended", cancel.id)
                    }
                );
                Ok(ExitCode::SUCCESS)
            }
            FleetCommand::Fetch(fetch) => follow::fetch(&fleet, &home, &fetch).await,
            FleetCommand::Budget(args) => budget::run(&fleet, &args).await,
            FleetCommand::Sync(sync) => {
                let dir = home.sessions_dir();
                let copied = braincode_fleet::journal::mirror(&fleet, &dir, sync.follow)
                    .await
                    .map_err(anyhow::Error::msg)?;
                println!(
                    "{} fleet sessions ({} records) in {}",
                    copied.sessions,
                    copied.lines,
                    dir.display()
                );
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}

/// `$XDG_CACHE_HOME/braincode-fleet/<name>` (else `~/.cache/…`, else the temp dir): clones
/// are made there, never inside the Braincode home, which runs may not touch.
fn default_work_dir(name: &str) -> PathBuf {
    let env = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let cache = env("XDG_CACHE_HOME")
        .or_else(|| env("HOME").map(|home| home.join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache
        .join("braincode-fleet")
        .join(braincode_protocol::safe_name(name))
}

fn default_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "worker".to_string());
    format!("{host}-{}", std::process::id())
}

async fn run_worker(
    fleet: Fleet,
    home: &Home,
    args: WorkerArgs,
    name: String,
) -> anyhow::Result<ExitCode> {
    let program = std::env::current_exe().context("cannot find the braincode program")?;
    let work_dir = match args.work_dir {
        Some(dir) => dir,
        None => default_work_dir(&name),
    };
    std::fs::create_dir_all(&work_dir)
        .with_context(|| format!("cannot make the work directory {}", work_dir.display()))?;
    let work_dir = work_dir.canonicalize()?;
    if let Ok(home_root) = home.root().canonicalize()
        && work_dir.starts_with(&home_root)
    {
        anyhow::bail!(
            "the work directory {} is inside the Braincode home {}, which runs may not touch; pick another with --work-dir",
            work_dir.display(),
            home_root.display()
        );
    }
    let config = WorkerConfig {
        name,
        concurrency: usize::from(args.concurrency),
        place: braincode_fleet::run::RunPlace {
            program,
            home: home.root().to_path_buf(),
            work_dir,
        },
        log: std::sync::Arc::new(|line: String| eprintln!("{line}")),
    };
    let shutdown = async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
        }
    };
    Box::pin(braincode_fleet::worker::serve(fleet, config, shutdown))
        .await
        .map_err(anyhow::Error::msg)?;
    Ok(ExitCode::SUCCESS)
}

async fn run_submit(fleet: &Fleet, args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let submitter = args
        .submitter
        .clone()
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()));
    let tasks = match &args.file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let mut tasks = parse_tasks_jsonl(&text, &path.display().to_string())
                .map_err(anyhow::Error::msg)?;
            for task in &mut tasks {
                if task.submitter.is_none() {
                    task.submitter.clone_from(&submitter);
                }
            }
            tasks
        }
        None => {
            let repo = match &args.repo {
                Some(repo) => repo.clone(),
                None => super::project_root(None)?.display().to_string(),
            };
            vec![TaskSpec {
                prompt: args.prompt.join(" "),
                repo,
                git_ref: args.git_ref.clone(),
                brain: args.brain.clone(),
                mode: args.mode.clone(),
                permission: match args.permission.as_deref() {
                    Some("read-only") => Permission::ReadOnly,
                    Some("yes") => Permission::Yes,
                    _ => Permission::AllowEdits,
                },
                max_tokens: args.max_tokens,
                max_cost: args.max_cost,
                push_branch: args.push_branch.clone(),
                submitter,
            }]
        }
    };
    let ids = braincode_fleet::submit(fleet, tasks)
        .await
        .map_err(anyhow::Error::msg)?;
    if !args.wait {
        if args.json {
            println!("{}", serde_json::to_string(&ids)?);
        } else {
            for id in &ids {
                println!("{id}");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut states = Vec::new();
    for id in &ids {
        let state = loop {
            match fleet.state(id).await.map_err(anyhow::Error::msg)? {
                Some((state, _)) if state.status.is_final() => break state,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        if !args.json {
            print_state_line(&state);
        }
        states.push(state);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&states)?);
    }
    let all_done = states.iter().all(|s| s.status == TaskStatus::Done);
    Ok(if all_done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_state_line(state: &TaskState) {
    let what = state
        .error
        .as_deref()
        .or(state.answer.as_deref())
        .unwrap_or_default();
    let what: String = what
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(80)
        .collect();
    println!(
        "{:<28} {:<9} {:<24} {}",
        state.id,
        state.status.as_str(),
        state.worker.as_deref().unwrap_or("-"),
        what
    );
}

async fn run_list(fleet: &Fleet, json: bool) -> anyhow::Result<ExitCode> {
    let states = fleet.list().await.map_err(anyhow::Error::msg)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&states)?);
        return Ok(ExitCode::SUCCESS);
    }
    if states.is_empty() {
        println!("no task in the fleet at {}", fleet.url);
    }
    for state in &states {
        print_state_line(state);
    }
    Ok(ExitCode::SUCCESS)
}

async fn run_show(fleet: &Fleet, args: &IdArgs) -> anyhow::Result<ExitCode> {
    let Some((state, _)) = fleet.state(&args.id).await.map_err(anyhow::Error::msg)? else {
        anyhow::bail!(
            "no task {} in the fleet at {}; `braincode fleet list` shows them",
            args.id,
            fleet.url
        );
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&state)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "task      {}", state.id)?;
    writeln!(out, "status    {}", state.status.as_str())?;
    if let Some(task) = &state.task {
        writeln!(
            out,
            "repo      {} {}",
            task.repo,
            task.git_ref.as_deref().unwrap_or("HEAD")
        )?;
        writeln!(out, "prompt    {}", task.prompt)?;
    }
    for (label, value) in [
        ("worker", state.worker.as_deref()),
        ("session", state.session.as_deref()),
        ("commit", state.commit.as_deref()),
        ("run", state.run_status.as_deref()),
        ("branch", state.pushed_branch.as_deref()),
        ("error", state.error.as_deref()),
    ] {
        if let Some(value) = value {
            writeln!(out, "{label:<9} {value}")?;
        }
    }
    writeln!(out, "delivered {} time(s)", state.deliveries)?;
    if let Some(tokens) = state.tokens {
        let cost = state.cost_micro_usd.unwrap_or(0) as f64 / 1e6;
        writeln!(out, "used      {tokens} tokens, ${cost:.4}")?;
    }
    match state.patch_bytes {
        Some(0) => writeln!(out, "patch     none: the run changed no file")?,
        Some(bytes) => writeln!(
            out,
            "patch     {bytes} bytes (`braincode fleet fetch {}`; --apply applies it here)",
            state.id
        )?,
        None => {}
    }
    if let Some(answer) = &state.answer {
        writeln!(out, "\n{answer}")?;
    }
    Ok(ExitCode::SUCCESS)
}
