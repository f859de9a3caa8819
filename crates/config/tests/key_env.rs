//! Credential lookup order through real environment variables. This file holds one test so
//! that its process has no other thread reading the environment while it is changed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_config::{AuthStore, Home, KeySource, resolve_api_key, resolve_api_key_with_source};

#[test]
#[allow(unsafe_code)]
fn key_resolution_order_is_auth_file_then_model_env_then_provider_env() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    // Variable names unique to this test: no other test reads them.
    // SAFETY: this test is the only one in its binary (its own process), so no other thread
    // reads or writes the environment while it is changed.
    unsafe {
        std::env::set_var("BC_ORDER_LAB_API_KEY", "from-provider-env");
        std::env::set_var("BC_ORDER_MODEL_KEY", "from-model-env");
        std::env::set_var("BC_ORDER_EMPTY", "  ");
    }
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
