//! `braincode bench fleet`: what the fleet (issue 35) delivers on one machine.
//!
//! Every worker is a real `braincode fleet worker` process (this executable, concurrency 1),
//! with a temporary home whose brain sends every role to a scripted OpenAI-compatible model on
//! loopback that answers each call after `--delay-ms`; the router's plan is scripted (one
//! security support worker, a backend primary: 3 model calls a task), and every task is a
//! read-only run on a small temporary git repository. Measured:
//! 1. tasks per minute with 1, 2 and 4 workers, and the scaling efficiency at 4 workers;
//! 2. submit-to-start on an idle pool: from `submit` returning to the task's state becoming
//!    `running`, and to its run's first journal record reaching NATS;
//! 3. redelivery: from a SIGKILL of the worker running a task to that task being `running` on
//!    another worker (then resumed to its end);
//! 4. the RSS of a worker that connected and idled about a second, and the CPU it used then.
//!
//! NATS is a `nats-server -js` this command starts on a free loopback port with a temporary
//! store (or `--nats URL`: a server no other fleet uses). Every process it starts dies with it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use braincode_fleet::{Fleet, NatsOptions, TaskSpec, TaskStatus};
use braincode_protocol::Role;
use braincode_scripted::{
    CallKind, Reply, Script, ScriptedServer, router_decision_json, worker_result_for,
};
use serde::Serialize;
use serde_json::json;

use super::fleet_pool::{Events, Worker, start_nats};
use super::median;
use super::overhead::fixture;

/// Options of `braincode bench fleet`.
#[derive(Debug, clap::Args)]
pub struct FleetBenchArgs {
    /// Model latency per call, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub delay_ms: u64,
    /// Tasks per throughput measurement (each worker count).
    #[arg(long, default_value_t = 12)]
    pub tasks: usize,
    /// Tasks submitted one at a time to the idle pool for the submit-to-start latency.
    #[arg(long, default_value_t = 10)]
    pub starts: usize,
    /// Workers killed (SIGKILL) mid-task for the redelivery time.
    #[arg(long, default_value_t = 3)]
    pub kills: usize,
    /// Use this NATS server (JetStream on, no other fleet on it) instead of starting one.
    #[arg(long, value_name = "URL")]
    pub nats: Option<String>,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The worker counts of the throughput measurement.
const WORKER_COUNTS: [usize; 3] = [1, 2, 4];
/// Goal: throughput with 4 workers ≥ this × 4 × throughput with 1.
const EFFICIENCY_GOAL: f64 = 0.9;
/// Goal: median submit-to-start, in ms.
const START_GOAL_MS: f64 = 20.0;
/// Goal: redelivery after a worker dies, in seconds.
const REDELIVERY_GOAL_S: f64 = 5.0;
/// Goal: RSS of an idle worker, in MB.
const RSS_GOAL_MB: f64 = 30.0;
/// How long the pool rests between single tasks, so that every worker waits on the queue.
const IDLE_PAUSE: Duration = Duration::from_millis(300);

/// Runs the benchmark.
pub fn execute(args: FleetBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.tasks > 0, "--tasks must be at least 1");
    super::super::tokio_runtime()?.block_on(bench(args))
}

/// The scripted model: every call answered after `delay`; the router plans a security
/// support worker and a backend primary.
fn model_script(delay: Duration) -> Script {
    Script::from_fn(move |request| {
        let reply = match request.kind() {
            CallKind::Router => {
                Reply::json(&router_decision_json(Role::Backend, &[Role::Security]))
            }
            CallKind::Support => Reply::json(&worker_result_for(request, "tokens are signed")),
            CallKind::Review => Reply::json(&json!({"decision": "approved", "summary": "ok"})),
            CallKind::Primary => Reply::text("The token check is fine."),
        };
        reply.delayed(delay)
    })
}

/// The pool of worker processes, the fleet connection, the model and the task repository.
struct Bench {
    fleet: Fleet,
    nats_url: String,
    model_url: String,
    repo: PathBuf,
    workers: Vec<Worker>,
    started: usize,
    idle: Vec<IdleWorker>,
    events: Events,
    prompts: usize,
}

impl Bench {
    /// Starts workers until there are `count`; each new one is measured after idling 1 s.
    async fn grow_to(&mut self, count: usize) -> anyhow::Result<()> {
        let mut fresh = Vec::new();
        while self.workers.len() < count {
            self.started += 1;
            let name = format!("bench-w{}", self.started);
            let worker = Worker::start(&name, &self.nats_url, &self.model_url).await?;
            fresh.push((worker.name.clone(), worker.usage().2, Instant::now()));
            self.workers.push(worker);
        }
        if fresh.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        for (name, cpu_before, since) in fresh {
            if let Some(worker) = self.workers.iter().find(|w| w.name == name) {
                let (rss_kib, peak_kib, cpu) = worker.usage();
                let idle_s = since.elapsed().as_secs_f64();
                self.idle.push(IdleWorker {
                    name,
                    rss_kib,
                    peak_kib,
                    cpu_ms_per_idle_second: (cpu - cpu_before) * 1000.0 / idle_s,
                });
            }
        }
        Ok(())
    }

    /// Queues `count` read-only tasks; their ids.
    async fn submit(&mut self, count: usize) -> anyhow::Result<Vec<String>> {
        let tasks = (0..count)
            .map(|_| {
                self.prompts += 1;
                serde_json::from_value::<TaskSpec>(json!({
                    "prompt": format!("task {}: is the token check right?", self.prompts),
                    "repo": self.repo.display().to_string(),
                    "brain": "bench",
                    "permission": "read-only",
                }))
            })
            .collect::<Result<Vec<_>, _>>()?;
        braincode_fleet::submit(&self.fleet, tasks)
            .await
            .map_err(anyhow::Error::msg)
    }

    /// Tasks per minute with `count` workers: `tasks` submitted at once, timed from the
    /// submit call to the last result.
    async fn throughput(&mut self, count: usize, tasks: usize) -> anyhow::Result<Throughput> {
        self.grow_to(count).await?;
        self.events.clear();
        let started = Instant::now();
        let ids = self.submit(tasks).await?;
        let mut by_worker = BTreeMap::new();
        for id in &ids {
            let state = self.events.done(id).await?;
            *by_worker
                .entry(state.worker.unwrap_or_default())
                .or_insert(0) += 1;
        }
        let wall_s = started.elapsed().as_secs_f64();
        Ok(Throughput {
            workers: count,
            tasks,
            wall_s,
            tasks_per_minute: tasks as f64 * 60.0 / wall_s,
            tasks_by_worker: by_worker,
        })
    }

    /// One task on the idle pool: ms from `submit` returning to `running`, and to its first
    /// journal record; and how long `submit` itself took.
    async fn one_start(&mut self) -> anyhow::Result<(f64, f64, f64)> {
        tokio::time::sleep(IDLE_PAUSE).await;
        self.events.clear();
        let called = Instant::now();
        let id = self.submit(1).await?.remove(0);
        let submitted = Instant::now();
        let (running_at, state) = self
            .events
            .state("the task to start", |s| {
                s.id == id && s.status == TaskStatus::Running
            })
            .await?;
        let session = state.session.unwrap_or_default();
        let record_at = self.events.first_record(&session).await?;
        self.events.done(&id).await?;
        let ms = |from: Instant, to: Instant| to.duration_since(from).as_secs_f64() * 1000.0;
        Ok((
            ms(submitted, running_at),
            ms(submitted, record_at),
            ms(called, submitted),
        ))
    }

    /// One task whose worker is killed once its run's first journal record is on NATS: the
    /// seconds from the kill to the task running on another worker, and how the task ended.
    /// A new worker replaces the killed one.
    async fn one_redelivery(&mut self) -> anyhow::Result<(f64, String)> {
        tokio::time::sleep(IDLE_PAUSE).await;
        self.events.clear();
        let id = self.submit(1).await?.remove(0);
        let (_, state) = self
            .events
            .state("the task to start", |s| {
                s.id == id && s.status == TaskStatus::Running
            })
            .await?;
        let victim = state.worker.unwrap_or_default();
        self.events
            .first_record(&state.session.unwrap_or_default())
            .await?;
        let index = (self.workers.iter().position(|w| w.name == victim))
            .with_context(|| format!("task {id} runs on {victim:?}, not one of the bench's"))?;
        let mut killed = self.workers.remove(index);
        killed.child.start_kill()?;
        let killed_at = Instant::now();
        let _ = killed.child.wait().await;
        let (running_at, _) = self
            .events
            .state("the task to be redelivered", |s| {
                s.id == id && s.status == TaskStatus::Running && s.worker.as_ref() != Some(&victim)
            })
            .await?;
        let state = self.events.ended(&id).await?;
        let ended = match (state.status, state.error) {
            (TaskStatus::Done, _) => format!("done after {} deliveries", state.deliveries),
            (status, error) => format!("{} ({})", status.as_str(), error.unwrap_or_default()),
        };
        let count = self.workers.len() + 1;
        self.grow_to(count).await?;
        Ok((running_at.duration_since(killed_at).as_secs_f64(), ended))
    }
}

/// One idle worker's memory and CPU.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IdleWorker {
    name: String,
    rss_kib: u64,
    peak_kib: u64,
    cpu_ms_per_idle_second: f64,
}

/// One throughput measurement.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Throughput {
    workers: usize,
    tasks: usize,
    wall_s: f64,
    tasks_per_minute: f64,
    tasks_by_worker: BTreeMap<String, usize>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    build: &'static str,
    cpus: usize,
    nats: String,
    delay_ms: u64,
    throughput: Vec<Throughput>,
    scaling_efficiency_4: f64,
    submit_to_running_ms: Vec<f64>,
    submit_to_running_median_ms: f64,
    submit_to_first_record_median_ms: f64,
    submit_call_median_ms: f64,
    redelivery_s: Vec<f64>,
    redelivery_median_s: f64,
    redelivery_max_s: f64,
    redelivered_ends: Vec<String>,
    idle_workers: Vec<IdleWorker>,
    idle_rss_max_kib: u64,
}

async fn bench(args: FleetBenchArgs) -> anyhow::Result<ExitCode> {
    let (nats_process, nats_url) = match &args.nats {
        Some(url) => (None, url.clone()),
        None => {
            let (process, url) = start_nats()?;
            (Some(process), url)
        }
    };
    let server = ScriptedServer::bind(model_script(Duration::from_millis(args.delay_ms))).await?;
    let (repo_dir, _, repo) = fixture(&server.base_url())?;
    let options = NatsOptions {
        url: nats_url.clone(),
        replicas: 1,
        name: Some("braincode-bench-fleet".to_string()),
        ..NatsOptions::default()
    };
    let fleet = Fleet::connect(&options).await.map_err(anyhow::Error::msg)?;
    let events = Events::listen(&fleet).await?;
    let mut bench = Bench {
        fleet,
        nats_url: nats_url.clone(),
        model_url: server.base_url(),
        repo,
        workers: Vec::new(),
        started: 0,
        idle: Vec::new(),
        events,
        prompts: 0,
    };
    let result = measure(&mut bench, &args).await;
    // Workers first (each kills its runs), then the model and NATS.
    bench.workers.clear();
    drop(bench);
    drop((server, repo_dir, nats_process));
    let mut figures = result?;
    figures.nats = if args.nats.is_some() {
        nats_url
    } else {
        format!("nats-server -js started by this bench at {nats_url}")
    };
    figures.delay_ms = args.delay_ms;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        print_figures(&figures, &args);
    }
    Ok(ExitCode::SUCCESS)
}

async fn measure(bench: &mut Bench, args: &FleetBenchArgs) -> anyhow::Result<Figures> {
    // Warm-up: the executable in the page cache, the model server's first connections.
    bench.grow_to(1).await?;
    let warm = bench.submit(1).await?.remove(0);
    bench.events.done(&warm).await?;
    let mut throughput = Vec::new();
    for count in WORKER_COUNTS {
        throughput.push(bench.throughput(count, args.tasks).await?);
    }
    let per_minute = |n: usize| {
        (throughput.iter())
            .find(|t| t.workers == n)
            .map_or(0.0, |t| t.tasks_per_minute)
    };
    let scaling_efficiency_4 = per_minute(4) / (4.0 * per_minute(1)).max(f64::MIN_POSITIVE);
    let (mut running, mut records, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..args.starts {
        let (to_running, to_record, call) = bench.one_start().await?;
        running.push(to_running);
        records.push(to_record);
        calls.push(call);
    }
    let (mut redelivery, mut redelivered_ends) = (Vec::new(), Vec::new());
    for _ in 0..args.kills {
        let (seconds, ended) = bench.one_redelivery().await?;
        redelivery.push(seconds);
        redelivered_ends.push(ended);
    }
    let submit_to_running_ms = running.clone();
    let redelivery_s = redelivery.clone();
    let idle_workers = std::mem::take(&mut bench.idle);
    Ok(Figures {
        build: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        nats: String::new(),
        delay_ms: 0,
        throughput,
        scaling_efficiency_4,
        submit_to_running_ms,
        submit_to_running_median_ms: median(&mut running),
        submit_to_first_record_median_ms: median(&mut records),
        submit_call_median_ms: median(&mut calls),
        redelivery_median_s: median(&mut redelivery),
        redelivery_max_s: redelivery.iter().copied().fold(0.0, f64::max),
        redelivery_s,
        redelivered_ends,
        idle_rss_max_kib: idle_workers.iter().map(|w| w.rss_kib).max().unwrap_or(0),
        idle_workers,
    })
}

/// `met` or `NOT met`.
fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

fn print_figures(f: &Figures, args: &FleetBenchArgs) {
    println!(
        "braincode bench fleet — {} build, {} CPU(s), NATS: {}\n  scripted model, {} ms per \
         call; a task = a read-only run of 3 calls (router plan: security support worker, \
         backend primary); workers: `braincode fleet worker --concurrency 1` processes",
        f.build, f.cpus, f.nats, f.delay_ms
    );
    println!(
        "1. throughput: {} tasks submitted at once, timed from the submit call to the last \
         result (after 1 warm-up task)",
        args.tasks
    );
    for t in &f.throughput {
        let spread: Vec<String> = (t.tasks_by_worker.values()).map(usize::to_string).collect();
        println!(
            "  {} worker(s): {:.1} s, {:.1} tasks/min (tasks per worker: {})",
            t.workers,
            t.wall_s,
            t.tasks_per_minute,
            spread.join(" + ")
        );
    }
    let e = f.scaling_efficiency_4;
    println!(
        "  scaling efficiency at 4 workers (tasks/min of 4 / (4 × tasks/min of 1)): {e:.2} (goal \
         ≥ {EFFICIENCY_GOAL}: {})",
        met(e >= EFFICIENCY_GOAL)
    );
    println!(
        "2. submit-to-start on an idle pool of 4 workers (median of {}; one task at a time)",
        f.submit_to_running_ms.len()
    );
    let (running, record) = (
        f.submit_to_running_median_ms,
        f.submit_to_first_record_median_ms,
    );
    println!(
        "  submit() returned → the task's state `running` seen by a watch of the task bucket: \
         {running:.1} ms (goal ≤ {START_GOAL_MS} ms: {})",
        met(running <= START_GOAL_MS)
    );
    println!(
        "  submit() returned → the run's first journal record (run_start) received from NATS: \
         {record:.1} ms (goal ≤ {START_GOAL_MS} ms: {}) — includes the clone, the `braincode \
         run` process start and the worker's journal tail interval",
        met(record <= START_GOAL_MS)
    );
    println!(
        "  (the submit() call itself — state created, task published and acknowledged: {:.1} ms)",
        f.submit_call_median_ms
    );
    let (redelivery, worst) = (f.redelivery_median_s, f.redelivery_max_s);
    if f.redelivery_s.is_empty() {
        println!("3. redelivery: not measured (--kills 0)");
    } else {
        println!(
            "3. redelivery: SIGKILL of the worker running a task (once its run_start is on NATS) → \
         the task `running` on another worker; median of {}: {redelivery:.2} s, max {worst:.2} s \
         (goal ≤ {REDELIVERY_GOAL_S} s: {}; the consumer's ack wait is {:?})\n  the \
         redelivered tasks ended: {}",
            f.redelivery_s.len(),
            met(worst <= REDELIVERY_GOAL_S),
            braincode_fleet::nats::ACK_WAIT,
            f.redelivered_ends.join("; ")
        );
    }
    let rss_mb = f.idle_rss_max_kib as f64 / 1024.0;
    println!(
        "4. idle worker: connected, serving the queue, then 1 s idle (max of {} fresh workers)",
        f.idle_workers.len()
    );
    let peak_mb = (f.idle_workers.iter().map(|w| w.peak_kib).max()).unwrap_or(0) as f64 / 1024.0;
    let cpu_ms = (f.idle_workers.iter())
        .map(|w| w.cpu_ms_per_idle_second)
        .fold(0.0, f64::max);
    println!(
        "  VmRSS {rss_mb:.1} MB, VmHWM {peak_mb:.1} MB (goal ≤ {RSS_GOAL_MB} MB: {}); CPU used \
         while idle: {cpu_ms:.1} ms per second",
        met(rss_mb <= RSS_GOAL_MB)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Line {
        #[command(flatten)]
        args: FleetBenchArgs,
    }

    #[test]
    fn flags_default_and_parse() {
        let parse = |line: &str| Line::try_parse_from(line.split(' ')).unwrap().args;
        let flags = |a: FleetBenchArgs| (a.delay_ms, a.tasks, a.starts, a.kills, a.nats, a.json);
        assert_eq!(flags(parse("fleet")), (200, 12, 10, 3, None, false));
        let line = "fleet --delay-ms 5 --tasks 2 --starts 1 --kills 0 --nats nats://h:1 --json";
        let nats = Some("nats://h:1".to_string());
        assert_eq!(flags(parse(line)), (5, 2, 1, 0, nats, true));
    }
}
