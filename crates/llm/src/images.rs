//! The `openai-images` wire: `POST {baseUrl}/images/generations` (OpenAI's Images API) and the
//! image it returns, either inline (`b64_json`) or as a `url` to download.
//!
//! One request, no streaming, no retries (an image costs money; the caller falls back along
//! the role's chain instead). Every failure is a [`ModelError`] whose message carries what the
//! provider said.

use std::time::Duration;

use base64::Engine;
use braincode_protocol::{ModelApi, ModelDefinition};
use serde::{Deserialize, Serialize};

use crate::classify::{classify_http_error, clip_detail};
use crate::endpoint::base_url_for;
use crate::transport::shared_http;
use crate::{ClientOptions, ErrorKind, ModelError};

/// Time limit of one image generation, download included (image models are slow).
pub const IMAGE_TIMEOUT: Duration = Duration::from_secs(120);

/// Largest image accepted, in bytes of the decoded image (and of a download).
pub const MAX_IMAGE_BYTES: usize = 25 * 1024 * 1024;

/// What to generate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageRequest {
    /// The description of the image.
    pub prompt: String,
    /// `WIDTHxHEIGHT` (e.g. `1024x1024`); the provider's default when unset.
    pub size: Option<String>,
    /// Provider quality setting (`low`, `medium`, `high`, `auto`).
    pub quality: Option<String>,
    /// `png`, `jpeg` or `webp`.
    pub output_format: Option<String>,
}

/// The type of a generated image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageMime {
    /// `image/png`.
    Png,
    /// `image/jpeg`.
    Jpeg,
    /// `image/webp`.
    Webp,
}

impl ImageMime {
    /// The MIME type.
    pub const fn as_str(self) -> &'static str {
        match self {
            ImageMime::Png => "image/png",
            ImageMime::Jpeg => "image/jpeg",
            ImageMime::Webp => "image/webp",
        }
    }

    /// The file extension (without the dot).
    pub const fn extension(self) -> &'static str {
        match self {
            ImageMime::Png => "png",
            ImageMime::Jpeg => "jpg",
            ImageMime::Webp => "webp",
        }
    }
}

/// The type of `bytes` from their magic number, else from the extension of `url`, else PNG.
pub fn sniff_image_mime(bytes: &[u8], url: Option<&str>) -> ImageMime {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return ImageMime::Png;
    }
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return ImageMime::Jpeg;
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return ImageMime::Webp;
    }
    let path = url
        .and_then(|u| url::Url::parse(u).ok())
        .map(|u| u.path().to_ascii_lowercase())
        .unwrap_or_default();
    if path.ends_with(".jpg") || path.ends_with(".jpeg") {
        ImageMime::Jpeg
    } else if path.ends_with(".webp") {
        ImageMime::Webp
    } else {
        ImageMime::Png
    }
}

/// A generated image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedImage {
    /// The image file's bytes.
    pub bytes: Vec<u8>,
    /// Its type.
    pub mime: ImageMime,
    /// The prompt the provider actually used, when it rewrote it.
    pub revised_prompt: Option<String>,
    /// The catalogue id of the model that made it.
    pub model: String,
}

/// A client of one `openai-images` model.
#[derive(Clone)]
pub struct ImageClient {
    http: reqwest::Client,
    url: String,
    model_id: String,
    wire_model: String,
    headers: Vec<(String, String)>,
    max_bytes: usize,
}

impl std::fmt::Debug for ImageClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageClient")
            .field("model", &self.model_id)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    prompt: &'a str,
    n: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quality: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_format: Option<&'a str>,
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    data: Vec<ReplyImage>,
}

#[derive(Deserialize)]
struct ReplyImage {
    #[serde(default)]
    b64_json: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    revised_prompt: Option<String>,
}

impl ImageClient {
    /// A client for a catalogue entry with `api: openai-images`. The key is sent as
    /// `Authorization: Bearer`; the entry's `headers` are added.
    pub fn new(
        definition: &ModelDefinition,
        api_key: Option<String>,
        options: &ClientOptions,
    ) -> Result<Self, ModelError> {
        let with_model = |e: ModelError| e.with_model(&definition.id);
        if definition.api != ModelApi::OpenaiImages {
            return Err(with_model(ModelError::new(
                ErrorKind::Config,
                format!(
                    "model '{}' speaks {}, not openai-images; it cannot generate images",
                    definition.id,
                    definition.api.as_str()
                ),
            )));
        }
        let base = base_url_for(definition)?;
        let api_key = api_key
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        if let Some(key) = &api_key {
            braincode_protocol::secrets::register_secret(key);
        }
        let http = shared_http(options).map_err(with_model)?;
        let mut headers: Vec<(String, String)> = api_key
            .iter()
            .map(|key| ("authorization".to_string(), format!("Bearer {key}")))
            .collect();
        headers.extend(definition.headers.clone());
        Ok(Self {
            http,
            url: format!("{}/images/generations", base.trim_end_matches('/')),
            model_id: definition.id.clone(),
            wire_model: definition.model_id.clone(),
            headers,
            max_bytes: MAX_IMAGE_BYTES,
        })
    }

    /// The same client with another size cap (bytes of the decoded image).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Generates one image.
    pub async fn generate(&self, request: &ImageRequest) -> Result<GeneratedImage, ModelError> {
        self.generate_inner(request)
            .await
            .map_err(|e| e.with_model(&self.model_id))
    }

    async fn generate_inner(&self, request: &ImageRequest) -> Result<GeneratedImage, ModelError> {
        let body = Body {
            model: &self.wire_model,
            prompt: &request.prompt,
            n: 1,
            size: request.size.as_deref(),
            quality: request.quality.as_deref(),
            output_format: request.output_format.as_deref(),
        };
        let mut call = self.http.post(&self.url).timeout(IMAGE_TIMEOUT).json(&body);
        for (name, value) in &self.headers {
            call = call.header(name, value);
        }
        let response = call.send().await.map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // A base64 image is 4/3 of its size; the JSON around it is small.
        let reply_cap = self.max_bytes / 3 * 4 + 64 * 1024;
        let text = read_capped(response, reply_cap, "reply")
            .await
            .map(|b| String::from_utf8_lossy(&b).into_owned())?;
        if !(200..300).contains(&status) {
            return Err(classify_http_error(status, &text, content_type.as_deref()));
        }
        let reply: Reply = serde_json::from_str(text.trim()).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!(
                    "the images endpoint answered something that is not its JSON ({e}): {}",
                    clip_detail(&text, false)
                ),
            )
        })?;
        let Some(image) = reply.data.into_iter().next() else {
            return Err(ModelError::new(
                ErrorKind::EmptyReply,
                "the images endpoint returned no image (an empty `data` array)",
            ));
        };
        let revised_prompt = image
            .revised_prompt
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty());
        let (bytes, url) = match (image.b64_json, image.url) {
            (Some(b64), _) if !b64.trim().is_empty() => (self.decode(&b64)?, None),
            (_, Some(url)) if !url.trim().is_empty() => {
                (self.download(url.trim()).await?, Some(url))
            }
            _ => {
                return Err(ModelError::new(
                    ErrorKind::InvalidResponse,
                    "the images endpoint returned an image with neither `b64_json` nor `url`",
                ));
            }
        };
        if bytes.is_empty() {
            return Err(ModelError::new(
                ErrorKind::EmptyReply,
                "the images endpoint returned an empty image",
            ));
        }
        Ok(GeneratedImage {
            mime: sniff_image_mime(&bytes, url.as_deref()),
            bytes,
            revised_prompt,
            model: self.model_id.clone(),
        })
    }

    fn decode(&self, b64: &str) -> Result<Vec<u8>, ModelError> {
        let b64 = b64.trim();
        if b64.len() / 4 * 3 > self.max_bytes + 3 {
            return Err(too_large(b64.len() / 4 * 3, self.max_bytes));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| {
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!("the image's `b64_json` is not valid base64: {e}"),
                )
            })?;
        if bytes.len() > self.max_bytes {
            return Err(too_large(bytes.len(), self.max_bytes));
        }
        Ok(bytes)
    }

    async fn download(&self, url: &str) -> Result<Vec<u8>, ModelError> {
        let parsed = url::Url::parse(url).map_err(|e| {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("the image url {url:?} is not a URL: {e}"),
            )
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ModelError::new(
                ErrorKind::InvalidResponse,
                format!(
                    "the image url uses {}:, only http and https are downloaded",
                    parsed.scheme()
                ),
            ));
        }
        let response = self
            .http
            .get(parsed)
            .timeout(IMAGE_TIMEOUT)
            .send()
            .await
            .map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(ModelError::new(
                if status >= 500 {
                    ErrorKind::Server
                } else {
                    ErrorKind::BadRequest
                },
                format!("downloading the generated image from {url} failed with HTTP {status}"),
            )
            .with_status(status));
        }
        read_capped(response, self.max_bytes, "image").await
    }
}

fn too_large(size: usize, cap: usize) -> ModelError {
    ModelError::new(
        ErrorKind::InvalidResponse,
        format!("the generated image is larger than the {cap}-byte limit ({size} bytes or more)"),
    )
}

fn transport_error(e: &reqwest::Error) -> ModelError {
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Network
    };
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if e.is_timeout() {
        message.push_str(&format!(
            " (image generation is limited to {} s)",
            IMAGE_TIMEOUT.as_secs()
        ));
    }
    ModelError::new(kind, message)
}

/// Reads a body, refusing one longer than `cap` bytes (by its Content-Length, or as it
/// arrives).
async fn read_capped(
    mut response: reqwest::Response,
    cap: usize,
    what: &str,
) -> Result<Vec<u8>, ModelError> {
    let announced = response.content_length().unwrap_or(0);
    if announced > cap as u64 {
        return Err(if what == "image" {
            too_large(usize::try_from(announced).unwrap_or(usize::MAX), cap)
        } else {
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!("the images endpoint's {what} is larger than {cap} bytes ({announced})"),
            )
        });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        body.extend_from_slice(&chunk);
        if body.len() > cap {
            return Err(if what == "image" {
                too_large(body.len(), cap)
            } else {
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!("the images endpoint's {what} is larger than {cap} bytes"),
                )
            });
        }
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_magic_then_extension_then_png() {
        assert_eq!(
            sniff_image_mime(b"\x89PNG\r\n\x1a\nrest", None),
            ImageMime::Png
        );
        assert_eq!(
            sniff_image_mime(&[0xFF, 0xD8, 0xFF, 0xE0], Some("https://x/a.png")),
            ImageMime::Jpeg
        );
        assert_eq!(
            sniff_image_mime(b"RIFF\0\0\0\0WEBPVP8 ", None),
            ImageMime::Webp
        );
        assert_eq!(
            sniff_image_mime(b"????", Some("https://x/a.JPEG?sig=1")),
            ImageMime::Jpeg
        );
        assert_eq!(
            sniff_image_mime(b"????", Some("https://x/a.webp")),
            ImageMime::Webp
        );
        assert_eq!(sniff_image_mime(b"????", None), ImageMime::Png);
    }
}
