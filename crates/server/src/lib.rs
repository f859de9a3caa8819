//! The local control panel (`braincode config`): an axum server bound to 127.0.0.1 that serves
//! server-rendered pages for models, brains, routing, permissions, MCP and hooks, sessions and
//! usage, with its assets embedded in the binary.
//!
//! It is locked to the person who started it: the printed URL carries a random token that
//! becomes an HttpOnly, SameSite=Strict cookie; every request without it gets 401, a foreign
//! `Host` or `Origin` gets 403 (DNS rebinding, CSRF). Writes go through the same loaders and
//! validators as the CLI, are atomic, and are refused (409) when the file changed on disk
//! since the page read it.

mod api;
mod assets;
mod guard;
mod i18n;
mod input;
mod layout;
mod pages;
mod splice;
mod store;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use braincode_config::Home;
use tokio_util::sync::CancellationToken;

/// What the panel serves and where.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The Braincode home whose files the panel reads and writes.
    pub home: Home,
    /// The project whose permissions, MCP servers, hooks and routing the panel shows.
    pub project_root: PathBuf,
    /// The port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// The access token; `None` makes a random one (tests pass their own).
    pub token: Option<String>,
}

/// A running panel.
#[derive(Debug)]
pub struct Panel {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The token the URL carries.
    pub token: String,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Panel {
    /// The address to open: it carries the token once, then the cookie takes over.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.addr, self.token)
    }

    /// The address without the token.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting requests and waits for open ones (live streams end at once).
    pub async fn shutdown(self) -> std::io::Result<()> {
        self.shutdown.cancel();
        self.task.await.unwrap_or_else(|err| {
            Err(std::io::Error::other(format!(
                "the panel's server task failed: {err}"
            )))
        })
    }

    /// Serves until the task ends (Ctrl-C is the caller's business: see [`Panel::shutdown`]).
    pub async fn wait(self) -> std::io::Result<()> {
        self.task.await.unwrap_or_else(|err| {
            Err(std::io::Error::other(format!(
                "the panel's server task failed: {err}"
            )))
        })
    }
}

/// Shared by every handler.
#[derive(Debug)]
pub(crate) struct State {
    pub home: Home,
    pub project_root: PathBuf,
    pub token: String,
    /// `Host` values a request may carry (`127.0.0.1:<port>`, `localhost:<port>`).
    pub hosts: Vec<String>,
    /// Serializes read-check-write of the configuration files.
    pub write_lock: tokio::sync::Mutex<()>,
    /// Cancelled on shutdown, so live streams end.
    pub shutdown: CancellationToken,
    /// Subscription logins started from the panel.
    pub oauth_logins: pages::LoginSessions,
}

pub(crate) type AppState = Arc<State>;

/// Binds 127.0.0.1 and starts serving in the background.
pub async fn start(options: ServeOptions) -> std::io::Result<Panel> {
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, options.port)))
            .await
            .map_err(|err| {
                std::io::Error::new(
                    err.kind(),
                    format!(
                        "cannot listen on 127.0.0.1:{}: {err}; pick another port with --port, or 0 for any free one",
                        options.port
                    ),
                )
            })?;
    let addr = listener.local_addr()?;
    let token = options.token.unwrap_or_else(guard::random_token);
    let shutdown = CancellationToken::new();
    let state = Arc::new(State {
        home: options.home,
        project_root: options.project_root,
        token: token.clone(),
        hosts: vec![
            format!("127.0.0.1:{}", addr.port()),
            format!("localhost:{}", addr.port()),
        ],
        write_lock: tokio::sync::Mutex::new(()),
        shutdown: shutdown.clone(),
        oauth_logins: pages::LoginSessions::default(),
    });
    let app = router(state);
    let stop = shutdown.clone();
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    });
    Ok(Panel {
        addr,
        token,
        shutdown,
        task,
    })
}

fn router(state: AppState) -> Router {
    pages::routes()
        .merge(assets::routes())
        .fallback(layout::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .layer(axum::middleware::from_fn(i18n::scope))
        .with_state(state)
}
