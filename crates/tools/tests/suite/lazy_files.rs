//! The file tools on a root whose files reach the disk on first use (a parallel writer's
//! sparse worktree): what is not on disk yet is listed, searched and read as if it were, a
//! read or an edit writes it out first, and a glob, a directory or a hidden name filter the
//! files not on disk exactly as they filter those on it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::common::Repo;
use async_trait::async_trait;
use braincode_tools::fs::edit_file::EditFile;
use braincode_tools::fs::list_files::ListFiles;
use braincode_tools::fs::read_file::ReadFile;
use braincode_tools::fs::search_files::SearchFiles;
use braincode_tools::{LazyFiles, Tool, ToolContext};
use serde_json::json;

/// Files kept in memory until materialized into `root`.
#[derive(Debug)]
struct MemoryFiles {
    root: PathBuf,
    pending: Mutex<BTreeMap<String, Vec<u8>>>,
    materialized: Mutex<Vec<String>>,
}

#[async_trait]
impl LazyFiles for MemoryFiles {
    async fn pending(&self) -> Result<Arc<BTreeSet<String>>, String> {
        Ok(Arc::new(
            self.pending.lock().unwrap().keys().cloned().collect(),
        ))
    }

    async fn read_pending(&self, paths: &[String]) -> Result<HashMap<String, Vec<u8>>, String> {
        let pending = self.pending.lock().unwrap();
        Ok((paths.iter())
            .filter_map(|path| Some((path.clone(), pending.get(path)?.clone())))
            .collect())
    }

    async fn materialize(&self, paths: &[String]) -> Result<(), String> {
        let mut pending = self.pending.lock().unwrap();
        for path in paths {
            if let Some(bytes) = pending.remove(path) {
                let at = self.root.join(path);
                std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                std::fs::write(at, bytes).unwrap();
                self.materialized.lock().unwrap().push(path.clone());
            }
        }
        Ok(())
    }

    async fn materialize_all(&self) -> Result<(), String> {
        let all: Vec<String> = self.pending.lock().unwrap().keys().cloned().collect();
        self.materialize(&all).await
    }
}

/// A root with `on_disk` written and `pending` held in memory.
fn lazy_root(on_disk: &[(&str, &str)], pending: &[(&str, &str)]) -> (Repo, Arc<MemoryFiles>) {
    let repo = Repo::new(on_disk);
    let files = Arc::new(MemoryFiles {
        root: repo.root.clone(),
        pending: Mutex::new(
            (pending.iter())
                .map(|(path, body)| (path.to_string(), body.as_bytes().to_vec()))
                .collect(),
        ),
        materialized: Mutex::default(),
    });
    (repo, files)
}

fn context(repo: &Repo, files: &Arc<MemoryFiles>) -> ToolContext {
    ToolContext {
        lazy: Some(files.clone() as Arc<dyn LazyFiles>),
        ..repo.context()
    }
}

const PENDING: &[(&str, &str)] = &[
    ("src/api/users.ts", "export function helper() {}\n"),
    ("src/api/orders.ts", "import { helper } from './users';\n"),
    ("docs/guide.md", "call helper() first\n"),
    (".github/ci.yml", "helper: true\n"),
    ("node_modules/x/index.js", "helper\n"),
];

#[tokio::test]
async fn files_not_on_disk_are_listed_with_the_others_and_filtered_alike() {
    let (repo, files) = lazy_root(&[("README.md", "hi\n")], PENDING);
    let ctx = context(&repo, &files);
    let list = |args| {
        let ctx = ctx.clone();
        async move { ListFiles::default().call(args, &ctx).await }
    };
    let all = list(json!({})).await;
    assert!(!all.is_error, "{}", all.content);
    assert_eq!(
        all.content.lines().collect::<Vec<_>>(),
        [
            "README.md",
            "docs/guide.md",
            "src/api/orders.ts",
            "src/api/users.ts"
        ],
        "hidden and always-skipped directories are left out as on disk"
    );
    // A directory that exists only in the files not on disk yet.
    let api = list(json!({"directory": "src/api", "glob": "users*"})).await;
    assert_eq!(api.content.trim(), "src/api/users.ts");
    let none = list(json!({"directory": "nowhere"})).await;
    assert!(none.is_error, "{}", none.content);
    let capped = list(json!({"maxFiles": 2})).await;
    assert!(
        capped.content.contains("showing the first 2"),
        "{}",
        capped.content
    );
    assert!(
        files.materialized.lock().unwrap().is_empty(),
        "listing writes nothing"
    );
}

#[tokio::test]
async fn files_not_on_disk_are_searched_by_content_and_path() {
    let (repo, files) = lazy_root(&[("README.md", "no helper here? yes: helper\n")], PENDING);
    let ctx = context(&repo, &files);
    let search = SearchFiles::default();
    let found = search.call(json!({"query": "helper"}), &ctx).await;
    let mut lines: Vec<&str> = found.content.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "README.md:1:no helper here? yes: helper",
            "docs/guide.md:1:call helper() first",
            "src/api/orders.ts:1:import { helper } from './users';",
            "src/api/users.ts:1:export function helper() {}",
        ]
    );
    let globbed = search
        .call(json!({"query": "helper", "glob": "*.ts"}), &ctx)
        .await;
    assert_eq!(globbed.content.lines().count(), 2, "{}", globbed.content);
    let capped = search
        .call(json!({"query": "helper", "maxResults": 1}), &ctx)
        .await;
    assert!(
        capped.content.contains("showing the first 1"),
        "{}",
        capped.content
    );
    let paths = search
        .call(json!({"query": "users", "mode": "path"}), &ctx)
        .await;
    assert_eq!(paths.content.trim(), "src/api/users.ts");
    assert!(
        files.materialized.lock().unwrap().is_empty(),
        "searching writes nothing"
    );
}

#[tokio::test]
async fn a_read_or_an_edit_writes_the_file_out_first() {
    let (repo, files) = lazy_root(&[], PENDING);
    let ctx = context(&repo, &files);
    let read = ReadFile::default()
        .call(json!({"path": "docs/guide.md"}), &ctx)
        .await;
    assert!(
        read.content.contains("call helper() first"),
        "{}",
        read.content
    );
    let edit = EditFile::default()
        .call(
            json!({"path": "src/api/users.ts", "oldString": "helper", "newString": "assist"}),
            &ctx,
        )
        .await;
    assert!(!edit.is_error, "{}", edit.content);
    assert_eq!(
        repo.read("src/api/users.ts"),
        "export function assist() {}\n"
    );
    assert_eq!(
        *files.materialized.lock().unwrap(),
        ["docs/guide.md", "src/api/users.ts"]
    );
    // Written out once: what is on disk now is what the tools use.
    let pending = files.pending().await.unwrap();
    assert!(!pending.contains("src/api/users.ts"));
    let search = SearchFiles::default()
        .call(json!({"query": "assist|helper", "glob": "users.ts"}), &ctx)
        .await;
    assert_eq!(
        search.content.trim(),
        "src/api/users.ts:1:export function assist() {}"
    );
}
