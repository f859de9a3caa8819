//! Finding programs without running them: `PATH` lookup (on a given `PATH` value, so tests
//! need not touch the process environment) and a project's virtualenv.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Looks programs up on a `PATH` value (the process's, or a test's), remembering answers.
pub(super) struct Probe {
    path: Option<OsString>,
    found: RefCell<HashMap<String, bool>>,
}

impl Probe {
    /// A probe of the process's `PATH`.
    pub(super) fn from_env() -> Self {
        Self::with_path(std::env::var_os("PATH"))
    }

    /// A probe of the given `PATH` value.
    pub(super) fn with_path(path: Option<OsString>) -> Self {
        Self {
            path,
            found: RefCell::new(HashMap::new()),
        }
    }

    /// Whether `program` is an executable file in a `PATH` directory.
    pub(super) fn on_path(&self, program: &str) -> bool {
        if let Some(found) = self.found.borrow().get(program) {
            return *found;
        }
        let found = self.path.as_ref().is_some_and(|path| {
            // An empty entry means the working directory: never ours to trust.
            std::env::split_paths(path)
                .any(|dir| !dir.as_os_str().is_empty() && executable_in(&dir, program).is_some())
        });
        self.found.borrow_mut().insert(program.to_string(), found);
        found
    }

    /// A Python tool of the project's virtualenv (`.venv/bin`, then `venv/bin`), else from
    /// `PATH`: the program to run and how to show it.
    pub(super) fn python_tool(&self, dir: &Path, program: &str) -> Option<(String, String)> {
        for venv in [".venv", "venv"] {
            if let Some(path) = executable_in(&dir.join(venv).join("bin"), program) {
                return Some((
                    path.to_string_lossy().into_owned(),
                    format!("{venv}/bin/{program}"),
                ));
            }
        }
        self.on_path(program)
            .then(|| (program.to_string(), program.to_string()))
    }
}

/// Whether `check`'s program can be started as things are: an absolute path (a
/// virtualenv's tool) that is an executable file, or a name found on the process's `PATH`.
/// Nothing is run.
pub fn program_found(check: &super::CheckSpec) -> bool {
    let program = Path::new(&check.program);
    if program.is_absolute() {
        is_executable(program)
    } else {
        Probe::from_env().on_path(&check.program)
    }
}

/// `dir/program` when it is an executable file.
pub(super) fn executable_in(dir: &Path, program: &str) -> Option<PathBuf> {
    let candidates: &[&str] = if cfg!(windows) {
        &["", ".exe", ".cmd", ".bat"]
    } else {
        &[""]
    };
    candidates
        .iter()
        .map(|suffix| dir.join(format!("{program}{suffix}")))
        .find(|path| is_executable(path))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}
