//! Ctrl+V with an image on the clipboard: the image is saved as
//! `<home>/sessions/<session>/pasted-<ms>.png` and attached like `/image`.
//!
//! The system clipboard is read with the desktop's own tools (`wl-paste` on Wayland, `xclip`
//! on X11), behind [`Clipboard`] so tests hand in their own: no clipboard library (and the
//! image codec it needs to re-encode pixels) is compiled in, and the PNG arrives as the
//! clipboard holds it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// How long a clipboard tool may take to answer.
pub const CLIPBOARD_TIMEOUT: Duration = Duration::from_secs(2);

/// What the clipboard holds, as far as images go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClipboardRead {
    /// A PNG image.
    Image(Vec<u8>),
    /// Something else, or nothing.
    NoImage,
    /// The clipboard cannot be read here (why, in a line).
    Unavailable(String),
}

/// A clipboard that may hold an image.
pub trait Clipboard: Send + Sync {
    /// Reads the image on the clipboard.
    fn read_image(&self) -> ClipboardRead;
}

/// The desktop's clipboard: `wl-paste` under Wayland, `xclip` under X11.
#[derive(Debug, Clone, Default)]
pub struct SystemClipboard {
    wayland: bool,
    x11: bool,
}

impl SystemClipboard {
    /// The clipboard of this process's desktop session (`WAYLAND_DISPLAY`, `DISPLAY`).
    pub fn from_process() -> Self {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        SystemClipboard {
            wayland: set("WAYLAND_DISPLAY"),
            x11: set("DISPLAY"),
        }
    }
}

impl Clipboard for SystemClipboard {
    fn read_image(&self) -> ClipboardRead {
        let (program, args): (&str, &[&str]) = match (self.wayland, self.x11) {
            (true, _) => ("wl-paste", &["--no-newline", "--type", "image/png"]),
            (false, true) => (
                "xclip",
                &["-selection", "clipboard", "-t", "image/png", "-o"],
            ),
            (false, false) => {
                return ClipboardRead::Unavailable(
                    "no desktop clipboard here (neither Wayland nor X11); use /image <path>".into(),
                );
            }
        };
        let (tx, rx) = mpsc::channel();
        let mut command = Command::new(program);
        command.args(args);
        std::thread::spawn(move || {
            let _ = tx.send(command.output());
        });
        match rx.recv_timeout(CLIPBOARD_TIMEOUT) {
            Ok(Ok(output)) if output.status.success() && !output.stdout.is_empty() => {
                ClipboardRead::Image(output.stdout)
            }
            // The tools fail when the clipboard has no PNG to give.
            Ok(Ok(_)) => ClipboardRead::NoImage,
            Ok(Err(err)) if err.kind() == std::io::ErrorKind::NotFound => {
                ClipboardRead::Unavailable(format!(
                    "pasting an image needs {program}, which is not installed; use /image <path>"
                ))
            }
            Ok(Err(err)) => ClipboardRead::Unavailable(format!("{program} failed: {err}")),
            Err(_) => ClipboardRead::Unavailable(format!(
                "{program} did not answer within {} s",
                CLIPBOARD_TIMEOUT.as_secs()
            )),
        }
    }
}

/// Saves the clipboard's image in `dir` as `pasted-<stamp_ms>.png` and returns its path; a
/// clipboard without an image (or unreadable) is a one-line message and nothing is written.
pub fn save_pasted(
    clipboard: &dyn Clipboard,
    dir: &Path,
    stamp_ms: i64,
) -> Result<PathBuf, String> {
    let bytes = match clipboard.read_image() {
        ClipboardRead::Image(bytes) => bytes,
        ClipboardRead::NoImage => return Err("no image on the clipboard".into()),
        ClipboardRead::Unavailable(reason) => return Err(reason),
    };
    if crate::image::inspect("clipboard", &bytes).is_none() {
        return Err("the clipboard's image is not a PNG, JPEG, GIF or WebP image".into());
    }
    let path = dir.join(format!("pasted-{stamp_ms}.png"));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, &bytes))
        .map_err(|e| format!("cannot save the pasted image as {}: {e}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(ClipboardRead);

    impl Clipboard for Fake {
        fn read_image(&self) -> ClipboardRead {
            self.0.clone()
        }
    }

    #[test]
    fn an_image_is_saved_under_the_session_and_loads_for_attaching() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("sessions/s-1");
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10\0\0\0\x10rest".to_vec();
        let path = save_pasted(&Fake(ClipboardRead::Image(png.clone())), &dir, 42).unwrap();
        assert_eq!(path, dir.join("pasted-42.png"));
        assert_eq!(std::fs::read(&path).unwrap(), png);
        let loaded = crate::image::load(&path.to_string_lossy(), home.path(), None).unwrap();
        assert_eq!(loaded.info.pixels, Some((16, 16)));
    }

    #[test]
    fn no_image_is_one_line_and_writes_nothing() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("sessions/s-1");
        let none = save_pasted(&Fake(ClipboardRead::NoImage), &dir, 1).unwrap_err();
        assert_eq!(none, "no image on the clipboard");
        let text = save_pasted(&Fake(ClipboardRead::Image(b"hello".to_vec())), &dir, 2);
        assert!(text.unwrap_err().contains("not a PNG"));
        let unavailable = save_pasted(
            &Fake(ClipboardRead::Unavailable("needs wl-paste".into())),
            &dir,
            3,
        );
        assert_eq!(unavailable.unwrap_err(), "needs wl-paste");
        assert!(!dir.exists());
    }

    #[test]
    fn without_a_desktop_the_system_clipboard_says_so() {
        let read = SystemClipboard::default().read_image();
        assert!(
            matches!(&read, ClipboardRead::Unavailable(reason) if reason.contains("/image <path>")),
            "{read:?}"
        );
    }
}
