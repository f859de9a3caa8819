//! Temp projects and a fake `PATH` for the checks tests.

use std::ffi::OsString;
use std::path::Path;

use super::probe::Probe;

/// A temp directory holding `files` (path, content).
pub(super) fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    dir
}

pub(super) fn write(root: &Path, files: &[(&str, &str)]) {
    for (name, body) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }
}

/// Makes `root/path` an executable file.
pub(super) fn executable(root: &Path, path: &str) {
    write(root, &[(path, "#!/bin/sh\n")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join(path), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// A `PATH` directory with the given programs installed, and a probe of it.
pub(super) struct FakePath {
    pub(super) dir: tempfile::TempDir,
}

impl FakePath {
    pub(super) fn with(programs: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for program in programs {
            executable(dir.path(), program);
        }
        Self { dir }
    }

    pub(super) fn probe(&self) -> Probe {
        Probe::with_path(Some(OsString::from(self.dir.path())))
    }
}

/// Every tool the discovery knows.
pub(super) const ALL_TOOLS: &[&str] = &[
    "cargo",
    "cargo-clippy",
    "python3",
    "ruff",
    "mypy",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "go",
    "make",
];
