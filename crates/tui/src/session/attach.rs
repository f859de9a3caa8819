//! `/image <path>` and a pasted image path: the image goes with the next request (as an
//! `@image.png` reference would) and is previewed in the info panel, drawn by the terminal's
//! graphics protocol over rows kept blank for it.

use std::io::Write;

use ratatui::layout::Rect;

use super::Session;
use crate::image::{self, GraphicsProtocol, TermEnv};

/// A preview waiting to be drawn (or drawn) in the info panel.
pub(super) struct Preview {
    /// The escape sequence that draws it.
    sequence: String,
    /// Text lines above it in the panel.
    offset: u16,
    protocol: GraphicsProtocol,
    shown: bool,
}

impl Session {
    /// Attaches the image `raw` names to the next request and shows it; a missing or unusable
    /// file is said and changes nothing.
    pub(super) fn attach_image(&mut self, raw: &str) {
        let home_dir = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let loaded = match image::load(raw, &self.options.project_root, home_dir.as_deref()) {
            Ok(loaded) => loaded,
            Err(message) => {
                self.info = Some(vec![message]);
                return;
            }
        };
        self.pending_images.push(loaded.attachment.clone());
        let mut lines = image::attached_lines(&loaded, self.pending_images.len());
        let protocol = GraphicsProtocol::detect(&TermEnv::from_process());
        let screen = crossterm::terminal::size().unwrap_or((80, 24));
        let cells = image::preview_cells(loaded.info.pixels, screen);
        self.preview =
            image::escape_sequence(protocol, &loaded.data, &loaded.info, cells).map(|sequence| {
                let offset = u16::try_from(lines.len()).unwrap_or(u16::MAX);
                // Rows kept blank for the picture.
                lines.extend(std::iter::repeat_n(String::new(), usize::from(cells.1)));
                Preview {
                    sequence,
                    offset,
                    protocol,
                    shown: false,
                }
            });
        self.info = Some(lines);
    }

    /// Ctrl+V: the clipboard's image, saved under the session, is attached like `/image`;
    /// without one, a line says so and nothing else changes.
    pub(super) fn paste_clipboard_image(&mut self) {
        let dir = self
            .options
            .home
            .sessions_dir()
            .join(braincode_protocol::safe_name(self.session_id.as_str()));
        let clipboard = crate::clipboard::SystemClipboard::from_process();
        match crate::clipboard::save_pasted(&clipboard, &dir, braincode_config::journal::now_ms()) {
            Ok(path) => self.attach_image(&path.to_string_lossy()),
            Err(message) => self.note(message),
        }
    }

    /// After a frame: draws a pending preview inside the info panel at `area`, or, once the
    /// panel is closed, takes a shown preview off the screen (`true`: redraw everything).
    pub(super) fn paint_preview(
        &mut self,
        area: Option<Rect>,
        out: &mut impl Write,
    ) -> std::io::Result<bool> {
        let Some(preview) = &mut self.preview else {
            return Ok(false);
        };
        match (area.filter(|_| self.info.is_some()), preview.shown) {
            (Some(area), false) => {
                let row = area.y.saturating_add(1).saturating_add(preview.offset);
                if row >= area.y.saturating_add(area.height) {
                    return Ok(false);
                }
                crossterm::queue!(
                    out,
                    crossterm::cursor::SavePosition,
                    crossterm::cursor::MoveTo(area.x.saturating_add(1), row)
                )?;
                out.write_all(preview.sequence.as_bytes())?;
                crossterm::queue!(out, crossterm::cursor::RestorePosition)?;
                out.flush()?;
                preview.shown = true;
                Ok(false)
            }
            (Some(_), true) => Ok(false),
            (None, shown) => {
                if shown && preview.protocol == GraphicsProtocol::Kitty {
                    out.write_all(image::KITTY_DELETE_ALL.as_bytes())?;
                    out.flush()?;
                }
                self.preview = None;
                Ok(shown)
            }
        }
    }
}
