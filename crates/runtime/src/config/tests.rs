//! One test per [`ConfigError`] variant, plus the defaults and the overrides.

use braincode_config::FieldPath;

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    home: Home,
    project: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.root()).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    Fixture {
        _dir: dir,
        home,
        project,
    }
}

impl Fixture {
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.home.root().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn load(&self) -> Result<RunConfig, ConfigError> {
        RunConfig::load(&self.home, &LoadOptions::new(&self.project))
    }

    fn error(&self) -> ConfigError {
        match self.load() {
            Ok(_) => panic!("the configuration loaded"),
            Err(err) => err,
        }
    }
}

#[test]
fn an_empty_home_loads_the_defaults_and_writes_nothing() {
    let f = fixture();
    let config = f.load().unwrap();
    assert_eq!(config.brain_id, config.settings.default_brain_id);
    assert_eq!(config.mode, config.settings.mode);
    assert_eq!(config.tools, ToolsConfig::default());
    assert!(config.hooks.is_empty());
    assert!(config.trust_error.is_none());
    assert!(!config.models.is_empty());
    assert_eq!(std::fs::read_dir(f.home.root()).unwrap().count(), 0);
}

#[test]
fn overrides_win_over_settings() {
    let f = fixture();
    f.write(
        "brains.json",
        r#"{"brains": [{"id": "mine", "extends": "brain", "name": "Mine"}]}"#,
    );
    let options = LoadOptions {
        brain_id: Some("mine".into()),
        mode: Some(Mode::Radical),
        ..LoadOptions::new(&f.project)
    };
    let config = RunConfig::load(&f.home, &options).unwrap();
    assert_eq!(config.brain_id, "mine");
    assert_eq!(config.brain.name, "Mine");
    assert_eq!(config.mode, Mode::Radical);
}

#[test]
fn malformed_settings_names_line_and_column() {
    let f = fixture();
    f.write("settings.json", "{\n  \"mode\": \"auto\",,\n}");
    let err = f.error();
    assert!(
        matches!(&err, ConfigError::Settings(FileError::Syntax { .. })),
        "{err:?}"
    );
    let location = err.location().unwrap();
    assert_eq!((location.line, location.column), (Some(2), Some(18)));
    assert!(err.to_string().contains("settings.json:2:18"), "{err}");
    assert_eq!(err.path(), Some(f.home.settings_path().as_path()));
}

#[test]
fn a_bad_settings_field_is_named() {
    let f = fixture();
    f.write("settings.json", "{\n  \"mode\": \"turbo\"\n}");
    let err = f.error();
    assert!(
        matches!(&err, ConfigError::Settings(FileError::Field { .. })),
        "{err:?}"
    );
    assert_eq!(err.location().unwrap().field.as_deref(), Some("mode"));
    assert!(err.to_string().contains("unknown variant `turbo`"), "{err}");
}

#[test]
fn a_bad_brains_field_is_named() {
    let f = fixture();
    f.write(
        "brains.json",
        "{\"brains\": [\n  {\"id\": \"x\", \"extends\": \"brain\", \"roles\": {\"backend\": {\"modelId\": \"a\", \"thinkingLevel\": \"hgh\"}}}\n]}",
    );
    let err = f.error();
    assert!(matches!(&err, ConfigError::Brains(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("brains.json:2:"), "{text}");
    assert!(
        text.contains("brains[0].roles.backend.thinkingLevel"),
        "{text}"
    );
}

#[test]
fn an_unknown_default_brain_names_settings_and_the_field() {
    let f = fixture();
    let settings = f.write("settings.json", r#"{"defaultBrainId": "nope"}"#);
    let err = f.error();
    assert!(
        matches!(&err, ConfigError::Brain { origin: BrainOrigin::Settings { .. }, brain_id, .. } if brain_id == "nope"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("{}: defaultBrainId: ", settings.display())),
        "{text}"
    );
    assert!(text.contains("unknown brain id 'nope'"), "{text}");
    assert_eq!(err.path(), Some(settings.as_path()));
    assert_eq!(
        err.location().unwrap().field.as_deref(),
        Some("defaultBrainId")
    );
}

#[test]
fn an_unknown_requested_brain_says_the_run_asked_for_it() {
    let f = fixture();
    let options = LoadOptions {
        brain_id: Some("ghost".into()),
        ..LoadOptions::new(&f.project)
    };
    let err = RunConfig::load(&f.home, &options).unwrap_err();
    assert!(
        matches!(
            &err,
            ConfigError::Brain {
                origin: BrainOrigin::Requested,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("brain \"ghost\" asked for by this run: unknown brain id 'ghost'"),
        "{err}"
    );
}

#[test]
fn a_broken_inheritance_names_brains_json() {
    let f = fixture();
    let brains = f.write(
        "brains.json",
        r#"{"brains": [{"id": "orphan", "extends": "missing"}]}"#,
    );
    f.write("settings.json", r#"{"defaultBrainId": "orphan"}"#);
    let err = f.error();
    assert!(matches!(&err, ConfigError::Brain { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with(&format!("{}: ", brains.display())),
        "{err}"
    );
    assert_eq!(err.path(), Some(brains.as_path()));
}

#[test]
fn a_bad_models_field_is_named() {
    let f = fixture();
    f.write("models.json", "{\"models\": [\n  {\"id\": 3}\n]}");
    let err = f.error();
    assert!(matches!(&err, ConfigError::Models(_)), "{err:?}");
    assert!(err.to_string().contains("models.json:2:"), "{err}");
}

#[test]
fn malformed_tools_json_names_line_and_column() {
    let f = fixture();
    f.write(
        "tools.json",
        "{\n  \"permissions\": {\n    \"paths\": [ {\"pattern\": \"x\", \"edit\": \"allow\"} \n",
    );
    let err = f.error();
    assert!(
        matches!(&err, ConfigError::Tools(FileError::Syntax { .. })),
        "{err:?}"
    );
    assert_eq!(err.location().unwrap().line, Some(4));
    assert!(err.to_string().contains("tools.json:4:"), "{err}");
}

#[test]
fn a_bad_tools_field_is_named() {
    let f = fixture();
    f.write(
        "tools.json",
        "{\"permissions\": {\"commands\": [\n  {\"pattern\": \"x\", \"policy\": \"sometimes\"}]}}",
    );
    let err = f.error();
    assert!(
        matches!(&err, ConfigError::Tools(FileError::Field { .. })),
        "{err:?}"
    );
    assert_eq!(
        err.location().unwrap().field.as_deref(),
        Some("permissions.commands[0].policy")
    );
    assert!(err.to_string().contains("sometimes"), "{err}");
}

#[test]
fn broken_tools_rules_are_each_located() {
    let f = fixture();
    f.write(
        "tools.json",
        "{\n  \"tools\": [{\"name\": \"shell\"}, {\"name\": \"shell\"}],\n  \"permissions\": {\"paths\": [\n    {\"pattern\": \"src/[a\", \"edit\": \"deny\"}\n  ]}\n}",
    );
    let err = f.error();
    let ConfigError::ToolsRules { path, problems } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(path, &f.home.tools_path());
    let found: Vec<_> = problems
        .iter()
        .map(|p| (p.field.as_str(), p.location.line, p.location.column))
        .collect();
    assert_eq!(
        found,
        [
            ("tools[1].name", Some(2), Some(41)),
            ("permissions.paths[0].pattern", Some(4), Some(17)),
        ]
    );
    let text = err.to_string();
    assert!(
        text.contains("tools.json is invalid: line 2 column 41: tools[1].name"),
        "{text}"
    );
    assert!(text.contains("\"src/[a\""), "{text}");
    assert_eq!(err.location().unwrap().line, Some(2));
}

#[test]
fn uncompilable_permission_rules_are_a_permissions_error() {
    let f = fixture();
    // Only a caller that skipped validation gets this far; the loader validates first.
    let mut tools = ToolsConfig::default();
    tools.permissions.paths.push(braincode_tools::PathRule {
        pattern: "src/[a".into(),
        edit: braincode_tools::PolicyDecision::Deny,
        review: None,
        reason: None,
    });
    let err = permission_policy(&f.home, &tools).unwrap_err();
    assert!(matches!(&err, ConfigError::Permissions { .. }), "{err:?}");
    assert_eq!(
        err.location().unwrap().field.as_deref(),
        Some("permissions.paths[0].pattern")
    );
    assert!(
        err.to_string()
            .contains("tools.json: permission rules are invalid"),
        "{err}"
    );
}

#[test]
fn malformed_hooks_fail_the_load_only_when_hooks_are_on() {
    let f = fixture();
    f.write("hooks.json", "{\"hooks\": {\"Stop\": 3}}");
    let err = f.error();
    assert!(matches!(&err, ConfigError::Hooks(_)), "{err:?}");
    assert!(err.to_string().contains("hooks.json:1:"), "{err}");
    f.write("settings.json", r#"{"features": {"hooks": false}}"#);
    let config = f.load().unwrap();
    assert!(config.hooks.is_empty());
}

#[test]
fn an_unreadable_trust_store_leaves_the_project_untrusted() {
    let f = fixture();
    std::fs::create_dir_all(f.project.join(".agents")).unwrap();
    std::fs::write(f.project.join(".agents/hooks.json"), "{\"hooks\": {}}").unwrap();
    f.write("trust.json", "{\n  \"projects\": [\n");
    let config = f.load().unwrap();
    assert!(!config.trust.is_trusted());
    let err = config.trust_error.unwrap();
    assert!(matches!(&err, ConfigError::TrustStore(_)), "{err:?}");
    assert!(err.to_string().contains("trust.json:2:14"), "{err}");
}

#[test]
fn dotted_field_paths_become_field_paths() {
    let path = tools::field_path("permissions.paths[2].pattern");
    assert_eq!(
        path,
        FieldPath::root()
            .key("permissions")
            .key("paths")
            .index(2)
            .key("pattern")
    );
    assert_eq!(
        tools::field_path("checks.policies.weird").to_string(),
        "checks.policies.weird"
    );
    assert_eq!(
        tools::field_path("tools[1].name").to_string(),
        "tools[1].name"
    );
}
