//! The connection to NATS and the JetStream assets the fleet uses: the task queue (a
//! work-queue stream and its durable pull consumer), the journal stream, the task bucket
//! (key-value) and the result store (object store). Every error says which server and what
//! to do.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, kv, object_store, stream};
use bytes::Bytes;

use crate::task::TaskState;

/// The work-queue stream of tasks.
pub const TASK_STREAM: &str = "BRAINCODE_TASKS";
/// The subject tasks are published on.
pub const TASK_SUBJECT: &str = "braincode.tasks";
/// The durable pull consumer every worker shares.
pub const WORKERS: &str = "braincode-workers";
/// The stream of every fleet run's journal records.
pub const JOURNAL_STREAM: &str = "BRAINCODE_JOURNALS";
/// Journal subjects: `braincode.journal.<session>`.
pub const JOURNAL_PREFIX: &str = "braincode.journal";
/// The bucket of task states, by task id.
pub const TASK_BUCKET: &str = "braincode_tasks";
/// The bucket of token budgets.
pub const BUDGET_BUCKET: &str = "braincode_budgets";
/// The object store of results (`<task>/report.json`, `<task>/patch.diff`) and of the file
/// contents a resumed run needs (`blobs/<sha256>`).
pub const RESULT_STORE: &str = "braincode_results";
/// How long a delivered task may go without an ack or a progress ack before it is delivered
/// to another worker. Workers send progress every [`PROGRESS_EVERY`].
pub const ACK_WAIT: Duration = Duration::from_secs(4);
/// How often a worker says it is still working on a task.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// Deliveries of one task before it is given up (a `failed` result, never a loop).
pub const MAX_DELIVER: i64 = 4;

/// How to reach NATS: the URL and the credentials and TLS the server asks for.
#[derive(Debug, Clone, Default)]
pub struct NatsOptions {
    /// `nats://host:port` (or several, comma-separated, for a cluster).
    pub url: String,
    /// User name (with `password`).
    pub user: Option<String>,
    /// Password.
    pub password: Option<String>,
    /// Token.
    pub token: Option<String>,
    /// File holding an nkey seed (`SU…`).
    pub nkey_file: Option<PathBuf>,
    /// A `.creds` file (JWT and seed).
    pub creds_file: Option<PathBuf>,
    /// CA certificate(s) to trust, PEM.
    pub tls_ca: Option<PathBuf>,
    /// Client certificate, PEM (with `tls_key`).
    pub tls_cert: Option<PathBuf>,
    /// Client key, PEM.
    pub tls_key: Option<PathBuf>,
    /// Require TLS.
    pub tls: bool,
    /// Stream and bucket replicas when the fleet's assets are created (3 on a cluster).
    pub replicas: usize,
    /// This client's name, shown by the server.
    pub name: Option<String>,
}

/// A connected fleet: the client and its JetStream assets, created when missing.
#[derive(Clone)]
pub struct Fleet {
    /// The URL, for messages.
    pub url: String,
    /// The connection.
    pub client: async_nats::Client,
    /// JetStream.
    pub js: jetstream::Context,
    /// Task states.
    pub tasks: kv::Store,
    /// Budgets.
    pub budgets: kv::Store,
    /// Results and blobs.
    pub results: object_store::ObjectStore,
}

impl Fleet {
    /// Connects and makes sure the streams, the consumer and the buckets exist.
    pub async fn connect(options: &NatsOptions) -> Result<Fleet, String> {
        let client = connect(options).await?;
        let js = jetstream::new(client.clone());
        let url = options.url.clone();
        let replicas = options.replicas.max(1);
        let hint = |what: &str, err: String| {
            format!(
                "NATS at {url} could not {what}: {err}; the server needs JetStream on (`nats-server -js`, version 2.10 or newer), and a cluster needs {replicas} servers for --replicas {replicas}"
            )
        };
        js.get_or_create_stream(stream::Config {
            name: TASK_STREAM.to_string(),
            subjects: vec![TASK_SUBJECT.to_string()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            num_replicas: replicas,
            ..Default::default()
        })
        .await
        .map_err(|err| hint("create the task stream", err.to_string()))?;
        js.get_or_create_stream(stream::Config {
            name: JOURNAL_STREAM.to_string(),
            subjects: vec![format!("{JOURNAL_PREFIX}.>")],
            storage: stream::StorageType::File,
            num_replicas: replicas,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        })
        .await
        .map_err(|err| hint("create the journal stream", err.to_string()))?;
        let tasks = bucket(&js, TASK_BUCKET, replicas)
            .await
            .map_err(|err| hint("open the task bucket", err))?;
        let budgets = bucket(&js, BUDGET_BUCKET, replicas)
            .await
            .map_err(|err| hint("open the budget bucket", err))?;
        let results = match js.get_object_store(RESULT_STORE).await {
            Ok(store) => store,
            Err(_) => js
                .create_object_store(object_store::Config {
                    bucket: RESULT_STORE.to_string(),
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|err| hint("create the result store", err.to_string()))?,
        };
        Ok(Fleet {
            url,
            client,
            js,
            tasks,
            budgets,
            results,
        })
    }

    /// The shared pull consumer of the task queue.
    pub async fn consumer(&self) -> Result<consumer::PullConsumer, String> {
        let stream = self
            .js
            .get_stream(TASK_STREAM)
            .await
            .map_err(|err| format!("NATS at {}: the task stream: {err}", self.url))?;
        stream
            .get_or_create_consumer(
                WORKERS,
                consumer::pull::Config {
                    durable_name: Some(WORKERS.to_string()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: ACK_WAIT,
                    max_deliver: MAX_DELIVER,
                    ..Default::default()
                },
            )
            .await
            .map_err(|err| format!("NATS at {}: the workers' consumer: {err}", self.url))
    }

    /// A task's state and its revision (`None`: no such task).
    pub async fn state(&self, id: &str) -> Result<Option<(TaskState, u64)>, String> {
        let entry = self
            .tasks
            .entry(id)
            .await
            .map_err(|err| format!("NATS at {}: task {id}: {err}", self.url))?;
        let Some(entry) = entry else { return Ok(None) };
        if entry.operation != kv::Operation::Put {
            return Ok(None);
        }
        let state = serde_json::from_slice::<TaskState>(&entry.value)
            .map_err(|err| format!("task {id}: its state is not readable: {err}"))?;
        Ok(Some((state, entry.revision)))
    }

    /// Changes a task's state with `change`, compare-and-set (retried when another process
    /// changed it in between). A final state is never changed: `Ok(None)` then, with the
    /// state left as it is — so a task has exactly one result, whoever else finishes it.
    pub async fn update(
        &self,
        id: &str,
        mut change: impl FnMut(&mut TaskState),
    ) -> Result<Option<TaskState>, String> {
        for _ in 0..64 {
            let Some((mut state, revision)) = self.state(id).await? else {
                return Err(format!("no task {id} in the fleet at {}", self.url));
            };
            if state.status.is_final() {
                return Ok(None);
            }
            change(&mut state);
            state.updated_at = crate::task::now();
            let bytes = Bytes::from(serde_json::to_vec(&state).unwrap_or_default());
            match self.tasks.update(id, bytes, revision).await {
                Ok(_) => return Ok(Some(state)),
                Err(err) if err.kind() == kv::UpdateErrorKind::WrongLastRevision => continue,
                Err(err) => return Err(format!("NATS at {}: task {id}: {err}", self.url)),
            }
        }
        Err(format!(
            "task {id}: its state kept changing under this update"
        ))
    }

    /// Records a state for an id no task has yet (a malformed message's result). `false`:
    /// one is there already.
    pub async fn create_state(&self, state: &TaskState) -> Result<bool, String> {
        let bytes = Bytes::from(serde_json::to_vec(state).unwrap_or_default());
        match self.tasks.create(&state.id, bytes).await {
            Ok(_) => Ok(true),
            Err(err) if err.kind() == kv::CreateErrorKind::AlreadyExists => Ok(false),
            Err(err) => Err(format!("NATS at {}: task {}: {err}", self.url, state.id)),
        }
    }

    /// Every task's state, oldest first.
    pub async fn list(&self) -> Result<Vec<TaskState>, String> {
        use futures::TryStreamExt;
        let keys: Vec<String> = match self.tasks.keys().await {
            Ok(keys) => keys
                .try_collect()
                .await
                .map_err(|err| format!("NATS at {}: the task list: {err}", self.url))?,
            Err(err) => return Err(format!("NATS at {}: the task list: {err}", self.url)),
        };
        let mut states = Vec::new();
        for key in keys {
            if let Some((state, _)) = self.state(&key).await? {
                states.push(state);
            }
        }
        states.sort_by(|a, b| (&a.submitted_at, &a.id).cmp(&(&b.submitted_at, &b.id)));
        Ok(states)
    }

    /// Puts `bytes` in the result store under `name`.
    pub async fn put_object(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        let mut reader = bytes;
        self.results
            .put(name, &mut reader)
            .await
            .map(|_| ())
            .map_err(|err| format!("NATS at {}: storing {name}: {err}", self.url))
    }

    /// The object `name` of the result store (`None`: there is none).
    pub async fn get_object(&self, name: &str) -> Result<Option<Vec<u8>>, String> {
        use tokio::io::AsyncReadExt;
        let mut object = match self.results.get(name).await {
            Ok(object) => object,
            Err(err) if err.kind() == object_store::GetErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(format!("NATS at {}: reading {name}: {err}", self.url)),
        };
        let mut bytes = Vec::new();
        object
            .read_to_end(&mut bytes)
            .await
            .map_err(|err| format!("NATS at {}: reading {name}: {err}", self.url))?;
        Ok(Some(bytes))
    }

    /// Whether a task is over.
    pub async fn is_final(&self, id: &str) -> Result<bool, String> {
        Ok(self
            .state(id)
            .await?
            .is_some_and(|(state, _)| state.status.is_final()))
    }
}

async fn bucket(js: &jetstream::Context, name: &str, replicas: usize) -> Result<kv::Store, String> {
    if let Ok(store) = js.get_key_value(name).await {
        return Ok(store);
    }
    js.create_key_value(kv::Config {
        bucket: name.to_string(),
        history: 1,
        num_replicas: replicas,
        storage: stream::StorageType::File,
        ..Default::default()
    })
    .await
    .map_err(|err| err.to_string())
}

/// Connects with the options' credentials and TLS; the error names the URL and the fix.
pub async fn connect(options: &NatsOptions) -> Result<async_nats::Client, String> {
    let url = options.url.trim();
    if url.is_empty() {
        return Err(
            "no NATS server given: pass --nats nats://HOST:4222 (or set BRAINCODE_NATS)".into(),
        );
    }
    let mut connect = match &options.creds_file {
        Some(path) => async_nats::ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|err| {
                format!(
                    "the credentials file {}: {err}; give the .creds file made for this user (`nsc generate creds`: a user JWT and its nkey seed)",
                    path.display()
                )
            })?,
        None => async_nats::ConnectOptions::new(),
    };
    if let Some(path) = &options.nkey_file {
        connect = connect.nkey(nkey_seed(path)?);
    }
    match (&options.user, &options.password) {
        (Some(user), Some(password)) => {
            connect = connect.user_and_password(user.clone(), password.clone());
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err("--nats-user and --nats-password go together".to_string());
        }
        (None, None) => {}
    }
    if let Some(token) = &options.token {
        connect = connect.token(token.clone());
    }
    if let Some(ca) = &options.tls_ca {
        connect = connect.add_root_certificates(ca.clone()).require_tls(true);
    }
    match (&options.tls_cert, &options.tls_key) {
        (Some(cert), Some(key)) => {
            connect = connect
                .add_client_certificate(cert.clone(), key.clone())
                .require_tls(true);
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err("--nats-tls-cert and --nats-tls-key go together".to_string());
        }
        (None, None) => {}
    }
    if options.tls {
        connect = connect.require_tls(true);
    }
    if let Some(name) = &options.name {
        connect = connect.name(name);
    }
    // A cluster is given as several URLs; the client fails over between them.
    let servers: Vec<&str> = url
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .collect();
    connect
        .connection_timeout(Duration::from_secs(5))
        .connect(servers)
        .await
        .map_err(|err| {
            let text = err.to_string().to_ascii_lowercase();
            let tls = ["certificate", "tls", "handshake"]
                .iter()
                .any(|word| text.contains(word));
            let fix = match err.kind() {
                _ if tls => {
                    "TLS failed: give the CA that signed the server's certificate with --nats-tls-ca (and a client certificate if the server asks), or drop --nats-tls for a plain server"
                }
                async_nats::ConnectErrorKind::AuthorizationViolation
                | async_nats::ConnectErrorKind::Authentication => {
                    "the server refused the credentials: check --nats-user/--nats-password, --nats-token, --nats-nkey or --nats-creds"
                }
                _ => "is nats-server running there with JetStream on? Start one with `nats-server -js`",
            };
            format!("cannot connect to NATS at {url}: {err}; {fix}")
        })
}

/// The user seed in the nkey seed file at `path` (its one line starting with `S`), checked:
/// a seed that is not one is said so here, with the file, rather than as a failed connection.
fn nkey_seed(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("the nkey seed file {}: {err}", path.display()))?;
    let seed = text
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with('S'))
        .ok_or_else(|| {
            format!(
                "the nkey seed file {} holds no seed (a line starting with S, as `nk -gen user` writes)",
                path.display()
            )
        })?;
    nkeys::KeyPair::from_seed(seed).map_err(|err| {
        format!(
            "the nkey seed file {} holds no valid nkey seed ({err}); give the seed of the user the server lists",
            path.display()
        )
    })?;
    Ok(seed.to_string())
}
