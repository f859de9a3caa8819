//! `braincode bench writers`: what parallel writers cost and what they save.
//!
//! Four measurements, in process, with a scripted model answering every call after a fixed
//! delay; the writers edit for real, in real git worktrees under `TMPDIR` (checked out
//! sparsely: a file is written when a writer first uses it), confined by the OS sandbox:
//! 1. wall time of a full run whose plan has 3 writers (frontend, dba, devops, each editing its
//!    own file; backend primary), against one writer and against the same 3 writers one after
//!    another (their todos chained by dependencies: `maxParallelAgents: 1` would also cap the
//!    plan at one worker and drop them); every 3-writer run must merge each writer cleanly;
//! 2. `WriterWorktrees::start` (the snapshot; a run takes it while its router call is out),
//!    3 `add`s asked for at once (as a run does) and `remove_all` on 10,000 files, and a
//!    command's first run in a worktree (every file written out before it);
//! 3. the merge-back of run 1's writers: last writer's `worker_end` → last `writer_merge`;
//! 4. the disk one writer's worktree takes on that repository (it read and edited one file),
//!    against its working tree.
//!
//! Measurements 2 and 4 are in [`super::writers_worktrees`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_config::Home;
use braincode_protocol::{
    FinalStatus, JournalEntry, MergeOutcome, Record, Role, Usage, WorkerPhase,
};
use braincode_runtime::{
    JournalTarget, MemoryJournal, PermissionMode, RunRequest, RunServices, run,
};
use braincode_scripted::{CallKind, Reply, Script, ScriptedModel};
use serde::Serialize;
use serde_json::{Value, json};

use super::median;
use super::overhead::{SameClient, fixture, git_commit_all, instant};
use super::overhead::{reply_for, request};
use super::writers_worktrees::{WorktreeFigures, measure_worktrees};

/// Arguments of `braincode bench writers`.
#[derive(Debug, clap::Args)]
pub struct WritersBenchArgs {
    /// Timed runs per measurement (after 1 warm-up run).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Model latency per call, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub delay_ms: u64,
    /// Files in the generated repository the worktrees are timed on.
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

const PROMPT: &str = "Add the signup form, its users table and its deploy step";

/// The writers: role, the file it edits, that file's content before. Each edit replaces the
/// file's one `TODO`.
const WRITERS: [(Role, &str, &str); 3] = [
    (Role::Frontend, "web/form.ts", "let f = []; // TODO\n"),
    (Role::Dba, "db/schema.sql", "-- TODO: users\n"),
    (Role::Devops, "deploy/ci.yml", "steps: [] # TODO\n"),
];

/// The primary: not a writer (the primary edits the project itself).
const PRIMARY: Role = Role::Backend;

/// A run's wall time and merge window, in ms.
type Timed = anyhow::Result<(f64, Option<f64>)>;

/// A model that answers every call after `delay`: the router with `setup`'s plan, each writer
/// first with an `edit_file` call on its file and then, on its tool turn, with its result; the
/// reviewer approves, the primary answers.
fn writer_model(delay: Duration, setup: Setup) -> ScriptedModel {
    ScriptedModel::new(Script::from_fn(move |request| {
        let who = request.kind();
        let tool_turn = request.is_tool_turn();
        let offers_edit = request.tools.iter().any(|t| t == "edit_file");
        // A writer's work is two calls (its edit, then its result). A worker offered no tools
        // (the one-writer baseline, where the writer runs as a plain support worker) answers
        // in one, so that call lasts two: the model time is the same, the rest is Braincode's.
        let calls = 1 + u32::from(who == CallKind::Support && !offers_edit && !tool_turn);
        let edit = (who == CallKind::Support && offers_edit && !tool_turn)
            .then(|| writer_of(request.role()))
            .flatten();
        let reply = match (who, edit) {
            (CallKind::Router, _) => instant(router_decision(setup)),
            (CallKind::Support, Some((role, path, _))) => {
                let args = json!({"path": path, "oldString": "TODO", "newString": format!("done by {role}")});
                Reply::tool_call("edit_file", args).with_usage(Usage::new(100, 20, 0, 0))
            }
            (other, _) => instant(reply_for(other)),
        };
        reply.delayed(delay * calls)
    }))
}

/// The writer whose system prompt a request carries, by its role.
fn writer_of(role: Option<Role>) -> Option<(Role, &'static str, &'static str)> {
    WRITERS
        .into_iter()
        .find(|(writer, ..)| Some(*writer) == role)
}

/// The router's plan for `setup`: the backend primary and its writers (the first of
/// [`WRITERS`]) as support workers; chained, each writer's todo waits for the previous one's.
fn router_decision(setup: Setup) -> String {
    let roles: Vec<Role> = (WRITERS.iter().take(setup.writers()))
        .map(|(role, ..)| *role)
        .chain([PRIMARY])
        .collect();
    let workers: Vec<Value> = (roles.iter())
        .map(|r| json!({"role": r.as_str(), "goal": format!("Do the {r} part"), "reason": format!("{r} work")}))
        .collect();
    let todos: Vec<Value> = (roles.iter())
        .map(|r| json!({"id": format!("todo-{r}"), "title": format!("{r} part"), "role": r.as_str()}))
        .collect();
    let dependencies: Vec<Value> = match setup {
        Setup::Sequential => (roles.windows(2))
            .filter(|pair| pair[1] != PRIMARY)
            .map(|pair| json!({"from": format!("todo-{}", pair[0]), "to": format!("todo-{}", pair[1])}))
            .collect(),
        Setup::Parallel | Setup::One => Vec::new(),
    };
    json!({
        "role": PRIMARY.as_str(),
        "workers": workers,
        "todos": todos,
        "dependencies": dependencies,
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "confidence": 0.9,
        "reason": "one writer per part"
    })
    .to_string()
}

/// How the runs of one measurement are set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// 3 writers, as many in parallel as they are.
    Parallel,
    /// 1 writer: the run says "writers not parallel" and runs it as a plain support worker.
    One,
    /// 3 writers, one after another: each one's todo depends on the previous one's.
    Sequential,
}

impl Setup {
    fn writers(self) -> usize {
        match self {
            Setup::Parallel | Setup::Sequential => 3,
            Setup::One => 1,
        }
    }
}

/// A temp home whose `bench` brain has parallel writers, and a git repository with the
/// writers' files.
fn run_fixture() -> anyhow::Result<(tempfile::TempDir, PathBuf, PathBuf)> {
    let (dir, home, repo) = fixture("http://127.0.0.1:9/v1")?;
    let brains = home.join("brains.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&brains)?)?;
    config["brains"][0]["routing"] = json!({
        "maxParallelAgents": 5,
        "parallelWriters": true
    });
    std::fs::write(&brains, config.to_string())?;
    reset_writer_files(&repo)?;
    git_commit_all(&repo, false, "the writers' files")?;
    Ok((dir, home, repo))
}

/// Puts the writers' files back as committed (a run's merges changed them).
fn reset_writer_files(repo: &Path) -> anyhow::Result<()> {
    for (_, path, content) in WRITERS {
        let path = repo.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, content)?;
    }
    Ok(())
}

/// One full run of `setup`: its wall time and (3 writers in parallel) its merge window
/// ([`merge_window_ms`]); an error unless it was approved with the merges `setup` expects.
async fn timed_run(setup: Setup, home: &Path, repo: &Path, delay: Duration) -> Timed {
    let memory = MemoryJournal::default();
    let mut services = RunServices::new(Home::at(home));
    services.client_override = Some(Arc::new(SameClient(writer_model(delay, setup).client())));
    services.journal = JournalTarget::Memory(memory.clone());
    let bench_request = RunRequest {
        prompt: PROMPT.into(),
        permission: PermissionMode::AllowEdits,
        ..request(repo)
    };
    let started = Instant::now();
    let report = run(bench_request, services).await;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        report.status == FinalStatus::Approved,
        "the {setup:?} bench run ended {}: {} (warnings: {:?})",
        report.status.as_str(),
        report.error.clone().unwrap_or_default(),
        report.warnings
    );
    match setup {
        Setup::Parallel | Setup::Sequential => {
            let outcomes: Vec<(Role, MergeOutcome)> =
                report.merges.iter().map(|m| (m.role, m.outcome)).collect();
            anyhow::ensure!(
                outcomes.len() == WRITERS.len()
                    && outcomes.iter().all(|(_, o)| *o == MergeOutcome::Clean),
                "the {setup:?} bench run did not merge its 3 writers cleanly: {outcomes:?} \
                 (warnings: {:?})",
                report.warnings
            );
            for (role, path, before) in WRITERS {
                let after = std::fs::read_to_string(repo.join(path))?;
                let expected = before.replace("TODO", &format!("done by {role}"));
                anyhow::ensure!(
                    after == expected,
                    "after the {setup:?} bench run, {path} is {after:?}, not {expected:?}"
                );
            }
        }
        Setup::One => {
            anyhow::ensure!(
                report.merges.is_empty()
                    && (report.warnings.iter()).any(|w| w.starts_with("writers not parallel")),
                "the one-writer bench run should run its writer as a support worker: merges \
                 {:?}, warnings {:?}",
                report.merges,
                report.warnings
            );
        }
    }
    reset_writer_files(repo)?;
    // The merges were checked above: the journal has its writer_merge records.
    let merge_ms = (setup == Setup::Parallel).then(|| merge_window_ms(&memory.entries()));
    Ok((wall_ms, merge_ms.flatten()))
}

/// Milliseconds from the last writer's support `worker_end` to the last `writer_merge`.
fn merge_window_ms(entries: &[JournalEntry]) -> Option<f64> {
    let writer = |role: Role| WRITERS.iter().any(|(r, ..)| *r == role);
    let last_end = (entries.iter())
        .filter(|e| match &e.record {
            Record::WorkerEnd(end) => end.phase == WorkerPhase::Support && writer(end.worker),
            _ => false,
        })
        .map(|e| e.timestamp)
        .max()?;
    let last_merge = (entries.iter())
        .filter(|e| matches!(e.record, Record::WriterMerge(_)))
        .map(|e| e.timestamp)
        .max()?;
    Some((last_merge - last_end) as f64)
}

/// Median wall (and merge window) of `runs` runs of `setup`, after one warm-up.
async fn measure(setup: Setup, runs: usize, delay: Duration) -> anyhow::Result<(f64, f64)> {
    let (_dir, home, repo) = run_fixture()?;
    timed_run(setup, &home, &repo, delay).await?;
    let (mut walls, mut merges) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (wall, merge) = timed_run(setup, &home, &repo, delay).await?;
        walls.push(wall);
        merges.extend(merge);
    }
    Ok((median(&mut walls), median(&mut merges)))
}

#[derive(Serialize)]
struct Figures {
    build: &'static str,
    sandbox: String,
    temp_dir: String,
    runs: usize,
    delay_ms: u64,
    parallel_3_writers_median_ms: f64,
    one_writer_median_ms: f64,
    sequential_3_writers_median_ms: f64,
    ratio_parallel_to_one_writer: f64,
    ratio_parallel_to_sequential: f64,
    merge_back_3_writers_median_ms: f64,
    worktrees: WorktreeFigures,
}

/// Runs the benchmark.
pub fn execute(args: WritersBenchArgs) -> anyhow::Result<ExitCode> {
    let sandbox = braincode_sandbox::status();
    if sandbox.kind == braincode_sandbox::SandboxKind::Unavailable {
        println!(
            "braincode bench writers: skipped — parallel writers need the OS sandbox, and none \
             works here: {}",
            sandbox.detail
        );
        return Ok(ExitCode::SUCCESS);
    }
    for (role, ..) in WRITERS {
        anyhow::ensure!(
            !braincode_brain::is_read_only_support_role(role),
            "{role} is a read-only role: it cannot be a writer"
        );
    }
    super::super::tokio_runtime()?.block_on(bench(args, sandbox.detail.clone()))
}

async fn bench(args: WritersBenchArgs, sandbox: String) -> anyhow::Result<ExitCode> {
    let runs = args.runs.max(1);
    let delay = Duration::from_millis(args.delay_ms);
    let (parallel, merge_ms) = measure(Setup::Parallel, runs, delay).await?;
    let (one, _) = measure(Setup::One, runs, delay).await?;
    let (sequential, _) = measure(Setup::Sequential, runs, delay).await?;
    let worktrees = measure_worktrees(runs, args.files).await?;
    let figures = Figures {
        build: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        sandbox,
        temp_dir: std::env::temp_dir().display().to_string(),
        runs,
        delay_ms: args.delay_ms,
        parallel_3_writers_median_ms: parallel,
        one_writer_median_ms: one,
        sequential_3_writers_median_ms: sequential,
        ratio_parallel_to_one_writer: parallel / one.max(f64::MIN_POSITIVE),
        ratio_parallel_to_sequential: parallel / sequential.max(f64::MIN_POSITIVE),
        merge_back_3_writers_median_ms: merge_ms,
        worktrees,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        print_figures(&figures);
    }
    Ok(ExitCode::SUCCESS)
}

/// One timed figure against its goal.
fn row(label: &str, ms: f64, goal_ms: f64) {
    let met = if ms <= goal_ms { "met" } else { "NOT met" };
    println!("  {label}: {ms:.0} ms (goal ≤ {goal_ms:.0} ms: {met})");
}

fn print_figures(f: &Figures) {
    let (w, delay) = (&f.worktrees, f.delay_ms);
    println!(
        "braincode bench writers — {} build, sandbox {}, fixtures in {}, {delay} ms per model \
         call, median of {} runs after 1 warm-up",
        f.build, f.sandbox, f.temp_dir, f.runs
    );
    println!("1. wall time of a full run (router, support, review, primary; backend primary)");
    println!(
        "  3 writers in parallel (frontend, dba, devops; worktrees, 3 clean merges): {:.0} ms\n  \
         1 writer (frontend; a plan with one writer runs it as a plain support worker, no \
         worktree; its one call lasts 2 × {delay} ms like a writer's edit + result): {:.0} ms\n  \
         3 writers one after another (each todo depends on the previous; worktrees, 3 clean \
         merges): {:.0} ms",
        f.parallel_3_writers_median_ms, f.one_writer_median_ms, f.sequential_3_writers_median_ms
    );
    let ratio = f.ratio_parallel_to_one_writer;
    let met = if ratio <= 1.2 { "met" } else { "NOT met" };
    println!(
        "  3 parallel / 1 writer: {ratio:.2}× (goal ≤ 1.2×: {met}); 3 parallel / 3 one after \
         another: {:.2}×",
        f.ratio_parallel_to_sequential
    );
    println!("2. worktrees of a {}-file repository", w.files);
    row(
        "start (snapshot commit of the project)",
        w.start_median_ms,
        150.0,
    );
    row(
        "add 3, asked for at once as a run does (git makes them one at a time; wall)",
        w.add_3_at_once_median_ms,
        150.0,
    );
    for (n, add) in w.add_median_ms.iter().enumerate() {
        row(&format!("  writer {} ready after", n + 1), *add, 150.0);
    }
    row("remove_all (3 worktrees)", w.remove_all_3_median_ms, 150.0);
    println!(
        "  a command's first run in a worktree writes every file out first: {:.0} ms (no goal; \
         a writer that only reads and edits never pays it)",
        w.materialize_all_median_ms
    );
    println!("3. merge-back of 3 non-conflicting writers (journal timestamps, 1 ms resolution)");
    row(
        "last writer's worker_end → last writer_merge",
        f.merge_back_3_writers_median_ms,
        50.0,
    );
    let share = w.worktree_bytes as f64 * 100.0 / w.working_tree_bytes.max(1) as f64;
    // The worktree holds its `.git` file and the one file the writer touched.
    let met = if w.worktree_files <= 2 {
        "met"
    } else {
        "NOT met"
    };
    println!(
        "4. disk per writer on the {}-file repository (a writer that read and edited one file)\n  \
         one worktree directory: {} bytes in {} files, plus {} bytes of git metadata under \
         .git/worktrees (its index)\n  the repository's working tree (without .git): {} bytes \
         in {} files\n  worktree / working tree: {share:.2}% (goal: only the files it touches \
         plus git's metadata: {met})",
        w.files,
        w.worktree_bytes,
        w.worktree_files,
        w.worktree_git_metadata_bytes,
        w.working_tree_bytes,
        w.working_tree_files
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        args: WritersBenchArgs,
    }

    #[test]
    fn flags_default_and_parse() {
        let parse = |line: &str| Line::try_parse_from(line.split(' ')).unwrap().args;
        let flags = |a: WritersBenchArgs| (a.runs, a.delay_ms, a.files, a.json);
        assert_eq!(flags(parse("writers")), (5, 200, 10_000, false));
        let line = "writers --runs 2 --delay-ms 50 --files 9 --json";
        assert_eq!(flags(parse(line)), (2, 50, 9, true));
    }

    #[test]
    fn the_router_plans_each_writer_and_the_primary() {
        let plan: Value = serde_json::from_str(&router_decision(Setup::Parallel)).unwrap();
        let roles: Vec<&str> = (plan["workers"].as_array().unwrap().iter())
            .map(|w| w["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["frontend", "dba", "devops", "backend"]);
        assert_eq!(plan["dependencies"], json!([]));
        let chained: Value = serde_json::from_str(&router_decision(Setup::Sequential)).unwrap();
        assert_eq!(
            chained["dependencies"],
            json!([{"from": "todo-frontend", "to": "todo-dba"}, {"from": "todo-dba", "to": "todo-devops"}])
        );
    }
}
