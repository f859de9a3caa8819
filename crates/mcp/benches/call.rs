//! Round trip of one `echo` call to a local stdio server: through [`Hub::call`] (what the
//! runtime uses) and straight through [`Connection::call`] (to see what the hub adds).
//!
//! `cargo bench -p braincode-mcp --bench call`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use braincode_mcp::{Arguments, Connection, Endpoint, Hub, ServerSpec, ServerStatus};
use braincode_test_support::mcp::test_server_binary;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn spec() -> ServerSpec {
    let binary = test_server_binary();
    ServerSpec {
        name: "bench".into(),
        endpoint: Endpoint::Stdio {
            command: Arc::new(move || {
                let mut command = Command::new(&binary);
                command.arg("--stdio");
                command
            }),
            display: "braincode-mcp-test-server --stdio".into(),
        },
        startup_timeout: Duration::from_secs(30),
        call_timeout: Duration::from_secs(30),
    }
}

fn echo_args() -> Arguments {
    match json!({"text": "hello from the bench"}) {
        Value::Object(map) => map,
        _ => Arguments::new(),
    }
}

fn call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let args = echo_args();

    let hub = Hub::new(vec![spec()]);
    let state = runtime
        .block_on(hub.wait("bench", Duration::from_secs(30)))
        .unwrap();
    assert_eq!(state.status, ServerStatus::Connected, "{:?}", state.error);
    c.bench_function("hub_call_echo_stdio", |b| {
        b.iter(|| {
            let out = runtime
                .block_on(hub.call("bench", "echo", args.clone(), &cancel))
                .unwrap();
            black_box(out);
        });
    });
    runtime.block_on(hub.shutdown());

    let conn = runtime
        .block_on(Connection::connect(&spec(), &cancel))
        .unwrap();
    c.bench_function("connection_call_echo_stdio", |b| {
        b.iter(|| {
            let out = runtime
                .block_on(conn.call("echo", args.clone(), Duration::from_secs(30), &cancel))
                .unwrap();
            black_box(out);
        });
    });
    runtime.block_on(conn.shutdown());
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(200)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = call
}
criterion_main!(benches);
