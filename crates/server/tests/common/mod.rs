//! What every panel test needs: a panel on a temporary home, a client that carries its
//! cookie, and journals written the way a run writes them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use braincode_config::{Home, JournalWriter};
use braincode_protocol::{Record, SessionId};
use braincode_server::{Panel, ServeOptions, start};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub panel: Panel,
}

impl Fixture {
    pub fn cookie(&self) -> String {
        format!(
            "braincode_panel_{}={}",
            self.panel.addr.port(),
            self.panel.token
        )
    }

    /// A client that carries the cookie, as a browser does after the first visit.
    pub fn client(&self) -> reqwest::Client {
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::COOKIE,
            HeaderValue::from_str(&self.cookie()).unwrap(),
        );
        reqwest::Client::builder()
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.panel.base_url())
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self
            .client()
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    pub async fn get_json(&self, path: &str) -> Value {
        self.client()
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn page(&self, path: &str) -> (StatusCode, String) {
        let response = self.client().get(self.url(path)).send().await.unwrap();
        (response.status(), response.text().await.unwrap())
    }
}

pub async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let panel = start(ServeOptions {
        home: Home::at(&home),
        project_root: project.clone(),
        port: 0,
        token: None,
    })
    .await
    .unwrap();
    Fixture {
        _dir: dir,
        home,
        project,
        panel,
    }
}

/// The file version a page's form carries (what the browser sends back with a save).
pub fn form_version(page: &str) -> String {
    let at = page.find("name=\"version\" value=\"").unwrap() + "name=\"version\" value=\"".len();
    page[at..at + page[at..].find('"').unwrap()].to_string()
}

pub fn plain_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

pub fn model(id: &str, version: &str) -> Value {
    json!({"version": version, "id": id, "provider": "openrouter", "modelId": "qwen/qwen3-coder",
        "api": "openai-completions", "baseUrl": "https://openrouter.ai/api/v1",
        "contextWindow": 262144, "supportsTools": true, "pricing": {"input": 0.4, "output": 1.6}})
}

pub fn write_session(home: &Path, id: &str, records: &[Value]) -> PathBuf {
    let home = Home::at(home);
    let session = SessionId::new(id).unwrap();
    let mut writer = JournalWriter::open(&home, &session).unwrap();
    for record in records {
        writer
            .append(&serde_json::from_value::<Record>(record.clone()).unwrap())
            .unwrap();
    }
    home.session_path(&session)
}
