//! Stores: auth.json safety, malformed files of every kind, support discovery.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::PermissionsExt;

use braincode_config::{
    AuthStore, ConfigError, CredentialKind, Home, Scope, check_trust, discover_support, load_hooks,
    load_mcp_servers, load_settings, read_json_file, resolve_api_key,
};

fn mode(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn auth_file_is_created_0600_and_status_has_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let store = AuthStore::new(&home);
    store
        .set_api_key("openrouter", "  sk-or-SECRET-1  ")
        .unwrap();
    store.set_api_key("anthropic", "sk-ant-SECRET-2").unwrap();
    assert_eq!(mode(&home.auth_path()), 0o600);
    let status = store.status().unwrap();
    let kinds: Vec<(String, CredentialKind)> = status
        .providers
        .iter()
        .map(|p| (p.provider.clone(), p.kind))
        .collect();
    assert_eq!(
        kinds,
        [
            ("anthropic".to_string(), CredentialKind::ApiKey),
            ("openrouter".to_string(), CredentialKind::ApiKey)
        ]
    );
    let printed = format!("{status:?} {}", serde_json::to_string(&status).unwrap());
    assert!(!printed.contains("SECRET"), "{printed}");
    let key = store.api_key("openrouter").unwrap().unwrap();
    assert_eq!(key.expose(), "sk-or-SECRET-1", "trimmed");
    assert!(!format!("{key:?} {key}").contains("SECRET"));

    assert!(store.remove("openrouter").unwrap());
    assert!(!store.remove("openrouter").unwrap());
    assert_eq!(store.status().unwrap().providers.len(), 1);
    assert_eq!(mode(&home.auth_path()), 0o600);
}

#[test]
fn empty_key_is_an_error_not_a_silent_no_op() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let store = AuthStore::new(&home);
    let err = store.set_api_key("openai", "   ").unwrap_err().to_string();
    assert!(err.contains("empty"), "{err}");
    assert!(err.contains("braincode auth remove openai"), "{err}");
    assert!(!home.auth_path().exists());
    assert!(store.set_api_key("", "k").is_err());
}

#[test]
fn group_readable_auth_file_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    fs::write(
        home.auth_path(),
        r#"{"providers": {"openai": "sk-SECRET"}}"#,
    )
    .unwrap();
    fs::set_permissions(home.auth_path(), fs::Permissions::from_mode(0o644)).unwrap();
    let store = AuthStore::new(&home);
    let err = store.status().unwrap_err();
    assert!(matches!(
        err,
        ConfigError::InsecurePermissions { mode: 0o644, .. }
    ));
    let text = err.to_string();
    assert!(
        text.contains(&format!("chmod 600 {}", home.auth_path().display())),
        "{text}"
    );
    assert!(!text.contains("SECRET"));
    // Writing through the store is refused too, and the file is left as it was.
    assert!(store.set_api_key("anthropic", "k").is_err());
    assert_eq!(mode(&home.auth_path()), 0o644);
    // The lenient resolver does not read the insecure file.
    assert!(resolve_api_key(&home, "openai", Some("BC_TEST_UNSET_VAR_1")).is_none());
}

#[test]
fn oauth_and_object_entries_are_classified() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    fs::write(
        home.auth_path(),
        r#"{"providers": {"a": {"apiKey": "k1"}, "b": {"oauth": {"access": "t", "refresh": "r", "expires": 1}}, "c": 7}}"#,
    )
    .unwrap();
    fs::set_permissions(home.auth_path(), fs::Permissions::from_mode(0o600)).unwrap();
    let store = AuthStore::new(&home);
    let kinds: Vec<CredentialKind> = store
        .status()
        .unwrap()
        .providers
        .iter()
        .map(|p| p.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            CredentialKind::ApiKey,
            CredentialKind::Oauth,
            CredentialKind::Unknown
        ]
    );
    assert_eq!(store.api_key("a").unwrap().unwrap().expose(), "k1");
    assert!(store.api_key("b").unwrap().is_none());
    // Rewriting keeps entries this version does not understand.
    store.set_api_key("d", "k4").unwrap();
    let text = fs::read_to_string(home.auth_path()).unwrap();
    assert!(
        text.contains("\"refresh\"") && text.contains("\"c\": 7"),
        "{text}"
    );
}

#[test]
fn malformed_settings_hooks_and_auth_name_line_column_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(home.root()).unwrap();
    fs::create_dir_all(project.join(".agents")).unwrap();

    fs::write(
        home.settings_path(),
        "{\n  \"features\": {\"hooks\": \"yes\"}\n}",
    )
    .unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(err.contains("settings.json:2:"), "{err}");
    assert!(err.contains("features.hooks"), "{err}");
    assert!(err.contains("expected a boolean"), "{err}");

    fs::write(home.settings_path(), "{\n  \"mode\": \"auto\",\n}").unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(err.contains("settings.json:3:1"), "{err}");
    assert!(err.contains("trailing comma"), "{err}");

    fs::write(
        project.join(".agents/hooks.json"),
        "{\"hooks\": {\"Stop\": [\n  {\"hooks\": [{\"command\": [\"not\", \"a\", \"string\"]}]}]}}",
    )
    .unwrap();
    // Not read before the user trusts the project; located once it is.
    load_hooks(&home, &project, &check_trust(&home, &project).0).unwrap();
    braincode_config::trust_project(&home, &project).unwrap();
    let err = load_hooks(&home, &project, &check_trust(&home, &project).0)
        .unwrap_err()
        .to_string();
    assert!(err.contains(".agents/hooks.json:2:"), "{err}");
    assert!(err.contains("hooks.Stop[0].hooks[0].command"), "{err}");

    fs::write(home.auth_path(), "{\"providers\": ").unwrap();
    fs::set_permissions(home.auth_path(), fs::Permissions::from_mode(0o600)).unwrap();
    let err = AuthStore::new(&home).status().unwrap_err().to_string();
    assert!(err.contains("auth.json:1:"), "{err}");
    assert!(err.contains("EOF"), "{err}");

    fs::write(home.tools_path(), "[1, 2").unwrap();
    let err = read_json_file::<serde_json::Map<String, serde_json::Value>>(&home.tools_path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("tools.json:1:"), "{err}");
}

#[test]
fn malformed_mcp_and_skills_are_skipped_with_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(home.skills_dir()).unwrap();
    fs::create_dir_all(project.join(".agents/skills/deploy")).unwrap();
    fs::write(
        home.mcp_path(),
        "{\"mcpServers\": {\"x\": {\"command\": 5}}}",
    )
    .unwrap();
    fs::write(
        project.join(".mcp.json"),
        "{\"mcpServers\": {\"fs\": {\"command\": \"mcp-fs\"}}}",
    )
    .unwrap();
    fs::write(
        project.join(".agents/skills/deploy/SKILL.md"),
        "Deploy carefully.",
    )
    .unwrap();
    fs::write(project.join(".agents/skills/bad.md"), b"\xff\xfe not utf8").unwrap();
    fs::write(project.join(".agents/skills/.hidden.md"), "hidden").unwrap();
    fs::write(project.join(".agents/skills/empty.md"), "  \n").unwrap();
    fs::write(
        home.skills_dir().join("deploy.md"),
        "user deploy (shadowed)",
    )
    .unwrap();
    fs::write(home.skills_dir().join("review.md"), "Review well.").unwrap();
    fs::write(project.join("AGENTS.md"), "Project rules.").unwrap();
    fs::write(home.agents_md_path(), "User rules.").unwrap();

    braincode_config::trust_project(&home, &project).unwrap();
    let (servers, warnings) = load_mcp_servers(&home, &project, &check_trust(&home, &project).0);
    assert_eq!(servers.len(), 1);
    assert!(warnings[0].contains("mcp.json:1:"), "{warnings:?}");

    let bundle = discover_support(&home, &project, &check_trust(&home, &project).0);
    let skills: Vec<(String, Scope)> = bundle
        .skills
        .iter()
        .map(|s| (s.id.clone(), s.scope))
        .collect();
    assert_eq!(
        skills,
        [
            ("deploy".to_string(), Scope::Project),
            ("review".to_string(), Scope::User)
        ]
    );
    assert!(
        bundle
            .warnings
            .iter()
            .any(|w| w.contains("\"bad\"") && w.contains("UTF-8")),
        "{:?}",
        bundle.warnings
    );
    assert!(
        bundle
            .warnings
            .iter()
            .any(|w| w.contains("MCP config skipped"))
    );

    let section = bundle.support_section();
    let project_at = section.find("Project rules.").unwrap();
    let user_at = section.find("User rules.").unwrap();
    assert!(project_at < user_at);
    assert!(section.contains("take precedence"));
    assert!(section.contains("Skill deploy (project"));
    assert!(!section.contains("shadowed"));
    assert!(section.contains("MCP servers configured: fs (project)"));

    let labels: Vec<String> = bundle
        .context_refs()
        .into_iter()
        .map(|r| r.label.unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "AGENTS.md",
            ".mcp.json",
            "skill:deploy",
            "user AGENTS.md",
            "user mcp.json",
            "user-skill:review"
        ]
    );
    let summary = bundle.summary(&project);
    assert!(summary.agents_md && summary.user_agents_md);
    assert_eq!(summary.skills, ["deploy", "review"]);
    assert_eq!(summary.mcp_servers, ["fs"]);
}

#[test]
fn support_section_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(project.join(".agents/skills")).unwrap();
    fs::create_dir_all(home.root()).unwrap();
    fs::write(project.join("AGENTS.md"), "p".repeat(40_000)).unwrap();
    fs::write(home.agents_md_path(), "u".repeat(40_000)).unwrap();
    for i in 0..15 {
        fs::write(
            project.join(format!(".agents/skills/skill{i:02}.md")),
            "s".repeat(9_000),
        )
        .unwrap();
    }
    let section =
        discover_support(&home, &project, &check_trust(&home, &project).0).support_section();
    assert!(
        section.chars().count() <= 64_000,
        "{}",
        section.chars().count()
    );
    assert!(section.contains("AGENTS.md clipped at 32000 characters"));
    assert!(section.contains("support section clipped at 64000 characters"));
    assert!(section.contains("with your tools"));

    // Fewer, smaller files: skills capped at 12 with an omitted note.
    fs::write(project.join("AGENTS.md"), "short").unwrap();
    fs::write(home.agents_md_path(), "").unwrap();
    for i in 0..15 {
        fs::write(
            project.join(format!(".agents/skills/skill{i:02}.md")),
            format!("skill body {i} {}", "s".repeat(100)),
        )
        .unwrap();
    }
    let bundle = discover_support(&home, &project, &check_trust(&home, &project).0);
    assert!(
        bundle.user_agents_md.is_none(),
        "empty AGENTS.md is skipped"
    );
    let section = bundle.support_section();
    assert!(section.contains("skill body 11"));
    assert!(!section.contains("skill body 12"));
    assert!(section.contains("3 more skills omitted: skill12, skill13, skill14"));
}

#[test]
fn reading_never_creates_files() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    load_settings(&home).unwrap();
    load_hooks(&home, &project, &check_trust(&home, &project).0).unwrap();
    let _ = load_mcp_servers(&home, &project, &check_trust(&home, &project).0);
    let _ = discover_support(&home, &project, &check_trust(&home, &project).0);
    AuthStore::new(&home).status().unwrap();
    assert!(!home.root().exists());
    assert_eq!(fs::read_dir(&project).unwrap().count(), 0);
}

#[test]
fn empty_config_files_are_errors_not_missing_files() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(project.join(".agents")).unwrap();
    fs::create_dir_all(home.root()).unwrap();

    fs::write(home.settings_path(), "").unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(err.contains("settings.json:1:1"), "{err}");
    assert!(err.contains("the file is empty"), "{err}");

    for path in [home.brains_path(), home.models_path(), home.tools_path()] {
        fs::write(&path, " \n").unwrap();
        let err = read_json_file::<serde_json::Value>(&path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("the file is empty"), "{err}");
    }

    fs::write(home.hooks_path(), "").unwrap();
    let err = load_hooks(&home, &project, &check_trust(&home, &project).0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("hooks.json:1:1"), "{err}");

    fs::write(home.mcp_path(), "").unwrap();
    let (_, warnings) = load_mcp_servers(&home, &project, &check_trust(&home, &project).0);
    assert!(
        warnings.iter().any(|w| w.contains("the file is empty")),
        "{warnings:?}"
    );

    fs::write(home.auth_path(), "").unwrap();
    fs::set_permissions(home.auth_path(), fs::Permissions::from_mode(0o600)).unwrap();
    let err = AuthStore::new(&home).status().unwrap_err().to_string();
    assert!(err.contains("the file is empty"), "{err}");
}

#[test]
fn an_auth_json_directory_is_named_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    fs::create_dir_all(home.auth_path()).unwrap();
    let err = AuthStore::new(&home).status().unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");
    assert!(!err.contains("chmod"), "{err}");
}

#[test]
fn call_limits_of_zero_are_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    fs::create_dir_all(home.root()).unwrap();
    fs::write(
        home.settings_path(),
        "{\n  \"models\": {\"timeouts\": {\"idleMs\": 0}}\n}",
    )
    .unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(err.contains("settings.json:2:"), "{err}");
    assert!(err.contains("models.timeouts.idleMs"), "{err}");

    fs::write(
        home.settings_path(),
        "{\"models\": {\"timeouts\": {\"idleMs\": 90000}, \"maxRetries\": 4}}",
    )
    .unwrap();
    let settings = load_settings(&home).unwrap();
    assert_eq!(settings.models.timeouts.idle_ms, Some(90_000));
    assert_eq!(settings.models.max_retries, Some(4));
    assert_eq!(settings.models.prompt_cache, None);

    // Prompt caching: "off", "5m" or "1h"; anything else says where and what is allowed.
    fs::write(
        home.settings_path(),
        "{\"models\": {\"promptCache\": \"1h\"}}",
    )
    .unwrap();
    let settings = load_settings(&home).unwrap();
    assert_eq!(
        settings.models.prompt_cache,
        Some(braincode_protocol::PromptCache::OneHour)
    );
    fs::write(
        home.settings_path(),
        "{\"models\": {\"promptCache\": \"2h\"}}",
    )
    .unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(err.contains("models.promptCache"), "{err}");
    assert!(err.contains("5m") && err.contains("1h"), "{err}");

    fs::write(
        home.models_path(),
        r#"{"models": [{"id": "a/b", "provider": "a", "modelId": "b", "maxReplyBytes": 0}]}"#,
    )
    .unwrap();
    let err = braincode_config::load_models(&home)
        .unwrap_err()
        .to_string();
    assert!(err.contains("models[0].maxReplyBytes"), "{err}");
}

#[test]
fn prices_are_validated_and_built_in_prices_survive_a_restated_entry() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    fs::create_dir_all(home.root()).unwrap();
    fs::write(
        home.models_path(),
        r#"{"models": [{"id": "a/b", "provider": "a", "modelId": "b", "pricing": {"input": -1, "output": 2}}]}"#,
    )
    .unwrap();
    let err = braincode_config::load_models(&home)
        .unwrap_err()
        .to_string();
    assert!(err.contains("models[0].pricing.input"), "{err}");
    fs::write(
        home.models_path(),
        r#"{"models": [{"id": "a/b", "provider": "a", "modelId": "b", "pricing": {"input": 1, "ouput": 2}}]}"#,
    )
    .unwrap();
    let err = braincode_config::load_models(&home)
        .unwrap_err()
        .to_string();
    assert!(err.contains("ouput"), "{err}");

    // Restating the built-in Anthropic model (say, to change its timeouts) keeps its prices.
    fs::write(
        home.models_path(),
        r#"{"models": [{"id": "anthropic/claude-sonnet-4-6", "provider": "anthropic",
            "modelId": "claude-sonnet-4-6", "maxRetries": 5}]}"#,
    )
    .unwrap();
    let models = braincode_config::load_models(&home).unwrap();
    let sonnet = models
        .iter()
        .find(|m| m.id == "anthropic/claude-sonnet-4-6")
        .unwrap();
    assert_eq!(sonnet.max_retries, Some(5));
    assert_eq!(sonnet.pricing.map(|p| p.output), Some(15.0));
}

#[test]
fn oauth_entries_need_their_tokens_and_a_broken_one_names_its_field() {
    use braincode_config::OauthEntry;
    use braincode_protocol::OauthCredentials;
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let store = AuthStore::new(&home);
    let entry = |refresh: &str, expires: i64| OauthEntry {
        provider_id: "github-copilot".into(),
        credentials: OauthCredentials {
            refresh: refresh.into(),
            access: "tid=SECRET".into(),
            expires,
            extra: Default::default(),
        },
    };
    let refused = store
        .set_oauth("github-copilot", &entry("", 5))
        .unwrap_err();
    assert!(
        refused.to_string().contains("nothing was saved"),
        "{refused}"
    );
    assert!(!home.auth_path().exists());
    store
        .set_oauth("github-copilot", &entry("gho_SECRET", 5))
        .unwrap();
    assert_eq!(mode(&home.auth_path()), 0o600);
    let status = store.status().unwrap();
    assert_eq!(status.providers[0].kind, CredentialKind::Oauth);
    assert_eq!(status.providers[0].expires, Some(5));
    assert!(!serde_json::to_string(&status).unwrap().contains("SECRET"));
    // An OAuth entry gives no API key.
    assert!(store.api_key("github-copilot").unwrap().is_none());

    fs::write(
        home.auth_path(),
        r#"{"providers": {"github-copilot": {"oauth": {"providerId": "github-copilot", "credentials": {"access": "a"}}}}}"#,
    )
    .unwrap();
    let broken = store.oauth("github-copilot").unwrap_err().to_string();
    assert!(
        broken.contains("providers.github-copilot.oauth"),
        "{broken}"
    );
    assert!(
        broken.contains("braincode auth login github-copilot"),
        "{broken}"
    );
}

#[test]
fn oauth_endpoint_settings_are_validated_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    fs::write(
        home.settings_path(),
        r#"{"auth": {"oauth": {"github-copilot": {"deviceCodeUrl": "github.com/login"}}}}"#,
    )
    .unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(
        err.contains("auth.oauth.github-copilot.deviceCodeUrl"),
        "{err}"
    );
    fs::write(
        home.settings_path(),
        r#"{"auth": {"oauth": {"gitlab": {}}}}"#,
    )
    .unwrap();
    let err = load_settings(&home).unwrap_err().to_string();
    assert!(err.contains("gitlab"), "{err}");
    fs::write(
        home.settings_path(),
        r#"{"auth": {"oauth": {"openai-codex": {"tokenUrl": "http://127.0.0.1:9/oauth/token"}}}}"#,
    )
    .unwrap();
    let settings = load_settings(&home).unwrap();
    assert_eq!(
        settings.auth.oauth.openai_codex.token_url.as_deref(),
        Some("http://127.0.0.1:9/oauth/token")
    );
}
