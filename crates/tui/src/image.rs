//! `/image <path>` (and a pasted image path): the image is attached to the next request and
//! previewed — with the kitty graphics protocol in kitty, iTerm2's inline images in iTerm2 and
//! WezTerm, else a text line (name, type, pixel size, bytes).
//!
//! The escape sequences are written here rather than through an image crate: both protocols
//! take the file as it is (kitty reads PNG itself, iTerm2 any format it can show), so nothing
//! is decoded and no image library is compiled in; the pixel size comes from the file header.

use std::path::{Path, PathBuf};

use base64::Engine;
use braincode_config::ImageAttachment;

/// Smallest preview, in terminal cells (columns, rows).
pub const PREVIEW_MIN: (u16, u16) = (12, 4);
/// Largest preview, in terminal cells (columns, rows).
pub const PREVIEW_MAX: (u16, u16) = (160, 44);
/// Largest image attached (the limit of an `@image` reference).
pub const MAX_IMAGE_BYTES: u64 = braincode_config::budgets::AT_IMAGE_MAX_BYTES;
/// Bytes of base64 per kitty graphics chunk (the protocol's limit).
const KITTY_CHUNK: usize = 4096;

/// The terminal's identity, as its environment tells it (passed in, never read in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermEnv {
    /// `TERM`.
    pub term: Option<String>,
    /// `TERM_PROGRAM`.
    pub term_program: Option<String>,
    /// `KITTY_WINDOW_ID` (set inside kitty).
    pub kitty_window_id: Option<String>,
}

impl TermEnv {
    /// The environment of this process.
    pub fn from_process() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        TermEnv {
            term: var("TERM"),
            term_program: var("TERM_PROGRAM"),
            kitty_window_id: var("KITTY_WINDOW_ID"),
        }
    }
}

/// How an image is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphicsProtocol {
    /// kitty's graphics protocol (PNG sent as is).
    Kitty,
    /// iTerm2's inline images (also WezTerm).
    Iterm2,
    /// No graphics: a text line.
    Text,
}

impl GraphicsProtocol {
    /// The protocol the terminal speaks.
    pub fn detect(env: &TermEnv) -> Self {
        let program = env.term_program.as_deref().unwrap_or("");
        if env.kitty_window_id.is_some() || env.term.as_deref() == Some("xterm-kitty") {
            GraphicsProtocol::Kitty
        } else if program == "iTerm.app" || program == "WezTerm" {
            GraphicsProtocol::Iterm2
        } else {
            GraphicsProtocol::Text
        }
    }
}

/// What an image file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// The file name.
    pub name: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime: &'static str,
    /// Width and height in pixels, when the header says.
    pub pixels: Option<(u32, u32)>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The type and pixel size of an image from its header; `None` when it is no PNG, JPEG, GIF
/// or WebP.
pub fn inspect(name: &str, data: &[u8]) -> Option<ImageInfo> {
    let be32 = |at: usize| {
        data.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let le16 = |at: usize| {
        data.get(at..at + 2)
            .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
    };
    let le24 = |at: usize| {
        data.get(at..at + 3)
            .map(|b| u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
    };
    let (mime, pixels) = if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        ("image/png", be32(16).zip(be32(20)))
    } else if data.starts_with(&[0xFF, 0xD8, 0xFF]) {
        ("image/jpeg", jpeg_size(data))
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        ("image/gif", le16(6).zip(le16(8)))
    } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        let pixels = match data.get(12..16) {
            Some(b"VP8X") => le24(24).zip(le24(27)).map(|(w, h)| (w + 1, h + 1)),
            Some(b"VP8L") => data.get(21..25).map(|b| {
                let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
            }),
            Some(b"VP8 ") => le16(26)
                .zip(le16(28))
                .map(|(w, h)| (w & 0x3FFF, h & 0x3FFF)),
            _ => None,
        };
        ("image/webp", pixels)
    } else {
        return None;
    };
    Some(ImageInfo {
        name: name.to_string(),
        mime,
        pixels: pixels.filter(|(w, h)| *w > 0 && *h > 0),
        bytes: data.len() as u64,
    })
}

/// A JPEG's size from its first start-of-frame marker.
fn jpeg_size(data: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    while at + 9 < data.len() {
        if data[at] != 0xFF {
            return None;
        }
        let marker = data[at + 1];
        let length = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        let is_frame = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if is_frame {
            let height = u16::from_be_bytes([data[at + 5], data[at + 6]]);
            let width = u16::from_be_bytes([data[at + 7], data[at + 8]]);
            return Some((u32::from(width), u32::from(height)));
        }
        at += 2 + length;
    }
    None
}

/// The preview's size in cells for an image of `pixels` on a `screen` of (columns, rows): the
/// image at about 8×16 pixels per cell, kept within [`PREVIEW_MIN`]..[`PREVIEW_MAX`] and half
/// the screen.
pub fn preview_cells(pixels: Option<(u32, u32)>, screen: (u16, u16)) -> (u16, u16) {
    let (width, height) = pixels.unwrap_or((256, 256));
    let fit = |value: u32, per_cell: u32, room: u16, (min, max): (u16, u16)| {
        let cells = u16::try_from(value.div_ceil(per_cell)).unwrap_or(u16::MAX);
        cells.min(room.max(min)).clamp(min, max)
    };
    let columns = fit(
        width,
        8,
        screen.0.saturating_sub(4),
        (PREVIEW_MIN.0, PREVIEW_MAX.0),
    );
    let rows = fit(height, 16, screen.1 / 2, (PREVIEW_MIN.1, PREVIEW_MAX.1));
    (columns, rows)
}

/// The escape sequence that draws `data` at the cursor over `cells` (columns, rows), or `None`
/// where the protocol cannot show it (text terminals; kitty takes only PNG as a file).
pub fn escape_sequence(
    protocol: GraphicsProtocol,
    data: &[u8],
    info: &ImageInfo,
    cells: (u16, u16),
) -> Option<String> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    let (columns, rows) = cells;
    match protocol {
        GraphicsProtocol::Text => None,
        GraphicsProtocol::Kitty if info.mime != "image/png" => None,
        GraphicsProtocol::Kitty => {
            let chunks: Vec<&[u8]> = encoded.as_bytes().chunks(KITTY_CHUNK).collect();
            let mut out = String::new();
            for (index, chunk) in chunks.iter().enumerate() {
                let more = u8::from(index + 1 < chunks.len());
                let chunk = std::str::from_utf8(chunk).unwrap_or_default();
                if index == 0 {
                    out.push_str(&format!(
                        "\x1b_Ga=T,f=100,q=2,c={columns},r={rows},m={more};{chunk}\x1b\\"
                    ));
                } else {
                    out.push_str(&format!("\x1b_Gm={more};{chunk}\x1b\\"));
                }
            }
            Some(out)
        }
        GraphicsProtocol::Iterm2 => Some(format!(
            "\x1b]1337;File=name={};size={};width={columns};height={rows};preserveAspectRatio=1;inline=1:{encoded}\x07",
            base64::engine::general_purpose::STANDARD.encode(info.name.as_bytes()),
            data.len()
        )),
    }
}

/// The sequence that removes every image kitty shows (iTerm2's go with a redraw).
pub const KITTY_DELETE_ALL: &str = "\x1b_Ga=d,q=2\x1b\\";

/// `logo.png — PNG, 640×480 px, 12.3 KB`.
pub fn fallback_line(info: &ImageInfo) -> String {
    let kind = info.mime.trim_start_matches("image/").to_ascii_uppercase();
    let pixels = info
        .pixels
        .map(|(w, h)| format!("{w}×{h} px"))
        .unwrap_or_else(|| "size unknown".into());
    format!(
        "{} — {kind}, {pixels}, {}",
        info.name,
        human_bytes(info.bytes)
    )
}

fn human_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// The path a person typed: quotes removed, `~` the home directory, relative to `cwd`.
pub fn resolve_path(raw: &str, cwd: &Path, home_dir: Option<&Path>) -> PathBuf {
    let mut text = raw.trim();
    for quote in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            text = &text[1..text.len() - 1];
        }
    }
    // A path dragged into a terminal arrives with its spaces escaped.
    let text = text.replace("\\ ", " ");
    let path = match (text.strip_prefix('~'), home_dir) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(&text),
    };
    if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    }
}

/// An image read for a request.
#[derive(Debug, Clone)]
pub struct LoadedImage {
    /// What it is.
    pub info: ImageInfo,
    /// The attachment for the next request.
    pub attachment: ImageAttachment,
    /// Its bytes (for the preview).
    pub data: Vec<u8>,
}

/// Reads the image `raw` names: "Image not found: <path>", or why it cannot be attached.
pub fn load(raw: &str, cwd: &Path, home_dir: Option<&Path>) -> Result<LoadedImage, String> {
    if raw.trim().is_empty() {
        return Err(usage());
    }
    let path = resolve_path(raw, cwd, home_dir);
    let shown = path.display().to_string();
    let metadata = match std::fs::metadata(&path) {
        Ok(metadata) if metadata.is_file() => metadata,
        Ok(_) | Err(_) => return Err(format!("Image not found: {shown}")),
    };
    if metadata.len() > MAX_IMAGE_BYTES {
        return Err(format!(
            "{shown} is {} bytes; images up to {MAX_IMAGE_BYTES} bytes can be attached",
            metadata.len()
        ));
    }
    let data = std::fs::read(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let name = path
        .file_name()
        .map_or_else(|| shown.clone(), |n| n.to_string_lossy().into_owned());
    let info = inspect(&name, &data)
        .ok_or_else(|| format!("{shown} is not a PNG, JPEG, GIF or WebP image"))?;
    let attachment = ImageAttachment {
        path: path.clone(),
        mime_type: info.mime.to_string(),
        data_base64: base64::engine::general_purpose::STANDARD.encode(&data),
    };
    Ok(LoadedImage {
        info,
        attachment,
        data,
    })
}

/// The usage line of `/image`.
pub fn usage() -> String {
    "usage: /image <path> — attach an image (png, jpeg, gif, webp) to the next request".into()
}

/// The lines the session shows for an attached image.
pub fn attached_lines(image: &LoadedImage, pending: usize) -> Vec<String> {
    let next = if pending == 1 {
        "it goes with the next request".to_string()
    } else {
        format!("{pending} images go with the next request")
    };
    vec![
        format!("attached {}: {next}", image.info.name),
        fallback_line(&image.info),
    ]
}

/// Whether a pasted text is just the path of an existing image file (a file dragged into the
/// terminal).
pub fn pasted_image_path(text: &str, cwd: &Path, home_dir: Option<&Path>) -> Option<PathBuf> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.contains('\n') {
        return None;
    }
    let path = resolve_path(trimmed, cwd, home_dir);
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    (["png", "jpg", "jpeg", "gif", "webp"].contains(&extension.as_str()) && path.is_file())
        .then_some(path)
}

#[cfg(test)]
mod tests;
