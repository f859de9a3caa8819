//! File operations beneath a directory that never follow a symlink: every path is reached
//! through directory file descriptors opened one component at a time with `O_NOFOLLOW`
//! (rustix), so a symlink planted in the project (even swapped in between two calls) cannot
//! turn a read, a removal or a restore into one outside it.

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

/// The normal components of a relative path, or `None` when it is not a plain relative path.
fn parts(relative: &Path) -> Option<Vec<&std::ffi::OsStr>> {
    relative
        .components()
        .map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect()
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The directory `root/dirs…`, opened one component at a time without following a symlink;
/// with `create`, missing directories are made (mode 0755).
fn open_dirs(root: &Path, dirs: &[&std::ffi::OsStr], create: bool) -> std::io::Result<OwnedFd> {
    let mut fd = rustix::fs::open(root, dir_flags(), Mode::empty())?;
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

/// The contents of the regular file `root/relative` (at most `limit + 1` bytes), reached
/// without following a symlink.
pub(crate) fn read_beneath(root: &Path, relative: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
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
    let mut bytes = Vec::new();
    Read::take(file, limit + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
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
