//! `braincode benchmark plan`: the planning benchmark. Each task is a request with what a good
//! plan for it looks like (primary role, roles that must or must not take part, review,
//! the conversational fast path, a clarification); the heuristic plans every task (and, with
//! `--router`, the brain's router model too) and each expectation is checked, with the
//! structural checks of every plan (todo coverage, context isolation).

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use braincode_brain::{
    BrainModel, PlanInput, RuntimePlan, build_runtime_plan, heuristic_route, is_fast_path_eligible,
};
use braincode_config::Home;
use braincode_protocol::{Mode, Role, RoutingSource, WorkerPhase};
use braincode_runtime::{RunRequest, RunServices, plan_only};
use serde::{Deserialize, Serialize};

/// The built-in tasks.
const TASKS: &str = include_str!("plan_tasks.json");

/// Options of `braincode benchmark plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// Only these task ids (default: every task).
    pub tasks: Vec<String>,
    /// The brain whose heuristic plan and router are measured (default: the brain runs use).
    #[arg(long, conflicts_with = "compare")]
    pub brain: Option<String>,
    /// Plan every task with two brains, side by side.
    #[arg(long, num_args = 2, value_names = ["BRAIN_A", "BRAIN_B"])]
    pub compare: Option<Vec<String>>,
    /// Also plan each task with the brain's router model, beside the heuristic.
    #[arg(long)]
    pub router: bool,
    /// More tasks from a file of the same shape (`{"tasks": [...]}`), added to the built-in ones.
    #[arg(long, value_name = "FILE")]
    pub tasks_file: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One task: a request and what its plan must look like.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanTask {
    id: String,
    #[serde(default)]
    lang: String,
    prompt: String,
    /// The primary must be one of these.
    #[serde(default)]
    primary: Vec<Role>,
    /// These roles must have a worker.
    #[serde(default)]
    roles: Vec<Role>,
    /// These roles must not.
    #[serde(default)]
    absent: Vec<Role>,
    /// Whether a review worker must (true) or must not (false) check the result.
    #[serde(default)]
    review: Option<bool>,
    /// Whether the conversational fast path (no router, no tools) must be taken.
    #[serde(default)]
    fast_path: Option<bool>,
    /// Whether the plan must stop and ask for clarification.
    #[serde(default)]
    clarification: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskFile {
    tasks: Vec<PlanTask>,
}

/// One check of one plan.
#[derive(Debug, Clone, Serialize)]
struct Check {
    name: &'static str,
    passed: bool,
    /// Expected vs got, when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
}

/// One task planned by one source.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    task: String,
    brain: String,
    lang: String,
    source: String,
    primary: Role,
    roles: Vec<Role>,
    passed: bool,
    checks: Vec<Check>,
    micros: u128,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn load_tasks(args: &PlanArgs) -> anyhow::Result<Vec<PlanTask>> {
    let mut tasks = serde_json::from_str::<TaskFile>(TASKS)
        .context("the built-in planning tasks")?
        .tasks;
    if let Some(path) = &args.tasks_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let extra: TaskFile = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not a task file ({{\"tasks\": [...]}})",
                path.display()
            )
        })?;
        tasks.extend(extra.tasks);
    }
    let mut seen = HashSet::new();
    for task in &tasks {
        anyhow::ensure!(
            seen.insert(task.id.clone()),
            "the task id {:?} appears twice",
            task.id
        );
    }
    if args.tasks.is_empty() {
        return Ok(tasks);
    }
    let unknown: Vec<&str> = args
        .tasks
        .iter()
        .filter(|id| !seen.contains(*id))
        .map(String::as_str)
        .collect();
    anyhow::ensure!(
        unknown.is_empty(),
        "Unknown benchmark task id(s): {} (`braincode benchmark plan --json` lists them)",
        unknown.join(", ")
    );
    Ok(tasks
        .into_iter()
        .filter(|task| args.tasks.contains(&task.id))
        .collect())
}

fn check(name: &'static str, passed: bool, detail: impl FnOnce() -> String) -> Check {
    Check {
        name,
        passed,
        detail: (!passed).then(detail),
    }
}

fn names(roles: &[Role]) -> String {
    roles
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every expectation of `task`, and the structural checks, against `plan`.
fn checks(task: &PlanTask, plan: &RuntimePlan, fast_path: bool) -> Vec<Check> {
    let roles: Vec<Role> = plan.workers.iter().map(|w| w.role).collect();
    let mut out = Vec::new();
    if !task.primary.is_empty() {
        out.push(check(
            "primary_role",
            task.primary.contains(&plan.primary),
            || {
                format!(
                    "expected one of [{}], got {}",
                    names(&task.primary),
                    plan.primary.as_str()
                )
            },
        ));
    }
    if !task.roles.is_empty() {
        let missing: Vec<Role> = task
            .roles
            .iter()
            .copied()
            .filter(|r| !roles.contains(r))
            .collect();
        out.push(check("plan_roles", missing.is_empty(), || {
            format!("missing [{}] in [{}]", names(&missing), names(&roles))
        }));
    }
    if !task.absent.is_empty() {
        let present: Vec<Role> = task
            .absent
            .iter()
            .copied()
            .filter(|r| roles.contains(r))
            .collect();
        out.push(check("absent_roles", present.is_empty(), || {
            format!("[{}] should not take part", names(&present))
        }));
    }
    if let Some(review) = task.review {
        out.push(check(
            "review_policy",
            plan.requires_review == review,
            || format!("expected review {review}, got {}", plan.requires_review),
        ));
    }
    let reviewer = plan.workers.iter().any(|w| w.phase == WorkerPhase::Review);
    let primary_reviews = plan.primary == Role::Review;
    out.push(check(
        "review_worker",
        reviewer == (plan.requires_review && !primary_reviews),
        || {
            format!(
                "review required {}, review worker {reviewer}",
                plan.requires_review
            )
        },
    ));
    if let Some(expected) = task.fast_path {
        out.push(check("fast_path", fast_path == expected, || {
            format!("expected fast path {expected}, got {fast_path}")
        }));
    }
    if let Some(expected) = task.clarification {
        out.push(check(
            "clarification",
            plan.clarification.required == expected,
            || {
                format!(
                    "expected clarification {expected}, got {}",
                    plan.clarification.required
                )
            },
        ));
    }
    let uncovered: Vec<&str> = plan
        .todos
        .iter()
        .filter(|t| !roles.contains(&t.role))
        .map(|t| t.id.as_str())
        .collect();
    let idle: Vec<Role> = plan
        .workers
        .iter()
        .filter(|w| w.todo_ids.is_empty())
        .map(|w| w.role)
        .collect();
    out.push(check(
        "todo_coverage",
        plan.clarification.required || (uncovered.is_empty() && idle.is_empty()),
        || {
            format!(
                "todos without a worker [{}], workers without a todo [{}]",
                uncovered.join(", "),
                names(&idle)
            )
        },
    ));
    let mut ids = HashSet::new();
    let isolated = plan
        .workers
        .iter()
        .all(|w| w.context_id != plan.brain_context.id && ids.insert(w.context_id.clone()));
    out.push(check("context_isolation", isolated, || {
        "two workers share a context, or a worker has the Brain's".to_string()
    }));
    out
}

fn outcome(
    task: &PlanTask,
    source: &str,
    plan: &RuntimePlan,
    fast_path: bool,
    micros: u128,
) -> Outcome {
    let checks = checks(task, plan, fast_path);
    Outcome {
        task: task.id.clone(),
        brain: plan.brain_id.clone(),
        lang: task.lang.clone(),
        source: source.to_string(),
        primary: plan.primary,
        roles: plan.workers.iter().map(|w| w.role).collect(),
        passed: checks.iter().all(|c| c.passed),
        checks,
        micros,
        error: None,
    }
}

fn heuristic(task: &PlanTask, brain_id: &str, brain: &BrainModel) -> Outcome {
    let started = Instant::now();
    let routing = heuristic_route(&task.prompt, brain, Mode::Auto);
    let fast_path = is_fast_path_eligible(&task.prompt, &routing, 0);
    let mut next = 0u32;
    let mut new_id = || {
        next += 1;
        format!("bench-{next}")
    };
    let plan = build_runtime_plan(PlanInput {
        brain_id,
        brain,
        mode: Mode::Auto,
        goal: &task.prompt,
        routing,
        source: RoutingSource::Heuristic,
        fallback_reason: None,
        new_id: &mut new_id,
    });
    outcome(
        task,
        "heuristic",
        &plan,
        fast_path,
        started.elapsed().as_micros(),
    )
}

async fn router(
    task: &PlanTask,
    home: &Home,
    brain_id: &str,
    project: &std::path::Path,
) -> Outcome {
    let started = Instant::now();
    let request = RunRequest {
        brain_id: Some(brain_id.to_string()),
        ..RunRequest::new(task.prompt.clone(), project.to_path_buf())
    };
    match plan_only(request, RunServices::new(home.clone())).await {
        Ok(plan) => {
            let fast_path = plan.conversational;
            let source = match plan.source {
                RoutingSource::RouterBrain => "router",
                RoutingSource::Heuristic if fast_path => "fast path",
                RoutingSource::Heuristic => "router→heuristic",
            };
            outcome(
                task,
                source,
                &plan,
                fast_path,
                started.elapsed().as_micros(),
            )
        }
        Err(error) => Outcome {
            task: task.id.clone(),
            brain: brain_id.to_string(),
            lang: task.lang.clone(),
            source: "router".into(),
            primary: Role::Rush,
            roles: Vec::new(),
            passed: false,
            checks: Vec::new(),
            micros: started.elapsed().as_micros(),
            error: Some(error.to_string()),
        },
    }
}

/// Runs the benchmark.
pub fn execute(args: &PlanArgs) -> anyhow::Result<ExitCode> {
    let tasks = load_tasks(args)?;
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let settings = braincode_runtime::load_settings(&home)?;
    let presets = braincode_runtime::load_brain_presets(&home)?;
    let wanted: Vec<Option<&str>> = match &args.compare {
        Some(pair) => pair.iter().map(|b| Some(b.as_str())).collect(),
        None => vec![args.brain.as_deref()],
    };
    let mut brains = Vec::new();
    for brain in wanted {
        let selected = braincode_runtime::select_brain(&home, &presets, &settings, brain)?;
        brains.push((selected.id, selected.brain));
    }
    let started = Instant::now();
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (brain_id, brain) in &brains {
        outcomes.extend(tasks.iter().map(|t| heuristic(t, brain_id, brain)));
    }
    let heuristic_ms = started.elapsed().as_secs_f64() * 1e3;
    if args.router {
        let project = std::env::current_dir()?;
        let runtime = super::super::tokio_runtime()?;
        for (brain_id, _) in &brains {
            for task in &tasks {
                outcomes.push(runtime.block_on(router(task, &home, brain_id, &project)));
            }
        }
    }
    let brain_id = brains
        .iter()
        .map(|(id, _)| id.as_str())
        .collect::<Vec<_>>()
        .join(" vs ");
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    if args.json {
        let out = serde_json::json!({"brain": brain_id, "tasks": tasks.len(), "heuristicMs": heuristic_ms,
            "passed": outcomes.len() - failed, "failed": failed, "outcomes": outcomes});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(&outcomes);
        if brains.len() > 1 {
            for (id, _) in &brains {
                let mine: Vec<&Outcome> = outcomes.iter().filter(|o| &o.brain == id).collect();
                let passed = mine.iter().filter(|o| o.passed).count();
                println!("brain {id}: {passed} of {} plan(s) passed", mine.len());
            }
        }
        println!(
            "{} of {} plan(s) passed on brain {brain_id}; the heuristic planned {} task(s) in {heuristic_ms:.1} ms",
            outcomes.len() - failed,
            outcomes.len(),
            tasks.len()
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_table(outcomes: &[Outcome]) {
    let width = outcomes
        .iter()
        .map(|o| o.task.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let brain_width = outcomes
        .iter()
        .map(|o| o.brain.len())
        .max()
        .unwrap_or(5)
        .max(5);
    println!(
        "{:width$}  {:4}  {:brain_width$}  {:16}  {:10}  RESULT",
        "TASK", "LANG", "BRAIN", "SOURCE", "PRIMARY"
    );
    for o in outcomes {
        let result = if o.passed {
            "ok".to_string()
        } else if let Some(error) = &o.error {
            format!("FAIL {error}")
        } else {
            let failed: Vec<String> = o
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", c.name, c.detail.as_deref().unwrap_or("")))
                .collect();
            format!("FAIL {}", failed.join("; "))
        };
        println!(
            "{:width$}  {:4}  {:brain_width$}  {:16}  {:10}  {result}",
            o.task,
            o.lang,
            o.brain,
            o.source,
            o.primary.as_str()
        );
    }
}
