//! `braincode-mcp-test-server`: a small MCP server for Braincode's tests, over stdio
//! (default, or `--stdio`) or streamable HTTP (`--http <addr-file>`: binds 127.0.0.1:0,
//! writes `127.0.0.1:PORT` to the file, serves `/mcp`).
//!
//! Tools: `echo`, `add`, `fail`, `hang`, `crash`, `write_marker`, `image`, `env`, and with
//! `MCP_TEST_EXTRA_TOOLS=N` N more (`extra_01`…). `tools/list` pages by ten.
//!
//! Environment:
//! - `MCP_TEST_STARTUP_DELAY_MS`: sleep this long before serving;
//! - `MCP_TEST_EXIT_AT_START=<code>`: print a line to stderr and exit with `code` at once;
//! - `MCP_TEST_CALL_LOG=<file>`: append each called tool's name to the file;
//! - `MCP_TEST_TAVILY=1`: also list a Tavily-like `tavily_search` (needs `TAVILY_API_KEY`);
//! - `MCP_TEST_TOKEN=<token>` (HTTP): require `Authorization: Bearer <token>`.
#![allow(clippy::print_stderr)]

mod tools;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};

/// Tools per `tools/list` page.
const PAGE: usize = 10;

#[derive(Clone)]
struct TestServer {
    tools: Arc<Vec<Tool>>,
    call_log: Option<PathBuf>,
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "braincode-mcp-test-server",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("A server for Braincode's MCP tests.")
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse::<usize>().ok())
            .unwrap_or(0)
            .min(self.tools.len());
        let end = (start + PAGE).min(self.tools.len());
        let mut result = ListToolsResult::with_all_items(self.tools[start..end].to_vec());
        result.next_cursor = (end < self.tools.len()).then(|| end.to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tools::log_call(self.call_log.as_ref(), &request.name);
        let args = request.arguments.unwrap_or_default();
        tools::call(&request.name, &args, context.ct, self.call_log.as_ref())
            .await
            .map(CallToolResponse::Complete)
    }
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

fn main() {
    if let Ok(code) = std::env::var("MCP_TEST_EXIT_AT_START") {
        eprintln!("test server: refusing to start: bad config");
        std::process::exit(code.trim().parse().unwrap_or(1));
    }
    if let Some(ms) = env_number("MCP_TEST_STARTUP_DELAY_MS") {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let extra = env_number("MCP_TEST_EXTRA_TOOLS").unwrap_or(0);
    let mut all = tools::all_tools(usize::try_from(extra).unwrap_or(0));
    if std::env::var_os("MCP_TEST_TAVILY").is_some() {
        all.push(tools::tavily_search_tool());
    }
    let server = TestServer {
        tools: Arc::new(all),
        call_log: std::env::var_os("MCP_TEST_CALL_LOG").map(PathBuf::from),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("test server: no runtime: {e}");
            std::process::exit(1);
        }
    };
    let outcome = match args.first().map(String::as_str) {
        None | Some("--stdio") => runtime.block_on(serve_stdio(server)),
        Some("--http") => match args.get(1) {
            Some(addr_file) => runtime.block_on(serve_http(server, PathBuf::from(addr_file))),
            None => Err("--http needs the file to write the address to".to_string()),
        },
        Some(other) => Err(format!(
            "unknown argument {other:?} (use --stdio or --http <file>)"
        )),
    };
    if let Err(message) = outcome {
        eprintln!("test server: {message}");
        std::process::exit(1);
    }
}

async fn serve_stdio(server: TestServer) -> Result<(), String> {
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

async fn serve_http(server: TestServer, addr_file: PathBuf) -> Result<(), String> {
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Ok(token) = std::env::var("MCP_TEST_TOKEN") {
        let expected: Arc<str> = format!("Bearer {token}").into();
        router = router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let expected = Arc::clone(&expected);
                async move { require_token(&expected, request, next).await }
            },
        ));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("local addr: {e}"))?;
    // Written whole then renamed, so a reader never sees half an address.
    let partial = addr_file.with_extension("partial");
    std::fs::write(&partial, addr.to_string()).map_err(|e| format!("write addr: {e}"))?;
    std::fs::rename(&partial, &addr_file).map_err(|e| format!("rename addr: {e}"))?;
    axum::serve(listener, router)
        .await
        .map_err(|e| format!("serve: {e}"))
}

async fn require_token(expected: &str, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if given == Some(expected) {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong token",
        )
            .into_response()
    }
}
