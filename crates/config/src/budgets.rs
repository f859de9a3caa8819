//! Public budgets of what the config crate puts into prompts. The snapshot and `@file`
//! budgets are the `context` crate's; the others are owned here.

pub use braincode_context::{
    AT_FILE_MAX_BYTES, SESSION_SNAPSHOT_MAX_CHARS, SNAPSHOT_FIELD_MAX_CHARS,
};
/// An image attached by an `@path` reference, in bytes (20 MiB; providers refuse larger
/// images and base64 makes them a third bigger).
pub const AT_IMAGE_MAX_BYTES: u64 = 20 * 1024 * 1024;
/// The whole project/user support section of a prompt, in characters.
pub const SUPPORT_SECTION_MAX_CHARS: usize = 64_000;
/// One AGENTS.md inside the support section, in characters.
pub const AGENTS_MD_MAX_CHARS: usize = 32_000;
/// Skills inlined into the support section.
pub const MAX_INLINED_SKILLS: usize = 12;
/// One skill body inside the support section, in characters.
pub const SKILL_MAX_CHARS: usize = 8_000;
