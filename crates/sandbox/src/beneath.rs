//! The host's capability-safe file layer: file operations beneath a directory that never
//! follow a symlink. Every path is reached through directory file descriptors opened one
//! component at a time with `O_NOFOLLOW` (rustix; the portable form of `openat2`'s
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), and the last component is opened, replaced or
//! removed relative to its parent's descriptor. So a symlink planted in the project, even one
//! swapped in between two calls (check-then-use), cannot turn a read, a write, a removal or a
//! restore into one outside it: the operation fails with [`is_link_refusal`] instead.
//!
//! Everything Braincode itself reads or writes under a project on its own authority goes
//! through here: edits, the patch ledger's snapshots, undo, review previews, the protected-path
//! guard. Paths are relative to the root and made of plain names only (no `..`, no root).

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags};

/// What [`restore`] puts back at a path.
pub(crate) enum Kept<'a> {
    /// A directory.
    Dir,
    /// A regular file with these contents.
    File(&'a [u8]),
    /// A symlink to this target.
    Symlink(&'a Path),
}

/// The normal components of a relative path (`.` skipped), or `None` when it is not a plain
/// relative path.
fn parts(relative: &Path) -> Option<Vec<&std::ffi::OsStr>> {
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

/// Whether `error` is this layer refusing a symbolic link (`ELOOP` from `O_NOFOLLOW`, or a
/// link where a directory was needed).
pub fn is_link_refusal(error: &std::io::Error) -> bool {
    error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
        || error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error())
}

/// What a path beneath the root is, seen without following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// [`stat`]'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: EntryKind,
    /// Its size in bytes.
    pub size: u64,
    /// Its permission bits.
    pub mode: u32,
    /// Its modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

/// What `root/relative` is (`None` when nothing is there), without following a symlink at
/// any component: a link among the parents is an error ([`is_link_refusal`]).
pub fn stat(root: &Path, relative: &Path) -> std::io::Result<Option<Entry>> {
    let (dir, name) = match open_parent(root, relative, false) {
        Ok(found) => found,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let stat = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => stat,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let kind = match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
        rustix::fs::FileType::RegularFile => EntryKind::File,
        rustix::fs::FileType::Directory => EntryKind::Dir,
        rustix::fs::FileType::Symlink => EntryKind::Symlink,
        _ => EntryKind::Other,
    };
    Ok(Some(Entry {
        kind,
        size: u64::try_from(stat.st_size).unwrap_or(0),
        mode: permission_bits(stat.st_mode),
        mtime_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
    }))
}

/// The permission bits of a `st_mode` (`mode_t` is 32 bits on Linux, 16 on macOS).
#[allow(clippy::useless_conversion)]
fn permission_bits(st_mode: rustix::fs::RawMode) -> u32 {
    u32::from(st_mode) & 0o7777
}

/// The contents of the regular file `root/relative`, at most `limit + 1` bytes (so a caller
/// sees that it is bigger than `limit`); a symlink at any component, or anything but a
/// regular file, is refused.
pub fn read_file(root: &Path, relative: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    Read::take(open_file(root, relative)?, limit + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The regular file `root/relative` opened for reading (see [`read_file`]), for callers that
/// stream it (hashing a big file).
pub fn open_file(root: &Path, relative: &Path) -> std::io::Result<std::fs::File> {
    let (dir, name) = open_parent(root, relative, false)?;
    let fd = rustix::fs::openat(
        &dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    let file = std::fs::File::from(fd);
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// Whether `file_name` is the temporary file of a [`write_file`] that did not finish (its
/// process was killed between writing it and renaming it over its name): never a file of
/// the project's own.
pub fn is_unfinished_write(file_name: &str) -> bool {
    let Some(rest) = (file_name.strip_prefix('.')).and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    let Some((_, numbers)) = rest.rsplit_once(".braincode-") else {
        return false;
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    numbers
        .split_once('-')
        .is_some_and(|(pid, count)| digits(pid) && digits(count))
}

/// Writes `bytes` to `root/relative` atomically with permissions `mode`: a new file is
/// written next to it and renamed over the name, so a reader never sees half of it and a
/// symlink at the name is replaced, never followed. Missing parent directories are made
/// (0755); a symlink among the parents is refused.
pub fn write_file(root: &Path, relative: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (dir, name) = open_parent(root, relative, true)?;
    if let Ok(stat) = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
        && rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory
    {
        return Err(std::io::Error::other("it is a directory"));
    }
    let temp = format!(
        ".{}.braincode-{}-{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mode = Mode::from_raw_mode(mode & 0o7777);
    let fd = rustix::fs::openat(
        &dir,
        temp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?;
    let written = (|| {
        rustix::fs::fchmod(&fd, mode)?;
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        rustix::fs::renameat(&dir, temp.as_str(), &dir, name)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, temp.as_str(), AtFlags::empty());
    }
    written
}

/// Removes the file (or symlink, never followed) `root/relative`; a path already gone
/// counts as removed, a directory is refused.
pub fn remove_file(root: &Path, relative: &Path) -> std::io::Result<()> {
    let (dir, name) = match open_parent(root, relative, false) {
        Ok(found) => found,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(err) => Err(err.into()),
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The directory `root/dirs…`, opened one component at a time without following a symlink;
/// with `create`, missing directories are made (mode 0755).
fn open_dirs(root: &Path, dirs: &[&std::ffi::OsStr], create: bool) -> std::io::Result<OwnedFd> {
    // The root itself is the user's (a project opened through a link is that project); only
    // what lies beneath it is the repository's.
    let mut fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for name in dirs {
        let next = match rustix::fs::openat(&fd, *name, dir_flags(), Mode::empty()) {
            Err(rustix::io::Errno::NOENT) if create => {
                rustix::fs::mkdirat(&fd, *name, Mode::from_raw_mode(0o755))?;
                rustix::fs::openat(&fd, *name, dir_flags(), Mode::empty())?
            }
            other => other?,
        };
        fd = next;
    }
    Ok(fd)
}

/// The parent of `relative` (opened as [`open_dirs`] does) and its last name.
fn open_parent<'a>(
    root: &Path,
    relative: &'a Path,
    create: bool,
) -> std::io::Result<(OwnedFd, &'a std::ffi::OsStr)> {
    let names = parts(relative).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a relative path")
    })?;
    let (last, dirs) = names
        .split_last()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty path"))?;
    Ok((open_dirs(root, dirs, create)?, last))
}

/// Removes `name` in `dir` and, if it is a directory, everything in it; never follows a
/// symlink (a symlink is removed itself).
fn remove_at(dir: &OwnedFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::Directory {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
        return Ok(());
    }
    let child = rustix::fs::openat(dir, name, dir_flags(), Mode::empty())?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&child)? {
        let entry = entry?;
        let entry_name = entry.file_name().to_bytes();
        if entry_name != b"." && entry_name != b".." {
            names.push(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(entry_name)
                    .to_os_string(),
            );
        }
    }
    for entry_name in names {
        remove_at(&child, &entry_name)?;
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    Ok(())
}

/// Removes `root/relative` (see [`remove_at`]); a path already gone counts as removed.
pub(crate) fn remove_beneath(root: &Path, relative: &Path) -> std::io::Result<()> {
    let (dir, name) = open_parent(root, relative, false)?;
    match remove_at(&dir, name) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Makes `root/relative` what `kept` says (with permissions `mode`), replacing whatever is
/// there and making missing parent directories.
pub(crate) fn restore(
    root: &Path,
    relative: &Path,
    kept: &Kept<'_>,
    mode: u32,
) -> std::io::Result<()> {
    let (dir, name) = open_parent(root, relative, true)?;
    let existing = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).ok();
    let existing_kind = existing.map(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode));
    let mode = Mode::from_raw_mode(mode);
    match kept {
        Kept::Dir => {
            if existing_kind != Some(rustix::fs::FileType::Directory) {
                if existing.is_some() {
                    remove_at(&dir, name)?;
                }
                rustix::fs::mkdirat(&dir, name, mode)?;
            }
            let fd = rustix::fs::openat(&dir, name, dir_flags(), Mode::empty())?;
            rustix::fs::fchmod(&fd, mode)?;
        }
        Kept::File(content) => {
            if existing.is_some() {
                remove_at(&dir, name)?;
            }
            let fd = rustix::fs::openat(
                &dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            )?;
            rustix::fs::fchmod(&fd, mode)?;
            std::fs::File::from(fd).write_all(content)?;
        }
        Kept::Symlink(target) => {
            if existing.is_some() {
                remove_at(&dir, name)?;
            }
            rustix::fs::symlinkat(target.as_os_str(), &dir, name)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_unfinished_write_is_told_by_its_temporary_name() {
        assert!(is_unfinished_write(".form.ts.braincode-24714-5.tmp"));
        assert!(is_unfinished_write("..env.braincode-1-0.tmp"));
        for name in [
            "form.ts",
            ".form.ts.braincode-x-5.tmp",
            ".form.ts.braincode-24714-.tmp",
            "form.ts.braincode-1-2.tmp",
            ".form.ts.braincode-1-2.tmp.bak",
        ] {
            assert!(!is_unfinished_write(name), "{name}");
        }
    }

    use super::*;

    /// A project with a link out of it as a directory and as a file, and a victim outside.
    fn scene() -> (tempfile::TempDir, tempfile::TempDir) {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), "ORIGINAL").unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("out")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("victim"),
            project.path().join("victim-link"),
        )
        .unwrap();
        (project, outside)
    }

    #[test]
    fn no_operation_goes_through_a_link() {
        let (project, outside) = scene();
        let root = project.path();
        let victim = || std::fs::read_to_string(outside.path().join("victim")).unwrap();
        for result in [
            write_file(root, Path::new("out/victim"), b"x", 0o644).err(),
            write_file(root, Path::new("out/new"), b"x", 0o644).err(),
            read_file(root, Path::new("out/victim"), 100).err(),
            read_file(root, Path::new("victim-link"), 100).err(),
            remove_file(root, Path::new("out/victim")).err(),
            stat(root, Path::new("out/victim")).err(),
        ] {
            let error = result.expect("refused");
            assert!(is_link_refusal(&error), "{error}");
        }
        assert_eq!(victim(), "ORIGINAL");
        assert!(!outside.path().join("new").exists());
        // Writing a name that is a link replaces the link; the target is untouched.
        write_file(root, Path::new("victim-link"), b"mine", 0o600).unwrap();
        assert_eq!(victim(), "ORIGINAL");
        let entry = stat(root, Path::new("victim-link")).unwrap().unwrap();
        assert_eq!(
            (entry.kind, entry.size, entry.mode),
            (EntryKind::File, 4, 0o600)
        );
        // Removing a link removes the link.
        std::os::unix::fs::symlink(outside.path().join("victim"), root.join("l2")).unwrap();
        remove_file(root, Path::new("l2")).unwrap();
        assert_eq!(victim(), "ORIGINAL");
        assert!(stat(root, Path::new("l2")).unwrap().is_none());
    }

    #[test]
    fn files_are_written_read_and_removed_beneath_the_root() {
        let project = tempfile::tempdir().unwrap();
        let root = project.path();
        write_file(root, Path::new("a/b/c.txt"), b"hello", 0o640).unwrap();
        assert_eq!(
            read_file(root, Path::new("./a/b/c.txt"), 100).unwrap(),
            b"hello"
        );
        // At most limit + 1 bytes, so a caller sees the file is bigger.
        assert_eq!(read_file(root, Path::new("a/b/c.txt"), 2).unwrap(), b"hel");
        assert_eq!(
            stat(root, Path::new("a")).unwrap().map(|e| e.kind),
            Some(EntryKind::Dir)
        );
        assert!(write_file(root, Path::new("a/b"), b"x", 0o644).is_err());
        assert!(write_file(root, Path::new("../x"), b"x", 0o644).is_err());
        assert!(read_file(root, Path::new("/etc/passwd"), 10).is_err());
        remove_file(root, Path::new("a/b/c.txt")).unwrap();
        remove_file(root, Path::new("a/b/c.txt")).unwrap();
        assert!(stat(root, Path::new("a/b/c.txt")).unwrap().is_none());
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(root.join("a/b")).unwrap().count(), 0);
    }
}
