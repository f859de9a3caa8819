use super::*;

/// A PNG header of `width`×`height` (the IHDR chunk is all `inspect` reads).
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    data.extend_from_slice(&width.to_be_bytes());
    data.extend_from_slice(&height.to_be_bytes());
    data.extend_from_slice(b"\x08\x06\0\0\0 rest of the file");
    data
}

fn env(term: Option<&str>, program: Option<&str>, kitty: Option<&str>) -> TermEnv {
    TermEnv {
        term: term.map(str::to_string),
        term_program: program.map(str::to_string),
        kitty_window_id: kitty.map(str::to_string),
    }
}

#[test]
fn the_protocol_follows_the_terminal() {
    let cases = [
        (
            env(Some("xterm-kitty"), None, None),
            GraphicsProtocol::Kitty,
        ),
        (
            env(Some("xterm-256color"), None, Some("3")),
            GraphicsProtocol::Kitty,
        ),
        (
            env(Some("xterm-256color"), Some("iTerm.app"), None),
            GraphicsProtocol::Iterm2,
        ),
        (
            env(Some("xterm-256color"), Some("WezTerm"), None),
            GraphicsProtocol::Iterm2,
        ),
        (
            env(Some("xterm-256color"), Some("Apple_Terminal"), None),
            GraphicsProtocol::Text,
        ),
        (TermEnv::default(), GraphicsProtocol::Text),
    ];
    for (env, expected) in cases {
        assert_eq!(GraphicsProtocol::detect(&env), expected, "{env:?}");
    }
}

#[test]
fn kitty_sends_the_png_in_chunks_sized_in_cells() {
    let mut data = png(640, 480);
    data.extend(std::iter::repeat_n(7u8, 5000));
    let info = inspect("logo.png", &data).unwrap();
    let sequence = escape_sequence(GraphicsProtocol::Kitty, &data, &info, (80, 30)).unwrap();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&data);
    assert!(
        sequence.starts_with("\x1b_Ga=T,f=100,q=2,c=80,r=30,m=1;"),
        "{sequence:.60}"
    );
    let chunks: Vec<&str> = sequence.split("\x1b\\").filter(|c| !c.is_empty()).collect();
    assert_eq!(chunks.len(), encoded.len().div_ceil(4096));
    assert!(chunks[1].starts_with("\x1b_Gm=0;"), "{:.20}", chunks[1]);
    let payload: String = chunks
        .iter()
        .map(|c| c.split_once(';').unwrap().1)
        .collect();
    assert_eq!(payload, encoded);
    // kitty reads only PNG files: another type is not sent.
    let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10];
    let info = inspect("a.jpg", &jpeg).unwrap();
    assert_eq!(
        escape_sequence(GraphicsProtocol::Kitty, &jpeg, &info, (12, 4)),
        None
    );
}

#[test]
fn iterm2_sends_one_inline_file_and_text_terminals_nothing() {
    let data = png(32, 32);
    let info = inspect("icon.png", &data).unwrap();
    let sequence = escape_sequence(GraphicsProtocol::Iterm2, &data, &info, (12, 4)).unwrap();
    let engine = base64::engine::general_purpose::STANDARD;
    assert_eq!(
        sequence,
        format!(
            "\x1b]1337;File=name={};size={};width=12;height=4;preserveAspectRatio=1;inline=1:{}\x07",
            engine.encode("icon.png"),
            data.len(),
            engine.encode(&data)
        )
    );
    assert_eq!(
        escape_sequence(GraphicsProtocol::Text, &data, &info, (12, 4)),
        None
    );
}

#[test]
fn headers_give_type_and_pixel_size() {
    assert_eq!(
        inspect("a.png", &png(640, 480)).unwrap().pixels,
        Some((640, 480))
    );
    let gif = b"GIF89a\x40\x01\xf0\x00rest";
    let info = inspect("a.gif", gif).unwrap();
    assert_eq!((info.mime, info.pixels), ("image/gif", Some((320, 240))));
    // SOI, an APP0 segment, then SOF0 with height 200 and width 300.
    let jpeg = [
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0xC8,
        0x01, 0x2C, 0x03, 0x00, 0x00,
    ];
    let info = inspect("a.jpg", &jpeg).unwrap();
    assert_eq!((info.mime, info.pixels), ("image/jpeg", Some((300, 200))));
    let mut webp = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
    webp.extend_from_slice(&[0x7F, 0x02, 0x00, 0xDF, 0x01, 0x00]);
    let info = inspect("a.webp", &webp).unwrap();
    assert_eq!((info.mime, info.pixels), ("image/webp", Some((640, 480))));
    assert_eq!(inspect("notes.txt", b"hello"), None);
}

#[test]
fn previews_stay_within_their_bounds() {
    assert_eq!(preview_cells(Some((16, 16)), (200, 60)), PREVIEW_MIN);
    assert_eq!(preview_cells(Some((8000, 8000)), (400, 200)), PREVIEW_MAX);
    assert_eq!(preview_cells(Some((640, 480)), (200, 60)), (80, 30));
    // A small screen still gets the smallest preview.
    assert_eq!(preview_cells(Some((640, 480)), (10, 4)), PREVIEW_MIN);
}

#[test]
fn typed_paths_lose_quotes_and_gain_home_and_cwd() {
    let cwd = Path::new("/work/project");
    let home = Path::new("/home/me");
    assert_eq!(
        resolve_path("\"shots/a b.png\"", cwd, Some(home)),
        PathBuf::from("/work/project/shots/a b.png")
    );
    assert_eq!(
        resolve_path("'~/Pictures/x.png'", cwd, Some(home)),
        PathBuf::from("/home/me/Pictures/x.png")
    );
    assert_eq!(
        resolve_path("/tmp/my\\ shot.png", cwd, Some(home)),
        PathBuf::from("/tmp/my shot.png")
    );
    assert_eq!(
        resolve_path("~other/x.png", cwd, Some(home)),
        PathBuf::from("/work/project/~other/x.png")
    );
}

#[test]
fn loading_checks_existence_type_and_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("icon.png"), png(32, 32)).unwrap();
    std::fs::write(dir.path().join("notes.png"), b"not an image").unwrap();
    let loaded = load("icon.png", dir.path(), None).unwrap();
    assert_eq!(loaded.attachment.mime_type, "image/png");
    assert_eq!(loaded.attachment.path, dir.path().join("icon.png"));
    let missing = load("gone.png", dir.path(), None).unwrap_err();
    assert_eq!(
        missing,
        format!("Image not found: {}", dir.path().join("gone.png").display())
    );
    assert!(
        load("notes.png", dir.path(), None)
            .unwrap_err()
            .contains("is not a PNG, JPEG, GIF or WebP image")
    );
    assert_eq!(load("  ", dir.path(), None).unwrap_err(), usage());
    assert_eq!(
        pasted_image_path(" icon.png\n", dir.path(), None),
        Some(dir.path().join("icon.png"))
    );
    assert_eq!(pasted_image_path("gone.png", dir.path(), None), None);
    assert_eq!(pasted_image_path("fix the bug", dir.path(), None), None);
}
