//! What travels on the queue (a task and its id) and what the fleet keeps of each task (its
//! state, in the key-value bucket).

use serde::{Deserialize, Serialize};

/// One unit of work: an ordinary `braincode run` on a repository at a commit. A task never
/// carries keys, trust or settings: the worker that runs it decides those.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskSpec {
    /// The task, as `braincode run` takes it.
    pub prompt: String,
    /// A repository URL or a path every worker can reach (cloned afresh for each run).
    pub repo: String,
    /// The commit, branch or tag to start from (default: the repository's HEAD).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// The brain (default: the worker's own default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brain: Option<String>,
    /// `auto` or `radical` (default: the brain's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What the run may do: `read-only`, `allow-edits` (the default) or `yes` (commands too,
    /// in the OS sandbox).
    #[serde(default)]
    pub permission: Permission,
    /// Stop the run once its model calls used this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Stop the run once it cost this many US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Push the result to this branch of the task's repository (nothing is pushed otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_branch: Option<String>,
    /// Who submitted it (per-submitter budgets count against this name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter: Option<String>,
}

/// The permission a fleet run has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Permission {
    /// Only read tools.
    ReadOnly,
    /// File edits, no commands.
    #[default]
    AllowEdits,
    /// Every tool; commands in the OS sandbox.
    Yes,
}

impl Permission {
    /// The `braincode run` flag.
    pub fn flag(self) -> &'static str {
        match self {
            Permission::ReadOnly => "--read-only",
            Permission::AllowEdits => "--allow-edits",
            Permission::Yes => "--yes",
        }
    }
}

impl TaskSpec {
    /// Why the task cannot run, before it is queued (and again by the worker: a message can
    /// be published by anyone).
    pub fn check(&self) -> Result<(), String> {
        if self.prompt.trim().is_empty() {
            return Err("the task has an empty prompt".to_string());
        }
        check_repo(&self.repo)?;
        if let Some(git_ref) = &self.git_ref
            && (git_ref.is_empty() || git_ref.starts_with('-') || git_ref.contains(['\0', '\n']))
        {
            return Err(format!(
                "ref {git_ref:?} is not a git commit, branch or tag"
            ));
        }
        if let Some(mode) = &self.mode
            && !matches!(mode.as_str(), "auto" | "radical")
        {
            return Err(format!("mode {mode:?} is not auto or radical"));
        }
        if let Some(branch) = &self.push_branch
            && (branch.is_empty()
                || branch.starts_with('-')
                || branch.contains(['\0', '\n', ' ', ':', '~', '^', '?', '*', '[', '\\'])
                || branch.contains(".."))
        {
            return Err(format!("pushBranch {branch:?} is not a branch name"));
        }
        if let Some(usd) = self.max_cost
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(format!("maxCost {usd} is not an amount above 0"));
        }
        if self.max_tokens == Some(0) {
            return Err("maxTokens is 0: give a token budget above 0".to_string());
        }
        Ok(())
    }
}

/// A repository is a URL git fetches from, or an absolute path; never a git option, and never
/// a transport that runs a program (`ext::`).
fn check_repo(repo: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("repo {repo:?} {why}"));
    if repo.trim().is_empty() {
        return bad("is empty: give a repository URL or a path the workers can read");
    }
    if repo.starts_with('-') || repo.contains(['\0', '\n']) {
        return bad("is not a repository URL or path");
    }
    let lower = repo.to_ascii_lowercase();
    if lower.starts_with("ext::") || lower.starts_with("fd::") {
        return bad("uses a transport that runs a program; use https, ssh, git or a path");
    }
    Ok(())
}

/// A queued task: its id and what to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskMessage {
    /// The fleet-wide id (a key of the task bucket).
    pub id: String,
    /// The task.
    pub task: TaskSpec,
}

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Waiting for a worker.
    Queued,
    /// A worker runs it.
    Running,
    /// It ended with the run's answer (whatever the run's own status).
    Done,
    /// It could not be run, or no worker finished it.
    Failed,
    /// Cancelled before it ended.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task is over (its state never changes again).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskStatus::Done | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The word `fleet list` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Done => "done",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// What the fleet knows of a task (the value under its id in the task bucket).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskState {
    /// The task's id.
    pub id: String,
    /// The task (none for a message that was not a task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskSpec>,
    /// Where it is.
    pub status: TaskStatus,
    /// `fleet cancel` asked for it to stop.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_requested: bool,
    /// The worker that runs or ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// How many times it was delivered to a worker.
    #[serde(default)]
    pub deliveries: u64,
    /// The delivery that runs it (a random id each start): a delivery that finds another's
    /// id here was taken for lost and delivered again, and stops its run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<String>,
    /// The session of its run (its journal's subject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The commit the run started from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The run's final status (`answered`, `approved`, `error`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_status: Option<String>,
    /// The run's final answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Size of the patch kept in the result store (0: no change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_bytes: Option<u64>,
    /// The branch the result was pushed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushed_branch: Option<String>,
    /// Tokens its model calls used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// What its model calls cost, in millionths of a US dollar (models without a price: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<u64>,
    /// The task message's sequence in the queue (while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// When its worker last said it is alive (RFC 3339; every few seconds while it runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<String>,
    /// When it was submitted (RFC 3339).
    pub submitted_at: String,
    /// When its state last changed (RFC 3339).
    pub updated_at: String,
}

impl TaskState {
    /// A task just submitted.
    pub fn queued(id: &str, task: TaskSpec) -> TaskState {
        TaskState::new(id, Some(task), TaskStatus::Queued)
    }

    /// The result of something that is not a task (a malformed message).
    pub fn failed(id: &str, why: String) -> TaskState {
        let mut state = TaskState::new(id, None, TaskStatus::Failed);
        state.deliveries = 1;
        state.error = Some(why);
        state
    }

    fn new(id: &str, task: Option<TaskSpec>, status: TaskStatus) -> TaskState {
        let now = now();
        TaskState {
            id: id.to_string(),
            task,
            status,
            cancel_requested: false,
            worker: None,
            deliveries: 0,
            attempt: None,
            session: None,
            commit: None,
            run_status: None,
            answer: None,
            error: None,
            patch_bytes: None,
            pushed_branch: None,
            tokens: None,
            cost_micro_usd: None,
            sequence: None,
            heartbeat_at: None,
            submitted_at: now.clone(),
            updated_at: now,
        }
    }
}

/// Now, RFC 3339 in UTC.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A new task id: the time, then random hex (sortable, a valid key and subject token).
pub fn new_task_id() -> String {
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("t{stamp}-{}", &random[..8])
}

/// Whether `id` can name a task (a key of the bucket and a subject token).
pub fn valid_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The tasks of a JSONL file (one task object per line; blank lines and `#` lines skipped),
/// or every bad line, each with its line number.
pub fn parse_tasks_jsonl(text: &str, source: &str) -> Result<Vec<TaskSpec>, String> {
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let parsed = serde_json::from_str::<TaskSpec>(line)
            .map_err(|err| err.to_string())
            .and_then(|task| task.check().map(|()| task));
        match parsed {
            Ok(task) => tasks.push(task),
            Err(why) => errors.push(format!("{source}:{}: {why}", index + 1)),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    if tasks.is_empty() {
        return Err(format!("{source} holds no task (one JSON object per line)"));
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn task(json: &str) -> Result<TaskSpec, String> {
        serde_json::from_str::<TaskSpec>(json)
            .map_err(|e| e.to_string())
            .and_then(|t| t.check().map(|()| t))
    }

    #[test]
    fn a_task_needs_a_prompt_and_a_safe_repository() {
        let ok = task(r#"{"prompt":"fix it","repo":"/srv/repo.git","ref":"main"}"#).unwrap();
        assert_eq!(ok.permission, Permission::AllowEdits);
        assert!(
            task(r#"{"prompt":"  ","repo":"/r"}"#)
                .unwrap_err()
                .contains("empty prompt")
        );
        assert!(task(r#"{"prompt":"x","repo":"--upload-pack=touch /tmp/x"}"#).is_err());
        assert!(
            task(r#"{"prompt":"x","repo":"ext::sh -c touch% /tmp/x"}"#)
                .unwrap_err()
                .contains("runs a program")
        );
        assert!(task(r#"{"prompt":"x","repo":"/r","ref":"--orphan"}"#).is_err());
        assert!(task(r#"{"prompt":"x","repo":"/r","pushBranch":"a..b"}"#).is_err());
        assert!(task(r#"{"prompt":"x","repo":"/r","mode":"fast"}"#).is_err());
        // Keys and settings never travel in a task: unknown fields are refused, not ignored.
        assert!(
            task(r#"{"prompt":"x","repo":"/r","apiKey":"sk-1"}"#)
                .unwrap_err()
                .contains("unknown field")
        );
    }

    #[test]
    fn a_jsonl_file_names_every_bad_line() {
        let text = "{\"prompt\":\"a\",\"repo\":\"/r\"}\n\n# note\n{\"prompt\":\"b\"}\nnot json\n";
        let err = parse_tasks_jsonl(text, "tasks.jsonl").unwrap_err();
        assert!(err.contains("tasks.jsonl:4: missing field `repo`"), "{err}");
        assert!(err.contains("tasks.jsonl:5:"), "{err}");
        let ok = parse_tasks_jsonl("{\"prompt\":\"a\",\"repo\":\"/r\"}\n", "t").unwrap();
        assert_eq!(ok.len(), 1);
        assert!(
            parse_tasks_jsonl("\n", "t")
                .unwrap_err()
                .contains("no task")
        );
    }

    #[test]
    fn task_ids_are_keys_and_subject_tokens() {
        let id = new_task_id();
        assert!(valid_task_id(&id), "{id}");
        assert!(!valid_task_id("a.b"));
        assert!(!valid_task_id("a*"));
        assert!(!valid_task_id(""));
    }
}
