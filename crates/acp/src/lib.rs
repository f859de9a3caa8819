//! Braincode inside the editor: an Agent Client Protocol agent (`braincode acp`).
//!
//! The editor starts `braincode acp` and speaks JSON-RPC on its stdin/stdout (the official
//! `agent-client-protocol` crate, protocol v1); everything else the process says goes to
//! stderr or a log file. Each ACP session is a Braincode session, each prompt one run of it:
//! the journal's records become `session/update`s ([`updates`]), approvals become
//! `session/request_permission` ([`approve`]), file reads and edits go through the editor
//! when it offers them ([`files`]), a journaled session is replayed by `session/load`
//! ([`load`]).

mod approve;
mod files;
mod load;
mod prompt;
mod server;
mod session;
mod updates;

use std::sync::Arc;
use std::time::Duration;

use braincode_config::Home;
use braincode_runtime::PermissionMode;
use tokio_util::sync::CancellationToken;

pub use agent_client_protocol::{ConnectTo, Error as AcpError, Stdio};
pub use approve::REJECTED;
pub use files::FS_TIMEOUT;
pub use prompt::MAX_IMAGE_BASE64;
pub use session::SHUTDOWN_GRACE;
pub use updates::MAX_UPDATE_TEXT;

/// How long a permission request waits for the editor by default.
pub const DEFAULT_PERMISSION_TIMEOUT: Duration = Duration::from_secs(300);

/// How `braincode acp` serves.
#[derive(Debug, Clone)]
pub struct AcpOptions {
    /// The Braincode home.
    pub home: Home,
    /// How long a permission request waits for the editor before the call is blocked.
    pub permission_timeout: Duration,
    /// The mode new sessions start in (the editor switches it with `session/set_mode`).
    pub default_mode: PermissionMode,
    /// Whether the runs' commands may use the network.
    pub allow_network: bool,
    /// Fired to stop serving (SIGTERM, SIGINT): every run is then ended like at the end of
    /// stdin.
    pub stop: CancellationToken,
}

impl AcpOptions {
    /// Defaults for `home`: ask before each change, five minutes per approval.
    pub fn new(home: Home) -> Self {
        Self {
            home,
            permission_timeout: DEFAULT_PERMISSION_TIMEOUT,
            default_mode: PermissionMode::Ask,
            allow_network: false,
            stop: CancellationToken::new(),
        }
    }
}

/// Serves ACP on `transport` (stdin/stdout: [`Stdio::new`]) until the editor closes it or
/// `options.stop` fires; every run is then ended and its journal closed before this returns.
pub async fn serve(
    options: AcpOptions,
    transport: impl ConnectTo<agent_client_protocol::Agent> + 'static,
) -> Result<(), AcpError> {
    let shared = Arc::new(session::Shared::new(
        options.home,
        options.permission_timeout,
        options.default_mode,
        options.allow_network,
    ));
    server::serve_on(shared, transport, options.stop).await
}
