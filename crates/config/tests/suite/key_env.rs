//! Credential lookup order through real environment variables. The test re-runs itself in a
//! child process whose environment holds the variables, set at spawn: no test changes the
//! environment of this process, where other tests' threads read it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use braincode_config::{AuthStore, Home, KeySource, resolve_api_key, resolve_api_key_with_source};

use crate::common::test_name;

/// Set in the child process, which runs the checks.
const CHILD_ENV: &str = "BRAINCODE_TEST_KEY_ENV_CHILD";

#[test]
fn key_resolution_order_is_auth_file_then_model_env_then_provider_env() {
    if std::env::var_os(CHILD_ENV).is_none() {
        let name = test_name(
            module_path!(),
            "key_resolution_order_is_auth_file_then_model_env_then_provider_env",
        );
        // Variable names unique to this test: no other test reads them.
        let output = Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, "1")
            .env("BC_ORDER_LAB_API_KEY", "from-provider-env")
            .env("BC_ORDER_MODEL_KEY", "from-model-env")
            .env("BC_ORDER_EMPTY", "  ")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("1 passed"), "child ran no test:\n{stdout}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let resolved = resolve_api_key_with_source(&home, "bc-order-lab", None)
        .unwrap()
        .unwrap();
    assert_eq!(
        resolved.source,
        KeySource::Env("BC_ORDER_LAB_API_KEY".into())
    );
    let resolved = resolve_api_key_with_source(&home, "bc-order-lab", Some("BC_ORDER_MODEL_KEY"))
        .unwrap()
        .unwrap();
    assert_eq!(resolved.key.expose(), "from-model-env");
    let resolved = resolve_api_key_with_source(&home, "bc-order-lab", Some("BC_ORDER_EMPTY"))
        .unwrap()
        .unwrap();
    assert_eq!(
        resolved.key.expose(),
        "from-provider-env",
        "empty values are skipped"
    );
    AuthStore::new(&home)
        .set_api_key("bc-order-lab", "from-file")
        .unwrap();
    let resolved = resolve_api_key_with_source(&home, "bc-order-lab", Some("BC_ORDER_MODEL_KEY"))
        .unwrap()
        .unwrap();
    assert_eq!(resolved.source, KeySource::AuthFile);
    assert_eq!(
        resolve_api_key(&home, "bc-order-lab", None)
            .unwrap()
            .expose(),
        "from-file"
    );
    assert!(resolve_api_key(&home, "bc-order-nobody", None).is_none());
}
