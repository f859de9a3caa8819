//! Reading the files we pick up on our own (AGENTS.md, skills, the README overview, `@path`
//! references) without leaving the directories they may come from.
//!
//! Whatever is read here goes to a model, and a repository is untrusted: it can ship
//! `AGENTS.md -> /proc/self/environ` (every API key in the environment) or
//! `.agents/skills/x -> ~/.ssh`. A [`ReadScope`] therefore
//!
//! * resolves every symlink and `..`, and refuses a target outside its root and its allowed
//!   roots;
//! * refuses anything under `/proc`, `/sys` or `/dev`, checked on the lexical path, on the
//!   resolved path and on the device of the file, even when an allowed root covers it;
//! * refuses anything that is not a regular file (a FIFO would block the open, a device
//!   never ends);
//! * opens the resolved path with `O_NOFOLLOW | O_NONBLOCK` and checks, on the opened
//!   descriptor, that it is still the regular file that was vetted (same device and inode):
//!   swapping a link between the check and the open gains nothing;
//! * reads at most a given number of bytes and says when it clipped.

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

/// Directories whose files describe the system rather than hold data; never read.
const SPECIAL_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// What a path turned out to be, when it is not what a read needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A symbolic link (seen only when a path changed while it was being read).
    Symlink,
    /// Anything else.
    Other,
}

impl FileKind {
    fn of(meta: &Metadata) -> Self {
        let kind = meta.file_type();
        if kind.is_file() {
            Self::Regular
        } else if kind.is_dir() {
            Self::Directory
        } else if kind.is_symlink() {
            Self::Symlink
        } else if kind.is_fifo() {
            Self::Fifo
        } else if kind.is_socket() {
            Self::Socket
        } else if kind.is_char_device() {
            Self::CharDevice
        } else if kind.is_block_device() {
            Self::BlockDevice
        } else {
            Self::Other
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Regular => "regular file",
            Self::Directory => "directory",
            Self::Fifo => "FIFO (named pipe)",
            Self::Socket => "socket",
            Self::CharDevice => "character device",
            Self::BlockDevice => "block device",
            Self::Symlink => "symbolic link",
            Self::Other => "special file",
        })
    }
}

/// Why a contained read refused a path or failed. `path` is the path as the caller gave it.
#[derive(Debug, thiserror::Error)]
pub enum ContainedError {
    /// The path resolves (through symlinks or `..`) outside the root and the allowed roots.
    #[error(
        "{} resolves to {}, outside {}: not read (only files inside it are read; copy the file in instead of linking to it)",
        path.display(),
        target.display(),
        root.display()
    )]
    Outside {
        /// The path as given.
        path: PathBuf,
        /// Where it resolves.
        target: PathBuf,
        /// The root it had to stay in.
        root: PathBuf,
    },
    /// The path is, or resolves to, a file under `/proc`, `/sys` or `/dev`.
    #[error(
        "{} leads to {}, a system file under /proc, /sys or /dev: not read (system files never go to a model, whatever the settings)",
        path.display(),
        target.display()
    )]
    SpecialFilesystem {
        /// The path as given.
        path: PathBuf,
        /// The system path it leads to.
        target: PathBuf,
    },
    /// The path is not a regular file (a directory, FIFO, socket or device).
    #[error(
        "{} is a {kind}, not a regular file: not read (only regular files are read)",
        path.display()
    )]
    NotRegular {
        /// The path as given.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// A directory was expected.
    #[error("{} is a {kind}, not a directory: not listed", path.display())]
    NotDirectory {
        /// The path as given.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// The file changed between its check and its opening (a swapped link or file).
    #[error(
        "{} changed while it was being opened (a link or file was swapped): not read; run again if the change was yours",
        path.display()
    )]
    Replaced {
        /// The path as given.
        path: PathBuf,
    },
    /// The filesystem refused: the path is missing, unreadable, or a read failed.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// What the filesystem said.
        source: io::Error,
    },
}

impl ContainedError {
    /// Whether the path (or a component of it) does not exist: callers that probe optional
    /// files skip these silently.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Bytes read by [`ReadScope::read_bytes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainedBytes {
    /// The canonical file that was read.
    pub path: PathBuf,
    /// At most `max_bytes` of its content.
    pub bytes: Vec<u8>,
    /// The file's size when it was opened.
    pub size: u64,
    /// Whether the file holds more than `max_bytes` (the rest was not read).
    pub clipped: bool,
}

/// Text read by [`ReadScope::read_to_string`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainedText {
    /// The canonical file that was read.
    pub path: PathBuf,
    /// At most `max_bytes` of its content, as UTF-8.
    pub text: String,
    /// The file's size when it was opened.
    pub size: u64,
    /// Whether the file holds more than `max_bytes` (the rest was not read).
    pub clipped: bool,
    /// Whether invalid UTF-8 was replaced with `U+FFFD` (a character cut by the clip is
    /// dropped instead, and does not count).
    pub lossy: bool,
}

/// Where a read may land: a canonical root and canonical extra roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadScope {
    root: PathBuf,
    allowed: Vec<PathBuf>,
}

/// A path that passed every check, with the identity of the file that passed them.
#[derive(Debug)]
struct Vetted {
    canonical: PathBuf,
    dev: u64,
    ino: u64,
}

impl ReadScope {
    /// A scope rooted at `root`, which is canonicalized (it must exist).
    pub fn new(root: &Path) -> io::Result<Self> {
        Ok(Self {
            root: std::fs::canonicalize(root)?,
            allowed: Vec::new(),
        })
    }

    /// Adds roots reads may also land in (directories or single files). Each is
    /// canonicalized; entries that do not exist are dropped. `/proc`, `/sys` and `/dev` stay
    /// refused even under an allowed `/`.
    pub fn with_allowed(mut self, extra: impl IntoIterator<Item = PathBuf>) -> Self {
        self.allowed.extend(
            extra
                .into_iter()
                .filter_map(|path| std::fs::canonicalize(path).ok()),
        );
        self
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute), following every symlink, and
    /// returns the canonical target when it is a regular file inside the root or an allowed
    /// root and not under `/proc`, `/sys` or `/dev`.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, ContainedError> {
        self.vet(path, FileKind::Regular).map(|v| v.canonical)
    }

    /// [`ReadScope::resolve`] for a directory (to list skills, say).
    pub fn resolve_dir(&self, path: &Path) -> Result<PathBuf, ContainedError> {
        self.vet(path, FileKind::Directory).map(|v| v.canonical)
    }

    /// Resolves `path` and reads at most `max_bytes` of it, through a descriptor checked to
    /// be the file that was resolved.
    pub fn read_bytes(
        &self,
        path: &Path,
        max_bytes: usize,
    ) -> Result<ContainedBytes, ContainedError> {
        let vetted = self.vet(path, FileKind::Regular)?;
        let (file, meta) = open_vetted(path, &vetted)?;
        let limit = u64::try_from(max_bytes).unwrap_or(u64::MAX);
        // Never trust the size for the allocation: a file can grow after the fstat.
        let capacity = usize::try_from(meta.len().min(limit)).unwrap_or(max_bytes);
        let mut bytes = Vec::with_capacity(capacity);
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| io_error(path, source))?;
        let clipped = bytes.len() > max_bytes;
        bytes.truncate(max_bytes);
        Ok(ContainedBytes {
            path: vetted.canonical,
            bytes,
            size: meta.len(),
            clipped,
        })
    }

    /// [`ReadScope::read_bytes`], decoded as UTF-8 (invalid bytes replaced, and flagged).
    pub fn read_to_string(
        &self,
        path: &Path,
        max_bytes: usize,
    ) -> Result<ContainedText, ContainedError> {
        let read = self.read_bytes(path, max_bytes)?;
        let (text, lossy) = decode(read.bytes, read.clipped);
        Ok(ContainedText {
            path: read.path,
            text,
            size: read.size,
            clipped: read.clipped,
            lossy,
        })
    }

    fn contains(&self, canonical: &Path) -> bool {
        canonical.starts_with(&self.root) || self.allowed.iter().any(|a| canonical.starts_with(a))
    }

    fn vet(&self, path: &Path, want: FileKind) -> Result<Vetted, ContainedError> {
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        let lexical = lexical_normal(&absolute);
        if is_special_path(&lexical) {
            return Err(special(path, lexical));
        }
        let canonical =
            std::fs::canonicalize(&absolute).map_err(|source| io_error(path, source))?;
        if is_special_path(&canonical) {
            return Err(special(path, canonical));
        }
        if !self.contains(&canonical) {
            return Err(ContainedError::Outside {
                path: path.to_path_buf(),
                target: canonical,
                root: self.root.clone(),
            });
        }
        // `canonical` has no symlink left; a symlink here means it changed since.
        let meta =
            std::fs::symlink_metadata(&canonical).map_err(|source| io_error(path, source))?;
        if is_special_device(meta.dev()) {
            return Err(special(path, canonical));
        }
        let kind = FileKind::of(&meta);
        if kind == FileKind::Symlink {
            return Err(ContainedError::Replaced {
                path: path.to_path_buf(),
            });
        }
        if kind != want {
            return Err(if want == FileKind::Directory {
                ContainedError::NotDirectory {
                    path: path.to_path_buf(),
                    kind,
                }
            } else {
                ContainedError::NotRegular {
                    path: path.to_path_buf(),
                    kind,
                }
            });
        }
        Ok(Vetted {
            canonical,
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
}

/// Opens a vetted file without following a final symlink and without blocking on a FIFO,
/// and checks the descriptor is the regular file that was vetted.
fn open_vetted(path: &Path, vetted: &Vetted) -> Result<(File, Metadata), ContainedError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&vetted.canonical)
        .map_err(|source| {
            // O_NOFOLLOW on a symlink: the vetted file was swapped for a link.
            if source.raw_os_error() == Some(libc::ELOOP) {
                ContainedError::Replaced {
                    path: path.to_path_buf(),
                }
            } else {
                io_error(path, source)
            }
        })?;
    let meta = file.metadata().map_err(|source| io_error(path, source))?;
    if (meta.dev(), meta.ino()) != (vetted.dev, vetted.ino) {
        return Err(ContainedError::Replaced {
            path: path.to_path_buf(),
        });
    }
    let kind = FileKind::of(&meta);
    if kind != FileKind::Regular {
        return Err(ContainedError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    Ok((file, meta))
}

/// UTF-8 text of `bytes`, and whether anything was replaced. When the read was clipped, a
/// character cut in half at the end is dropped rather than replaced.
fn decode(bytes: Vec<u8>, clipped: bool) -> (String, bool) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, false),
        Err(err) => {
            let utf8 = err.utf8_error();
            let mut bytes = err.into_bytes();
            // `error_len() == None`: the only problem is an incomplete sequence at the end.
            if clipped && utf8.error_len().is_none() {
                bytes.truncate(utf8.valid_up_to());
                match String::from_utf8(bytes) {
                    Ok(text) => (text, false),
                    Err(err) => (String::from_utf8_lossy(err.as_bytes()).into_owned(), true),
                }
            } else {
                (String::from_utf8_lossy(&bytes).into_owned(), true)
            }
        }
    }
}

/// `path` with `.` and `..` applied textually (no symlink followed).
fn lexical_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn is_special_path(path: &Path) -> bool {
    SPECIAL_ROOTS.iter().any(|root| path.starts_with(root))
}

/// Whether `dev` is the device of `/proc`, `/sys` or `/dev` (which catches those
/// filesystems mounted elsewhere too). A special root that is not its own mount shares the
/// device of `/` and is skipped, or every file would be refused.
fn is_special_device(dev: u64) -> bool {
    let Ok(root) = std::fs::metadata("/") else {
        return false;
    };
    SPECIAL_ROOTS
        .iter()
        .filter_map(|special| std::fs::metadata(special).ok())
        .map(|meta| meta.dev())
        .any(|special| special != root.dev() && special == dev)
}

fn special(path: &Path, target: PathBuf) -> ContainedError {
    ContainedError::SpecialFilesystem {
        path: path.to_path_buf(),
        target,
    }
}

fn io_error(path: &Path, source: io::Error) -> ContainedError {
    ContainedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::fs;
    use std::os::unix::fs::symlink;

    use super::*;

    fn scope_with_file() -> (tempfile::TempDir, ReadScope, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("project");
        let outside = dir.path().join("outside");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("notes.md"), "inside").unwrap();
        fs::write(outside.join("secret"), "OUTSIDE-SECRET").unwrap();
        let scope = ReadScope::new(&root).unwrap();
        (dir, scope, root, outside)
    }

    #[test]
    fn a_link_swapped_in_after_the_check_is_not_followed() {
        let (_dir, scope, root, outside) = scope_with_file();
        let vetted = scope.vet(Path::new("notes.md"), FileKind::Regular).unwrap();
        fs::remove_file(root.join("notes.md")).unwrap();
        symlink(outside.join("secret"), root.join("notes.md")).unwrap();
        let err = open_vetted(Path::new("notes.md"), &vetted).unwrap_err();
        assert!(matches!(err, ContainedError::Replaced { .. }), "{err}");
    }

    #[test]
    fn a_file_swapped_in_after_the_check_is_refused() {
        let (_dir, scope, root, outside) = scope_with_file();
        let vetted = scope.vet(Path::new("notes.md"), FileKind::Regular).unwrap();
        // A hard link keeps the outside file's inode: the identity check catches it.
        fs::remove_file(root.join("notes.md")).unwrap();
        fs::hard_link(outside.join("secret"), root.join("notes.md")).unwrap();
        let err = open_vetted(Path::new("notes.md"), &vetted).unwrap_err();
        assert!(matches!(err, ContainedError::Replaced { .. }), "{err}");
    }

    #[test]
    fn a_fifo_swapped_in_after_the_check_does_not_block() {
        let (_dir, scope, root, _outside) = scope_with_file();
        let vetted = scope.vet(Path::new("notes.md"), FileKind::Regular).unwrap();
        fs::remove_file(root.join("notes.md")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(root.join("notes.md"))
            .status()
            .unwrap();
        assert!(status.success());
        // Without O_NONBLOCK this open would wait for a writer forever. The FIFO may reuse
        // the removed file's inode number; then the kind check refuses it.
        let err = open_vetted(Path::new("notes.md"), &vetted).unwrap_err();
        assert!(
            matches!(
                err,
                ContainedError::Replaced { .. }
                    | ContainedError::NotRegular {
                        kind: FileKind::Fifo,
                        ..
                    }
            ),
            "{err}"
        );
    }

    #[test]
    fn lexical_normal_applies_dots_without_touching_the_disk() {
        assert_eq!(
            lexical_normal(Path::new("/a/./b/../../proc/self/environ")),
            Path::new("/proc/self/environ")
        );
        assert_eq!(lexical_normal(Path::new("/../../dev")), Path::new("/dev"));
        assert!(!is_special_path(Path::new("/procfs/x")));
        assert!(is_special_path(Path::new("/sys")));
    }

    #[test]
    fn a_character_cut_by_the_clip_is_dropped_not_flagged() {
        let bytes = "é".repeat(3).into_bytes();
        assert_eq!(decode(bytes[..5].to_vec(), true), ("éé".to_string(), false));
        assert_eq!(
            decode(bytes[..5].to_vec(), false),
            ("éé\u{fffd}".to_string(), true)
        );
        assert_eq!(
            decode(b"a\xffb".to_vec(), true),
            ("a\u{fffd}b".to_string(), true)
        );
    }
}
