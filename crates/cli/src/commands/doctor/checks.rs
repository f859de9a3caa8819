//! The list `diagnose` fills: one entry per check, with helpers for each outcome and for
//! turning a config-file error into a precise fix.

use braincode_config::ConfigError;
use braincode_runtime::ConfigError as RunConfigError;

use super::{CheckStatus, DoctorCheck};

/// The checks recorded so far, in order.
pub(super) struct Checks(pub(super) Vec<DoctorCheck>);

impl Checks {
    pub(super) fn push(
        &mut self,
        id: impl Into<String>,
        status: CheckStatus,
        message: impl Into<String>,
        fix: Option<String>,
    ) {
        self.0.push(DoctorCheck {
            id: id.into(),
            status,
            message: message.into(),
            fix,
        });
    }

    pub(super) fn ok(&mut self, id: impl Into<String>, message: impl Into<String>) {
        self.push(id, CheckStatus::Ok, message, None);
    }

    pub(super) fn warn(
        &mut self,
        id: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.push(id, CheckStatus::Warning, message, Some(fix.into()));
    }

    pub(super) fn error(
        &mut self,
        id: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.push(id, CheckStatus::Error, message, Some(fix.into()));
    }

    /// Records a config-file error with a fix that points at the exact place.
    pub(super) fn config_error(&mut self, id: &str, err: &ConfigError) {
        let fix = match err {
            ConfigError::InsecurePermissions { path, .. } => {
                format!("chmod 600 {}", path.display())
            }
            ConfigError::Syntax { path, location, .. }
            | ConfigError::Field { path, location, .. }
            | ConfigError::Invalid { path, location, .. } => edit_fix(path, location),
            other => match other.path() {
                Some(path) => format!("check that {} is a readable file", path.display()),
                None => "set BRAINCODE_HOME to a writable directory".into(),
            },
        };
        self.error(id, err.to_string(), fix);
    }

    /// Records an error of the run's configuration loader: the file's own error when it
    /// wraps one, else a fix naming the file, the line and the field.
    pub(super) fn run_config_error(&mut self, id: &str, err: &RunConfigError) {
        if let Some(file_error) = err.file_error() {
            return self.config_error(id, file_error);
        }
        let fix = match (err.path(), err.location()) {
            (Some(path), Some(location)) => edit_fix(path, &location),
            (Some(path), None) => format!("edit {}", path.display()),
            (None, _) => "fix the configuration named above".to_string(),
        };
        self.error(id, err.to_string(), fix);
    }
}

/// The fix for a configuration file with a bad line or field.
fn edit_fix(path: &std::path::Path, location: &braincode_config::JsonLocation) -> String {
    format!(
        "edit {}{location}{}, or move the file away to use the defaults",
        path.display(),
        location
            .field
            .as_deref()
            .map(|f| format!(" (field {f})"))
            .unwrap_or_default()
    )
}
