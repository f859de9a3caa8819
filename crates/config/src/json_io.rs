//! Reading JSON files with precise errors, and atomic writes.
//!
//! A read never changes the file. A syntax error names `file:line:column` and what the parser
//! expected; a type error also names the field path (`brains[1].roles.backend.thinkingLevel`).
//! A write goes to a temp file in the same directory, is synced, then renamed over the target
//! and the directory is synced, so a crash leaves either the old or the new file, never half.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{ConfigError, JsonLocation};
use crate::json_locate::{byte_offset, locate_field, name_segments};

/// One step of a field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldSegment {
    /// An object key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// How long [`lock_for_update`] waits for another process to finish its update.
pub const UPDATE_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// An exclusive advisory lock on a file's read-modify-write, held until dropped (see
/// [`lock_for_update`]).
#[derive(Debug)]
pub struct UpdateLock {
    _file: File,
}

/// Takes the update lock of `path` (an advisory lock on `<path>.lock`, made 0600 next to it):
/// every process that reads, changes and writes back a home file does it under this lock,
/// so concurrent updates (16 runs trusting their projects at once, the panel saving a brain
/// while `braincode models add` runs) each keep the others' changes. Waits at most
/// [`UPDATE_LOCK_WAIT`], then fails naming the file; the lock is released when the guard is
/// dropped or the process dies.
pub fn lock_for_update(path: &Path) -> Result<UpdateLock, ConfigError> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let lock_path = path.with_file_name(name);
    if let Some(dir) = lock_path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| ConfigError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc_nofollow())
        .open(&lock_path)
        .map_err(|source| ConfigError::Write {
            path: lock_path.clone(),
            source,
        })?;
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(UpdateLock { _file: file }),
            Err(fs::TryLockError::WouldBlock) if started.elapsed() < UPDATE_LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(fs::TryLockError::WouldBlock) => {
                return Err(ConfigError::Rejected {
                    message: format!(
                        "{} is being updated by another Braincode process (its lock {} was held for {} s); nothing was changed, try again",
                        path.display(),
                        lock_path.display(),
                        UPDATE_LOCK_WAIT.as_secs()
                    ),
                });
            }
            Err(fs::TryLockError::Error(source)) => {
                return Err(ConfigError::Write {
                    path: lock_path,
                    source,
                });
            }
        }
    }
}

/// `O_NOFOLLOW`: a lock file planted as a link is not followed.
fn libc_nofollow() -> i32 {
    libc::O_NOFOLLOW
}

/// A field path such as `models[3].id`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath(pub Vec<FieldSegment>);

impl FieldPath {
    /// The empty path (the document itself).
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// This path plus an object key.
    pub fn key(&self, key: impl Into<String>) -> Self {
        let mut next = self.clone();
        next.0.push(FieldSegment::Key(key.into()));
        next
    }

    /// This path plus an array index.
    pub fn index(&self, index: usize) -> Self {
        let mut next = self.clone();
        next.0.push(FieldSegment::Index(index));
        next
    }

    /// This path plus dotted object keys (`timeouts.idleMs`).
    pub fn keys(&self, dotted: &str) -> Self {
        dotted
            .split('.')
            .fold(self.clone(), |path, key| path.key(key))
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.0.iter().enumerate() {
            match segment {
                FieldSegment::Key(key) if i == 0 => write!(f, "{key}")?,
                FieldSegment::Key(key) => write!(f, ".{key}")?,
                FieldSegment::Index(index) => write!(f, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// Reads a file as text. `Ok(None)` when it does not exist. A leading byte-order mark is
/// dropped; bytes that are not UTF-8 are an error naming the line and column.
pub(crate) fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    match String::from_utf8(bytes) {
        Ok(mut text) => {
            if text.starts_with('\u{feff}') {
                text.drain(..'\u{feff}'.len_utf8());
            }
            Ok(Some(text))
        }
        Err(err) => {
            let valid = err.utf8_error().valid_up_to();
            let (line, column) = line_column(err.as_bytes(), valid);
            Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                location: Box::new(JsonLocation {
                    line: Some(line),
                    column: Some(column),
                    field: None,
                }),
                message: "the file is not UTF-8 text".into(),
                hint: "save it as UTF-8".into(),
            })
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let offset = offset.min(bytes.len());
    let before = &bytes[..offset];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

/// Reads a configuration file's text: `Ok(None)` when it is missing. An empty file (0 bytes
/// or only whitespace, e.g. a truncated write) is an error, never read as "missing": treating
/// it as absent would silently switch to defaults.
pub(crate) fn read_config_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match read_text(path)? {
        Some(text) if text.trim().is_empty() => Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            location: Box::new(JsonLocation {
                line: Some(1),
                column: Some(1),
                field: None,
            }),
            message: "the file is empty".into(),
            hint: "write `{}` to use the defaults, or delete the file".into(),
        }),
        other => Ok(other),
    }
}

/// Reads and parses a JSON file. `Ok(None)` when the file is missing; an empty file is an
/// error (see [`read_config_text`]); otherwise a syntax or field error with the file, line,
/// column and field path.
pub fn read_json_file<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, ConfigError> {
    read_config_text(path)?
        .map(|text| parse_json_text(path, &text))
        .transpose()
}

/// Like [`read_json_file`], and also returns the file's text, so that a caller validating
/// the value afterwards can locate a problem in it (see [`locate_field`](crate::locate_field)).
pub fn read_json_file_with_text<T: DeserializeOwned>(
    path: &Path,
) -> Result<Option<(T, String)>, ConfigError> {
    read_config_text(path)?
        .map(|text| parse_json_text(path, &text).map(|value| (value, text)))
        .transpose()
}

/// Parses JSON text that came from `path` (used for error messages only).
pub fn parse_json_text<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|err| from_path_error(path, text, err))?;
    deserializer
        .end()
        .map_err(|err| json_error(path, err, None))?;
    Ok(value)
}

/// Deserializes a document migrated in memory from `text`; an error names its field.
pub(crate) fn from_migrated<T: DeserializeOwned>(
    path: &Path,
    text: &str,
    value: serde_json::Value,
) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        // A value has no lines: find the field in the text it was read from.
        let field = FieldPath(segments(err.path()).into_iter().flatten().collect());
        let position = crate::json_locate::locate_field(text, &field);
        let mut error = from_path_error(path, text, err);
        if let ConfigError::Field { location, .. } = &mut error
            && location.line.is_none()
            && let Some((line, column)) = position
        {
            location.line = Some(line);
            location.column = Some(column);
        }
        error
    })
}

fn segments(path: &serde_path_to_error::Path) -> Vec<Option<FieldSegment>> {
    path.iter()
        .map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(FieldSegment::Index(*index)),
            serde_path_to_error::Segment::Map { key } => Some(FieldSegment::Key(key.clone())),
            serde_path_to_error::Segment::Enum { variant } => {
                Some(FieldSegment::Key(variant.clone()))
            }
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

fn from_path_error(
    path: &Path,
    text: &str,
    err: serde_path_to_error::Error<serde_json::Error>,
) -> ConfigError {
    let segments = segments(err.path());
    let inner = err.into_inner();
    let offset = byte_offset(text, inner.line(), inner.column());
    let field = (!segments.is_empty()).then(|| name_segments(text, &segments, offset));
    json_error(path, inner, field)
}

/// Turns a serde_json error into a located [`ConfigError`].
pub(crate) fn json_error(
    path: &Path,
    err: serde_json::Error,
    field: Option<String>,
) -> ConfigError {
    let (line, column) = (err.line(), err.column());
    let full = err.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    let location = Box::new(JsonLocation {
        line: (line > 0).then_some(line),
        column: (line > 0).then_some(column),
        field,
    });
    match err.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            ConfigError::Syntax {
                path: path.to_path_buf(),
                location,
                message,
            }
        }
        serde_json::error::Category::Data => ConfigError::Field {
            path: path.to_path_buf(),
            location,
            message,
        },
        serde_json::error::Category::Io => ConfigError::Read {
            path: path.to_path_buf(),
            source: io::Error::other(message),
        },
    }
}

/// A validation error at `field`, located in `text` when the field can be found there.
pub(crate) fn invalid_field(
    path: &Path,
    text: Option<&str>,
    field: &FieldPath,
    message: impl Into<String>,
    hint: impl Into<String>,
) -> ConfigError {
    let position = text.and_then(|text| locate_field(text, field));
    ConfigError::Invalid {
        path: path.to_path_buf(),
        location: Box::new(JsonLocation {
            line: position.map(|p| p.0),
            column: position.map(|p| p.1),
            field: (!field.0.is_empty()).then(|| field.to_string()),
        }),
        message: message.into(),
        hint: hint.into(),
    }
}

/// Writes `value` as pretty JSON (plus a final newline) to `path`, atomically, with the
/// permission bits `mode`. Parent directories are created (0700) when missing.
pub fn write_json_atomic<T: Serialize + ?Sized>(
    path: &Path,
    value: &T,
    mode: u32,
) -> Result<(), ConfigError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|err| ConfigError::Write {
        path: path.to_path_buf(),
        source: io::Error::other(err),
    })?;
    bytes.push(b'\n');
    write_bytes_atomic(path, &bytes, mode)
}

/// Writes `bytes` to `path` atomically with the permission bits `mode`: a temp file
/// `<name>.<pid>.<random>.tmp` in the same directory is written, synced and renamed over the
/// target, then the directory is synced. On any error the temp file is removed.
pub fn write_bytes_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), ConfigError> {
    let write_err = |source: io::Error| ConfigError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_private_dir(&dir).map_err(write_err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| write_err(io::Error::other("the path has no file name")))?;
    let temp = dir.join(format!(
        "{name}.{}.{}.tmp",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let result = (|| -> io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temp)?;
        // The umask may have narrowed the mode; never widen it beyond what was asked, but do
        // make sure what was asked is what the file gets.
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)?;
        sync_dir(&dir)
    })();
    if let Err(source) = result {
        let _ = fs::remove_file(&temp);
        return Err(write_err(source));
    }
    Ok(())
}

/// Creates a directory (and its parents) readable only by the owner, if missing.
pub(crate) fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Makes a rename or file creation in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Doc {
        items: Vec<Item>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        level: Level,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Level {
        Low,
        High,
    }

    fn temp_file(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("doc.json");
        fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn missing_files_are_none_and_empty_files_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            read_json_file::<Doc>(&dir.path().join("nope.json"))
                .unwrap()
                .is_none()
        );
        // An empty file is not a missing one: it says so instead of switching to defaults.
        for text in ["", "  \n"] {
            let (_d, path) = temp_file(text);
            let err = read_json_file::<Doc>(&path).unwrap_err().to_string();
            assert!(err.contains("doc.json:1:1"), "{err}");
            assert!(err.contains("the file is empty"), "{err}");
        }
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let (_d, path) = temp_file("{\n  \"items\": [\n    {\"name\": \"a\",, }\n  ]\n}");
        let err = read_json_file::<Doc>(&path).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{text}");
        assert!(text.contains("doc.json:3:18"), "{text}");
        assert!(text.contains("fix the JSON syntax"), "{text}");
    }

    #[test]
    fn field_errors_name_the_path() {
        let (_d, path) = temp_file(
            "{\"items\": [{\"name\": \"a\", \"level\": \"low\"},\n {\"name\": \"b\", \"level\": \"hgh\"}]}",
        );
        let err = read_json_file::<Doc>(&path).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ConfigError::Field { .. }), "{text}");
        assert!(text.contains("items[1].level"), "{text}");
        assert!(text.contains("unknown variant `hgh`"), "{text}");
        assert!(text.contains("doc.json:2:"), "{text}");
    }

    #[test]
    fn non_string_map_keys_are_named_from_the_text() {
        #[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
        #[serde(rename_all = "lowercase")]
        enum RoleKey {
            Low,
            High,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Roles {
            roles: std::collections::BTreeMap<RoleKey, Item>,
        }
        let (_d, path) = temp_file(
            "{\"roles\": {\"low\": {\"name\": \"a\", \"level\": \"low\"},\n  \"high\": {\"name\": \"b\", \"level\": \"hgh\"}}}",
        );
        let err = read_json_file::<Roles>(&path).unwrap_err().to_string();
        assert!(err.contains("roles.high.level"), "{err}");
        assert!(err.contains("doc.json:2:"), "{err}");
    }

    #[test]
    fn trailing_garbage_is_a_syntax_error() {
        let (_d, path) = temp_file("{\"items\": []} x");
        let err = read_json_file::<Doc>(&path).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
    }

    #[test]
    fn non_utf8_is_located() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        fs::write(&path, b"{\n \"a\": \"\xff\"}").unwrap();
        let err = read_json_file::<serde_json::Value>(&path).unwrap_err();
        assert!(err.to_string().contains("bad.json:2:8"), "{err}");
    }

    #[test]
    fn locate_field_finds_nested_values() {
        let text = "{\n  \"models\": [\n    {\"id\": \"a\"},\n    {\"id\": \"b\", \"x\": [1, {\"y\": 2}]}\n  ]\n}";
        let at = |p: FieldPath| locate_field(text, &p);
        let models = FieldPath::root().key("models");
        assert_eq!(at(models.index(1).key("id")), Some((4, 12)));
        assert_eq!(
            at(models.index(1).key("x").index(1).key("y")),
            Some((4, 32))
        );
        assert_eq!(at(models.index(2)), None);
        assert_eq!(models.index(1).key("id").to_string(), "models[1].id");
    }

    #[test]
    fn atomic_write_sets_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("out.json");
        write_json_atomic(&path, &serde_json::json!({"a": 1}), 0o600).unwrap();
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\n  \"a\": 1\n}\n");
    }

    #[test]
    fn failed_atomic_write_removes_the_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a non-empty directory, so the rename fails after the temp is written.
        let target = dir.path().join("target");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), "x").unwrap();
        assert!(write_json_atomic(&target, &1, 0o644).is_err());
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}
