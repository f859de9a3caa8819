//! A `session/prompt`'s content blocks as a run's prompt.
//!
//! Text is the prompt. A link to a file becomes an `@path` reference, so it is read under the
//! same containment as a typed one. An embedded resource (the editor sent the text, perhaps
//! of an unsaved buffer) is inlined as an attachment section. An image reaches the models as
//! a pasted one. Audio is not offered in the capabilities, and is refused.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use braincode_config::{ATTACHMENTS_HEADING, ImageAttachment};

/// Largest image the editor may send (base64 text), as the `@image` limit allows.
pub const MAX_IMAGE_BASE64: u64 = braincode_config::budgets::AT_IMAGE_MAX_BYTES.div_ceil(3) * 4;

/// What the run gets from one prompt.
#[derive(Debug, Default)]
pub struct PromptParts {
    /// The prompt text, with `@` references and inlined resources.
    pub text: String,
    /// Images sent with it.
    pub images: Vec<ImageAttachment>,
}

/// Builds the run's prompt; the error says which block could not be taken and why.
pub fn prompt_parts(blocks: &[ContentBlock]) -> Result<PromptParts, String> {
    let mut text = String::new();
    let mut attached = String::new();
    let mut images = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block {
            ContentBlock::Text(content) => {
                if !text.is_empty() && !text.ends_with(char::is_whitespace) {
                    text.push(' ');
                }
                text.push_str(&content.text);
            }
            ContentBlock::ResourceLink(link) => {
                let path = file_path(&link.uri).ok_or_else(|| {
                    format!(
                        "prompt block {index}: only file links can be read ({})",
                        link.uri
                    )
                })?;
                text.push_str(&format!(" @{}", path.display()));
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    let label = file_path(&contents.uri)
                        .map_or_else(|| contents.uri.clone(), |p| p.display().to_string());
                    attached.push_str(&format!("\n{label}:\n```\n{}\n```\n", contents.text));
                }
                EmbeddedResourceResource::BlobResourceContents(contents) => {
                    return Err(format!(
                        "prompt block {index}: binary resource {} cannot be read as text",
                        contents.uri
                    ));
                }
                _ => {
                    return Err(format!(
                        "prompt block {index}: a resource of a kind this version does not know"
                    ));
                }
            },
            ContentBlock::Image(image) => {
                if !matches!(
                    image.mime_type.as_str(),
                    "image/png" | "image/jpeg" | "image/gif" | "image/webp"
                ) {
                    return Err(format!(
                        "prompt block {index}: image type {} is not png, jpeg, gif or webp",
                        image.mime_type
                    ));
                }
                if image.data.len() as u64 > MAX_IMAGE_BASE64 {
                    return Err(format!(
                        "prompt block {index}: the image is larger than {} bytes",
                        braincode_config::budgets::AT_IMAGE_MAX_BYTES
                    ));
                }
                let name = image
                    .uri
                    .as_deref()
                    .and_then(file_path)
                    .unwrap_or_else(|| PathBuf::from(format!("image-{}", images.len() + 1)));
                images.push(ImageAttachment {
                    path: name,
                    mime_type: image.mime_type.clone(),
                    data_base64: image.data.clone(),
                });
            }
            ContentBlock::Audio(_) => {
                return Err(format!(
                    "prompt block {index}: audio is not supported (the agent does not offer it)"
                ));
            }
            _ => {
                return Err(format!(
                    "prompt block {index}: a content type this version does not know"
                ));
            }
        }
    }
    if !attached.is_empty() {
        text.push_str(ATTACHMENTS_HEADING);
        text.push_str(attached.trim_start_matches('\n'));
    }
    if text.trim().is_empty() && images.is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(PromptParts { text, images })
}

/// The path of a `file://` URI (or of a plain path).
fn file_path(uri: &str) -> Option<PathBuf> {
    if let Some(rest) = uri.strip_prefix("file://") {
        return Some(PathBuf::from(percent_decode(rest)));
    }
    (!uri.contains("://")).then(|| PathBuf::from(uri))
}

/// `%20` and friends in a file URI (editors escape spaces and non-ASCII names).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let Some(hex) = text.get(at + 1..at + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            at += 3;
            continue;
        }
        out.push(bytes[at]);
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn text_links_resources_and_images_each_reach_the_run() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("explain")),
            ContentBlock::ResourceLink(ResourceLink::new("main", "file:///p/src/my%20main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn unsaved() {}",
                    "file:///p/src/lib.rs",
                )),
            )),
            ContentBlock::Image(ImageContent::new("aGk=", "image/png")),
        ];
        let parts = prompt_parts(&blocks).unwrap();
        assert!(
            parts.text.starts_with("explain @/p/src/my main.rs"),
            "{}",
            parts.text
        );
        assert!(parts.text.contains(ATTACHMENTS_HEADING));
        assert!(
            parts
                .text
                .contains("/p/src/lib.rs:\n```\nfn unsaved() {}\n```")
        );
        assert_eq!(parts.images.len(), 1);
        assert_eq!(parts.images[0].data_base64, "aGk=");
    }

    #[test]
    fn what_cannot_be_taken_is_named() {
        let audio = vec![ContentBlock::Audio(
            agent_client_protocol::v1::schema::AudioContent::new("AAAA", "audio/wav"),
        )];
        assert!(prompt_parts(&audio).unwrap_err().contains("block 0: audio"));
        let svg = vec![ContentBlock::Image(ImageContent::new(
            "PHN2Zz4=",
            "image/svg+xml",
        ))];
        assert!(prompt_parts(&svg).unwrap_err().contains("image/svg+xml"));
        let web = vec![ContentBlock::ResourceLink(ResourceLink::new(
            "x",
            "https://example.com/a",
        ))];
        assert!(prompt_parts(&web).unwrap_err().contains("only file links"));
        assert_eq!(
            prompt_parts(&[ContentBlock::Text(TextContent::new("  "))]).unwrap_err(),
            "the prompt is empty"
        );
    }
}
