//! One live connection to one server.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ProtocolVersion, RequestId, ServerResult,
};
use rmcp::service::{
    ClientInitializeError, Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError,
    ServiceExt,
};
use rmcp::transport::IntoTransport;
use tokio_util::sync::CancellationToken;

use crate::McpError;
use crate::convert::{call_output, rpc_error, server_info, tool_info};
use crate::http::{self, chain, http_failure};
use crate::process::{self, ChildProcess, EXIT_GRACE, ExitWatch};
use crate::types::{Arguments, CallOutput, Endpoint, ServerInfo, ServerSpec, ToolInfo};

/// The message of [`McpError::Protocol`] when the transport closed under us: the server is
/// gone (the hub restarts it).
pub(crate) const CONNECTION_CLOSED: &str = "the connection to the server closed";

/// How long closing the session may take before the process is signalled anyway.
const CLOSE_BUDGET: Duration = Duration::from_secs(2);

type Service = RunningService<RoleClient, ClientConfig>;

/// A connected server: handshake done, tools listed.
pub struct Connection {
    peer: Peer<RoleClient>,
    service: Mutex<Option<Service>>,
    closed: AtomicBool,
    info: ServerInfo,
    tools: Vec<ToolInfo>,
    /// The server's process (stdio servers). Dropping it kills the process group.
    process: Option<ChildProcess>,
    /// The endpoint URL (HTTP servers), to read errors against.
    url: Option<String>,
}

/// Whether a failed call's request may have reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// It was never written: sending it again cannot repeat an effect.
    NotSent,
    /// It may have been read (and acted on).
    MaybeSent,
}

/// Which step of the handshake is running, for the timeout message.
const PHASE_INITIALIZE: u8 = 0;
const PHASE_TOOLS_LIST: u8 = 1;

fn phase_name(phase: &AtomicU8) -> &'static str {
    match phase.load(Ordering::Acquire) {
        PHASE_INITIALIZE => "initialize",
        _ => "tools/list",
    }
}

/// Why the handshake failed, before it is read against the transport.
enum HandshakeFailure {
    Initialize(Box<ClientInitializeError>),
    ToolsList(ServiceError),
}

impl HandshakeFailure {
    /// The server's JSON-RPC error answer, when that is what the failure is.
    fn into_rpc(self) -> Result<McpError, HandshakeFailure> {
        match self {
            HandshakeFailure::Initialize(e) => match *e {
                ClientInitializeError::JsonRpcError(data) => Ok(rpc_error(data)),
                other => Err(HandshakeFailure::Initialize(Box::new(other))),
            },
            HandshakeFailure::ToolsList(ServiceError::McpError(data)) => Ok(rpc_error(data)),
            other => Err(other),
        }
    }
}

/// How a bounded step ended.
enum Ended<T> {
    Done(T),
    TimedOut,
    Cancelled,
}

async fn bounded<F: Future>(
    future: F,
    budget: Duration,
    cancel: &CancellationToken,
) -> Ended<F::Output> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Ended::Cancelled,
        result = tokio::time::timeout(budget, future) => match result {
            Ok(output) => Ended::Done(output),
            Err(_) => Ended::TimedOut,
        },
    }
}

/// We speak the `initialize` lifecycle, so we offer the newest revision that has one (rmcp's
/// default names a revision without it); the server answers with the one it speaks.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("braincode", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// `initialize` + `notifications/initialized` (rmcp sends it) + every page of `tools/list`.
async fn handshake<T, E, A>(
    transport: T,
    phase: &AtomicU8,
) -> Result<(Service, ServerInfo, Vec<ToolInfo>), HandshakeFailure>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    phase.store(PHASE_INITIALIZE, Ordering::Release);
    let service = client_config()
        .serve(transport)
        .await
        .map_err(|e| HandshakeFailure::Initialize(Box::new(e)))?;
    phase.store(PHASE_TOOLS_LIST, Ordering::Release);
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(HandshakeFailure::ToolsList)?;
    let info = server_info(service.peer().peer_info().as_deref());
    Ok((service, info, tools.into_iter().map(tool_info).collect()))
}

/// Whether a failure means the other side went away (rather than said something wrong).
fn init_closed(error: &ClientInitializeError) -> bool {
    matches!(
        error,
        ClientInitializeError::ConnectionClosed(_) | ClientInitializeError::TransportError { .. }
    )
}

fn service_closed(error: &ServiceError) -> bool {
    matches!(
        error,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

impl Connection {
    /// Spawns or reaches the server, runs `initialize` + `notifications/initialized` +
    /// `tools/list` (all pages), within `spec.startup_timeout`. Cancelling stops it.
    pub async fn connect(
        spec: &ServerSpec,
        cancel: &CancellationToken,
    ) -> Result<Connection, McpError> {
        match &spec.endpoint {
            Endpoint::Stdio { command, display } => {
                let (process, pipes) = process::spawn(command(), display)?;
                Self::connect_stdio(spec, process, pipes, cancel).await
            }
            Endpoint::Http { url, headers } => {
                let transport = http::transport(url, headers)?;
                Self::connect_http(spec, url, transport, cancel).await
            }
        }
    }

    async fn connect_stdio(
        spec: &ServerSpec,
        process: ChildProcess,
        pipes: process::Pipes,
        cancel: &CancellationToken,
    ) -> Result<Connection, McpError> {
        let phase = AtomicU8::new(PHASE_INITIALIZE);
        let ended = bounded(
            Box::pin(handshake(pipes, &phase)),
            spec.startup_timeout,
            cancel,
        )
        .await;
        let error = match ended {
            Ended::Done(Ok((service, info, tools))) => {
                return Ok(Connection::new(service, info, tools, Some(process), None));
            }
            Ended::Done(Err(failure)) => stdio_handshake_error(process.watch(), failure).await,
            Ended::TimedOut => McpError::Timeout {
                what: phase_name(&phase).to_string(),
                after_ms: millis(spec.startup_timeout),
                stderr_tail: process.watch().stderr_tail(),
            },
            Ended::Cancelled => McpError::Cancelled,
        };
        process.terminate().await;
        Err(error)
    }

    async fn connect_http(
        spec: &ServerSpec,
        url: &str,
        transport: http::HttpTransport,
        cancel: &CancellationToken,
    ) -> Result<Connection, McpError> {
        let phase = AtomicU8::new(PHASE_INITIALIZE);
        match bounded(
            Box::pin(handshake(transport, &phase)),
            spec.startup_timeout,
            cancel,
        )
        .await
        {
            Ended::Done(Ok((service, info, tools))) => Ok(Connection::new(
                service,
                info,
                tools,
                None,
                Some(url.to_string()),
            )),
            Ended::Done(Err(failure)) => Err(http_handshake_error(failure, url)),
            Ended::TimedOut => Err(McpError::Timeout {
                what: phase_name(&phase).to_string(),
                after_ms: millis(spec.startup_timeout),
                stderr_tail: String::new(),
            }),
            Ended::Cancelled => Err(McpError::Cancelled),
        }
    }

    fn new(
        service: Service,
        info: ServerInfo,
        tools: Vec<ToolInfo>,
        process: Option<ChildProcess>,
        url: Option<String>,
    ) -> Connection {
        Connection {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            closed: AtomicBool::new(false),
            info,
            tools,
            process,
            url,
        }
    }

    /// What the server said about itself.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// Its tools.
    pub fn tools(&self) -> &[ToolInfo] {
        &self.tools
    }

    /// The process id of a stdio server, which is also its process group id (`None` for
    /// HTTP servers).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ChildProcess::pid)
    }

    /// Whether the transport is still up (the process has not exited, the stream is open).
    pub fn is_alive(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
            && !self.peer.is_transport_closed()
            && self
                .process
                .as_ref()
                .is_none_or(|p| p.watch().status().is_none())
    }

    /// The process's exit and stderr, for whoever wants to learn of its death.
    pub(crate) fn exit_watch(&self) -> Option<ExitWatch> {
        self.process.as_ref().map(|p| p.watch().clone())
    }

    /// Calls one tool. A timeout sends `notifications/cancelled` and returns
    /// [`McpError::Timeout`]; a server dying mid-call returns [`McpError::Exited`] with its
    /// stderr tail.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Arguments,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, McpError> {
        self.call_tracked(tool, arguments, timeout, cancel)
            .await
            .map_err(|(error, _)| error)
    }

    /// [`Connection::call`], telling on failure whether the request may have reached the
    /// server: an undelivered call is safe to send again (it cannot have had effects).
    pub(crate) async fn call_tracked(
        &self,
        tool: &str,
        arguments: Arguments,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, (McpError, Delivery)> {
        if cancel.is_cancelled() {
            return Err((McpError::Cancelled, Delivery::NotSent));
        }
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = match self
            .peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
        {
            Ok(handle) => handle,
            // The service loop is gone: nothing was sent.
            Err(error) => return Err((self.call_error(error).await, Delivery::NotSent)),
        };
        let id = handle.id.clone();
        match bounded(handle.await_response(), timeout, cancel).await {
            Ended::Done(Ok(result)) => self.call_result(result),
            // The write failed (a closed pipe, a refused POST): the server never read it.
            Ended::Done(Err(error @ ServiceError::TransportSend(_))) => {
                Err((self.call_error(error).await, Delivery::NotSent))
            }
            Ended::Done(Err(error)) => Err((self.call_error(error).await, Delivery::MaybeSent)),
            Ended::TimedOut => {
                self.abandon(id, "timed out").await;
                Err((
                    McpError::Timeout {
                        what: format!("tools/call {tool}"),
                        after_ms: millis(timeout),
                        stderr_tail: self.stderr_tail(),
                    },
                    Delivery::MaybeSent,
                ))
            }
            Ended::Cancelled => {
                self.abandon(id, "cancelled by the user").await;
                Err((McpError::Cancelled, Delivery::MaybeSent))
            }
        }
    }

    fn call_result(&self, result: ServerResult) -> Result<CallOutput, (McpError, Delivery)> {
        match result {
            ServerResult::CallToolResult(result) => Ok(call_output(result)),
            // A reply without `content` decodes as an empty result: an empty output.
            ServerResult::EmptyResult(_) => Ok(CallOutput::default()),
            _ => Err((
                McpError::Protocol {
                    message: "the server answered tools/call with something other than a tool \
                              result"
                        .to_string(),
                    stderr_tail: self.stderr_tail(),
                },
                Delivery::MaybeSent,
            )),
        }
    }

    /// Tells the server we stopped waiting for request `id` (`notifications/cancelled`).
    async fn abandon(&self, id: RequestId, reason: &str) {
        let param = CancelledNotificationParam::new(Some(id), Some(reason.to_string()));
        // Best effort, and never long: a server that stopped reading must not hold us.
        let _ = tokio::time::timeout(CLOSE_BUDGET, self.peer.notify_cancelled(param)).await;
    }

    fn stderr_tail(&self) -> String {
        self.process
            .as_ref()
            .map(|p| p.watch().stderr_tail())
            .unwrap_or_default()
    }

    async fn call_error(&self, error: ServiceError) -> McpError {
        if service_closed(&error) {
            if let (ServiceError::TransportSend(e), Some(url)) = (&error, &self.url)
                && let Some(failure) = http_failure(e.error.as_ref(), url)
            {
                return failure;
            }
            return self.death_error().await;
        }
        match error {
            ServiceError::McpError(data) => rpc_error(data),
            ServiceError::Cancelled { .. } => McpError::Cancelled,
            ServiceError::Timeout { timeout } => McpError::Timeout {
                what: "tools/call".to_string(),
                after_ms: millis(timeout),
                stderr_tail: self.stderr_tail(),
            },
            ServiceError::UnexpectedResponse => McpError::Protocol {
                message: "the server answered tools/call with something else than a tool result"
                    .to_string(),
                stderr_tail: self.stderr_tail(),
            },
            other => McpError::Protocol {
                message: service_message(&other),
                stderr_tail: self.stderr_tail(),
            },
        }
    }

    /// Why the transport is gone: the process's exit (stdio, when it exited within a short
    /// grace), else a closed connection.
    pub(crate) async fn death_error(&self) -> McpError {
        if let Some(process) = &self.process
            && let Some(exit) = process.watch().exited_within(EXIT_GRACE).await
        {
            return process.watch().exit_error(exit).await;
        }
        McpError::Protocol {
            message: CONNECTION_CLOSED.to_string(),
            stderr_tail: self.stderr_tail(),
        }
    }

    /// Stops the server: closes the session, then SIGTERM to a stdio server's process group
    /// and SIGKILL one second later if it is still there.
    pub async fn shutdown(self) {
        self.close().await;
    }

    /// [`Connection::shutdown`] for a shared connection (calls in flight end with an error).
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut service) = service {
            // For HTTP this also deletes the session.
            let _ = service.close_with_timeout(CLOSE_BUDGET).await;
        }
        if let Some(process) = &self.process {
            process.terminate().await;
        }
    }
}

async fn stdio_handshake_error(watch: &ExitWatch, failure: HandshakeFailure) -> McpError {
    let closed = match &failure {
        HandshakeFailure::Initialize(e) => init_closed(e),
        HandshakeFailure::ToolsList(e) => service_closed(e),
    };
    if closed && let Some(exit) = watch.exited_within(EXIT_GRACE).await {
        return watch.exit_error(exit).await;
    }
    let stderr_tail = watch.stderr_tail();
    let failure = match failure.into_rpc() {
        Ok(rpc) => return rpc,
        Err(failure) => failure,
    };
    match failure {
        _ if closed => McpError::Protocol {
            message: CONNECTION_CLOSED.to_string(),
            stderr_tail,
        },
        HandshakeFailure::Initialize(e) => McpError::Protocol {
            message: format!("initialize failed: {}", init_message(&e)),
            stderr_tail,
        },
        HandshakeFailure::ToolsList(e) => McpError::Protocol {
            message: format!("tools/list failed: {}", service_message(&e)),
            stderr_tail,
        },
    }
}

fn http_handshake_error(failure: HandshakeFailure, url: &str) -> McpError {
    let protocol = |message: String| McpError::Protocol {
        message,
        stderr_tail: String::new(),
    };
    let failure = match failure.into_rpc() {
        Ok(rpc) => return rpc,
        Err(failure) => failure,
    };
    match failure {
        HandshakeFailure::Initialize(e) => init_transport_error(&e)
            .and_then(|source| http_failure(source, url))
            .unwrap_or_else(|| protocol(format!("initialize failed: {}", init_message(&e)))),
        HandshakeFailure::ToolsList(e) => service_transport_error(&e)
            .and_then(|source| http_failure(source, url))
            .unwrap_or_else(|| protocol(format!("tools/list failed: {}", service_message(&e)))),
    }
}

/// The transport's own error inside an `initialize` failure (rmcp does not chain it).
fn init_transport_error(
    error: &ClientInitializeError,
) -> Option<&(dyn std::error::Error + 'static)> {
    match error {
        ClientInitializeError::TransportError { error, .. } => Some(error.error.as_ref()),
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            init_transport_error(fallback)
        }
        _ => None,
    }
}

fn service_transport_error(error: &ServiceError) -> Option<&(dyn std::error::Error + 'static)> {
    match error {
        ServiceError::TransportSend(error) => Some(error.error.as_ref()),
        _ => None,
    }
}

/// An `initialize` failure in words, without rmcp's transport type names.
fn init_message(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::TransportError { error, context } => {
            format!("{context}: {}", chain(error.error.as_ref()))
        }
        other => chain(other),
    }
}

fn service_message(error: &ServiceError) -> String {
    match service_transport_error(error) {
        Some(source) => chain(source),
        None => chain(error),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
