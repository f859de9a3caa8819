//! File-system fixtures: a temporary Braincode home and a temporary git repository.

use std::path::{Path, PathBuf};
use std::process::Command;

use braincode_protocol::{ModelApi, ModelDefinition};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The environment variable that points Braincode at its home.
pub const HOME_ENV: &str = "BRAINCODE_HOME";

/// A models.json entry for a model served by a [`crate::ScriptedServer`]: api
/// `openai-completions`, `baseUrl` on 127.0.0.1 (so no API key is needed), tools on.
pub fn scripted_model_entry(id: &str, base_url: &str) -> ModelDefinition {
    ModelDefinition {
        id: id.to_string(),
        provider: "scripted".to_string(),
        model_id: id.rsplit('/').next().unwrap_or(id).to_string(),
        name: format!("Scripted {id}"),
        api: ModelApi::OpenaiCompletions,
        base_url: Some(base_url.to_string()),
        max_tokens: Some(4_096),
        ..ModelDefinition::default()
    }
}

/// A temporary directory used as `BRAINCODE_HOME`; removed when dropped.
pub struct TempHome {
    dir: TempDir,
}

impl TempHome {
    /// An empty home.
    ///
    /// # Panics
    /// When the temporary directory cannot be created.
    pub fn new() -> Self {
        Self {
            dir: tempfile::Builder::new()
                .prefix("braincode-home-")
                .tempdir()
                .expect("create a temporary home"),
        }
    }

    /// The home directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `("BRAINCODE_HOME", <path>)`, for `Command::env`.
    pub fn env(&self) -> (&'static str, PathBuf) {
        (HOME_ENV, self.path().to_path_buf())
    }

    /// Writes `value` as pretty JSON to `<home>/<name>` and returns the path.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write_json(&self, name: &str, value: &Value) -> PathBuf {
        let path = self.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the parent directory");
        }
        let text = serde_json::to_string_pretty(value).expect("serialize JSON");
        std::fs::write(&path, text).expect("write the JSON file");
        path
    }

    /// Writes `settings.json`.
    pub fn write_settings(&self, settings: &Value) -> PathBuf {
        self.write_json("settings.json", settings)
    }

    /// Writes `models.json` (`{"models": [...]}`).
    pub fn write_models(&self, models: &[ModelDefinition]) -> PathBuf {
        self.write_json("models.json", &json!({ "models": models }))
    }

    /// Writes `brains.json`.
    pub fn write_brains(&self, brains: &Value) -> PathBuf {
        self.write_json("brains.json", brains)
    }

    /// Writes `auth.json` with mode 0600 (`{"providers": {provider: key}}`).
    pub fn write_auth_keys(&self, keys: &[(&str, &str)]) -> PathBuf {
        let providers: serde_json::Map<String, Value> = keys
            .iter()
            .map(|(provider, key)| ((*provider).to_string(), json!(key)))
            .collect();
        let path = self.write_json("auth.json", &json!({ "providers": providers }));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .expect("chmod auth.json");
        }
        path
    }

    /// Writes a text file under the home.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write_file(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the parent directory");
        }
        std::fs::write(&path, text).expect("write the file");
        path
    }
}

impl Default for TempHome {
    fn default() -> Self {
        Self::new()
    }
}

/// A temporary git repository with a user configured and one initial commit; removed when
/// dropped.
pub struct TempRepo {
    dir: TempDir,
}

impl TempRepo {
    /// `git init` on branch `main`, a test identity, no signing, and an initial commit of
    /// `README.md`.
    ///
    /// # Panics
    /// When git is missing or a git command fails.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("braincode-repo-")
            .tempdir()
            .expect("create a temporary repository");
        let repo = Self { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "Braincode Test"]);
        repo.git(&["config", "user.email", "test@braincode.invalid"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo.write("README.md", "# test repository\n");
        repo.commit("initial commit");
        repo
    }

    /// The work tree.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating directories) relative to the work tree.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create the parent directory");
        }
        std::fs::write(&path, text).expect("write the file");
        path
    }

    /// Reads a file relative to the work tree.
    ///
    /// # Panics
    /// When the file cannot be read.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path().join(relative)).expect("read the file")
    }

    /// Stages everything and commits; returns the new commit id.
    pub fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    /// Runs git in the work tree and returns its stdout.
    ///
    /// # Panics
    /// When git cannot run or exits with an error.
    pub fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .expect("run git");
        assert!(
            output.status.success(),
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

impl Default for TempRepo {
    fn default() -> Self {
        Self::new()
    }
}
