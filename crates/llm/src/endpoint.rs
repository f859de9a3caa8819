//! Base URLs: normalization per API (spec 1.5), provider defaults, and which endpoints need
//! no credential.

use braincode_protocol::{ModelApi, ModelDefinition};
use reqwest::Url;

use crate::{ErrorKind, ModelError};

/// Default base URL of the official OpenAI API.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Default base URL of the official Anthropic API (without `/v1`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// Default base URL of Google's Gemini API (the client adds `/v1beta`).
pub const GOOGLE_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// Base URLs used when a catalogue entry of a well-known provider has no `baseUrl`.
const PROVIDER_DEFAULTS: &[(&str, &str)] = &[
    ("openai", OPENAI_BASE_URL),
    ("anthropic", ANTHROPIC_BASE_URL),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("ollama", "http://localhost:11434/v1"),
    ("lmstudio", "http://localhost:1234/v1"),
];

/// Paths users paste by mistake at the end of a base URL.
const OPENAI_ENDPOINT_SUFFIXES: &[&str] = &["/chat/completions", "/responses", "/models"];

/// Normalizes an OpenAI-compatible base URL: trims whitespace, trailing slashes and a pasted
/// endpoint path (`/chat/completions`, `/responses`, `/models`), then ensures a version
/// segment: a URL whose path has no version segment (`v1`, `v4`, `v1beta`, …) gets `/v1`.
///
/// `http://localhost:11434` → `http://localhost:11434/v1`;
/// `https://openrouter.ai/api/v1/` → `https://openrouter.ai/api/v1`;
/// `https://host/api/paas/v4` stays as it is.
pub fn normalize_openai_base_url(base: &str) -> String {
    let mut url = base.trim().trim_end_matches('/').to_string();
    for suffix in OPENAI_ENDPOINT_SUFFIXES {
        if let Some(stripped) = url.strip_suffix(suffix) {
            url = stripped.trim_end_matches('/').to_string();
            break;
        }
    }
    if path_segments(&url).any(is_version_segment) {
        url
    } else {
        format!("{url}/v1")
    }
}

/// Normalizes an Anthropic base URL: trims whitespace, trailing slashes, a pasted
/// `/v1/messages` and a trailing `/v1` (the client adds `/v1/messages` itself).
pub fn normalize_anthropic_base_url(base: &str) -> String {
    let mut url = base.trim().trim_end_matches('/');
    url = url
        .strip_suffix("/messages")
        .unwrap_or(url)
        .trim_end_matches('/');
    url = url.strip_suffix("/v1").unwrap_or(url).trim_end_matches('/');
    url.to_string()
}

/// Normalizes a Gemini API base URL to end in its version segment: trims whitespace,
/// trailing slashes and a pasted `/models…` path, keeps a version the URL already names
/// (`/v1beta`, `/v1`), and adds `/v1beta` otherwise.
///
/// `https://generativelanguage.googleapis.com` →
/// `https://generativelanguage.googleapis.com/v1beta` (and so does the same URL with
/// `/v1beta/` or `/v1beta/models`).
pub fn normalize_google_base_url(base: &str) -> String {
    let mut url = base.trim().trim_end_matches('/');
    if let Some(at) = url.find("/models/") {
        url = &url[..at];
    }
    url = url
        .strip_suffix("/models")
        .unwrap_or(url)
        .trim_end_matches('/');
    if path_segments(url).last().is_some_and(is_version_segment) {
        url.to_string()
    } else {
        format!("{url}/v1beta")
    }
}

/// Normalizes an Azure OpenAI base URL to end in `/openai/v1`: trims whitespace, trailing
/// slashes and a pasted endpoint path (`/responses`, `/models`), then adds what is missing of
/// `/openai/v1`.
///
/// `https://res.openai.azure.com` → `https://res.openai.azure.com/openai/v1`;
/// `https://res.openai.azure.com/openai/v1/` stays `https://res.openai.azure.com/openai/v1`.
pub fn normalize_azure_base_url(base: &str) -> String {
    let mut url = base.trim().trim_end_matches('/');
    for suffix in OPENAI_ENDPOINT_SUFFIXES {
        if let Some(stripped) = url.strip_suffix(suffix) {
            url = stripped.trim_end_matches('/');
            break;
        }
    }
    if url.ends_with("/openai/v1") {
        url.to_string()
    } else if url.ends_with("/openai") {
        format!("{url}/v1")
    } else {
        format!("{url}/openai/v1")
    }
}

/// The normalized base URL of a catalogue entry: its `baseUrl`, or the default of a
/// well-known provider.
pub fn base_url_for(definition: &ModelDefinition) -> Result<String, ModelError> {
    let raw = match definition.base_url.as_deref().map(str::trim) {
        Some(url) if !url.is_empty() => url.to_string(),
        _ => default_base_url(definition).ok_or_else(|| {
            ModelError::new(
                ErrorKind::Config,
                format!(
                    "model '{}' has no baseUrl in models.json and provider '{}' has no default endpoint",
                    definition.id, definition.provider
                ),
            )
            .with_model(&definition.id)
        })?,
    };
    if Url::parse(&raw).is_err() {
        return Err(ModelError::new(
            ErrorKind::Config,
            format!("model '{}' has an invalid baseUrl {raw:?}", definition.id),
        )
        .with_model(&definition.id));
    }
    Ok(normalize_base_url(definition.api, &raw))
}

/// Normalizes a base URL the way `api` expects it (see the `normalize_*` functions).
pub fn normalize_base_url(api: ModelApi, raw: &str) -> String {
    match api {
        ModelApi::AnthropicMessages => normalize_anthropic_base_url(raw),
        ModelApi::GoogleGenerativeAi => normalize_google_base_url(raw),
        ModelApi::AzureOpenaiResponses => normalize_azure_base_url(raw),
        ModelApi::OpenaiCompletions
        | ModelApi::OpenaiResponses
        | ModelApi::Local
        | ModelApi::OpenaiImages => normalize_openai_base_url(raw),
    }
}

fn default_base_url(definition: &ModelDefinition) -> Option<String> {
    let provider = definition.provider.to_ascii_lowercase();
    if let Some((_, url)) = PROVIDER_DEFAULTS.iter().find(|(name, _)| *name == provider) {
        return Some((*url).to_string());
    }
    match definition.api {
        ModelApi::AnthropicMessages if provider.contains("anthropic") => {
            Some(ANTHROPIC_BASE_URL.to_string())
        }
        // The Gemini API has one public host; Azure's is per resource, so it has no default.
        ModelApi::GoogleGenerativeAi => Some(GOOGLE_BASE_URL.to_string()),
        // OpenAI's Images API is the one `openai-images` names.
        ModelApi::OpenaiImages => Some(OPENAI_BASE_URL.to_string()),
        _ => None,
    }
}

/// Whether the URL points at this machine (`localhost`, `127.0.0.0/8`, `::1`, `0.0.0.0`).
pub fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = Url::parse(url.trim()) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Domain(domain)) => {
            let domain = domain.to_ascii_lowercase();
            domain == "localhost" || domain.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback() || ip.is_unspecified(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unspecified(),
        None => false,
    }
}

/// Whether calling this model needs no API key.
///
/// The rule: embedded models (`api: local`) never need one, and neither does an endpoint on
/// this machine (a `baseUrl` — or provider default, such as Ollama's — on `localhost`,
/// `127.x.x.x`, `::1` or `0.0.0.0`): local servers (Ollama, LM Studio, llama.cpp, vLLM) run
/// without auth. A key is still sent when one is configured.
pub fn is_keyless(definition: &ModelDefinition) -> bool {
    if definition.is_local() {
        return true;
    }
    let url = match definition.base_url.as_deref().map(str::trim) {
        Some(url) if !url.is_empty() => url.to_string(),
        _ => match default_base_url(definition) {
            Some(url) => url,
            None => return false,
        },
    };
    is_loopback_url(&url)
}

/// Whether the base URL is the official OpenAI API (some request fields differ there).
pub fn is_official_openai(base_url: &str) -> bool {
    Url::parse(base_url)
        .ok()
        .and_then(|u| {
            u.host_str()
                .map(|h| h.eq_ignore_ascii_case("api.openai.com"))
        })
        .unwrap_or(false)
}

fn path_segments(url: &str) -> impl Iterator<Item = &str> {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = after_scheme.split_once('/').map_or("", |(_, path)| path);
    let path = path.split(['?', '#']).next().unwrap_or("");
    path.split('/').filter(|s| !s.is_empty())
}

/// `v1`, `v2`, `v4`, `v1beta`, `v1alpha2`: a `v`, digits, then optional letters/digits.
fn is_version_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    if !matches!(chars.next(), Some('v' | 'V')) {
        return false;
    }
    let rest = chars.as_str();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && rest[digits..].chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_compatible_urls_get_a_version_suffix() {
        let cases = [
            ("http://localhost:11434", "http://localhost:11434/v1"),
            ("http://localhost:11434/", "http://localhost:11434/v1"),
            ("http://localhost:11434/v1", "http://localhost:11434/v1"),
            ("http://localhost:11434/v1///", "http://localhost:11434/v1"),
            (
                "https://openrouter.ai/api/v1",
                "https://openrouter.ai/api/v1",
            ),
            ("https://api.openai.com/v1/", "https://api.openai.com/v1"),
            ("https://api.openai.com", "https://api.openai.com/v1"),
            ("https://example.com/proxy", "https://example.com/proxy/v1"),
            (
                "https://open.bigmodel.cn/api/paas/v4",
                "https://open.bigmodel.cn/api/paas/v4",
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/openai/",
                "https://generativelanguage.googleapis.com/v1beta/openai",
            ),
            (
                "http://127.0.0.1:8080/v1/chat/completions",
                "http://127.0.0.1:8080/v1",
            ),
            ("  http://127.0.0.1:8080  ", "http://127.0.0.1:8080/v1"),
            (
                "https://host.example/video/api",
                "https://host.example/video/api/v1",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_openai_base_url(input), expected, "{input}");
        }
    }

    #[test]
    fn anthropic_urls_lose_v1() {
        let cases = [
            ("https://api.anthropic.com", "https://api.anthropic.com"),
            ("https://api.anthropic.com/v1", "https://api.anthropic.com"),
            ("https://api.anthropic.com/v1/", "https://api.anthropic.com"),
            (
                "https://api.anthropic.com/v1/messages",
                "https://api.anthropic.com",
            ),
            (
                "https://api.kimi.com/coding/v1",
                "https://api.kimi.com/coding",
            ),
            ("http://127.0.0.1:9000/", "http://127.0.0.1:9000"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_anthropic_base_url(input), expected, "{input}");
        }
    }

    #[test]
    fn google_urls_end_in_one_version() {
        let cases = [
            (
                "https://generativelanguage.googleapis.com",
                "https://generativelanguage.googleapis.com/v1beta",
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta",
                "https://generativelanguage.googleapis.com/v1beta",
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/",
                "https://generativelanguage.googleapis.com/v1beta",
            ),
            (
                "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                "https://generativelanguage.googleapis.com/v1beta",
            ),
            (
                "https://generativelanguage.googleapis.com/v1",
                "https://generativelanguage.googleapis.com/v1",
            ),
            ("http://127.0.0.1:9000/", "http://127.0.0.1:9000/v1beta"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_google_base_url(input), expected, "{input}");
        }
    }

    #[test]
    fn azure_urls_end_in_openai_v1() {
        let cases = [
            (
                "https://res.openai.azure.com",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/openai",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/openai/v1/",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/openai/v1/responses",
                "https://res.openai.azure.com/openai/v1",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_azure_base_url(input), expected, "{input}");
        }
    }

    fn def(provider: &str, api: ModelApi, base: Option<&str>) -> ModelDefinition {
        serde_json::from_value(serde_json::json!({
            "id": format!("{provider}/m"), "provider": provider, "modelId": "m",
            "api": api.as_str(), "baseUrl": base,
        }))
        .unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn definitions_resolve_defaults_and_errors() {
        let openai = def("openai", ModelApi::OpenaiCompletions, None);
        assert_eq!(base_url_for(&openai).unwrap(), "https://api.openai.com/v1");
        let anthropic = def(
            "anthropic",
            ModelApi::AnthropicMessages,
            Some("https://api.anthropic.com/v1"),
        );
        assert_eq!(
            base_url_for(&anthropic).unwrap(),
            "https://api.anthropic.com"
        );
        let gemini = def("acme", ModelApi::GoogleGenerativeAi, None);
        assert_eq!(
            base_url_for(&gemini).unwrap(),
            "https://generativelanguage.googleapis.com/v1beta"
        );
        assert!(!is_keyless(&gemini));
        let azure = def("azure", ModelApi::AzureOpenaiResponses, None);
        assert_eq!(base_url_for(&azure).unwrap_err().kind, ErrorKind::Config);
        let unknown = def("acme", ModelApi::OpenaiCompletions, None);
        assert_eq!(base_url_for(&unknown).unwrap_err().kind, ErrorKind::Config);
        let bad = def("acme", ModelApi::OpenaiCompletions, Some("not a url"));
        assert_eq!(base_url_for(&bad).unwrap_err().kind, ErrorKind::Config);
    }

    #[test]
    fn keyless_rule() {
        assert!(is_keyless(&def(
            "ollama",
            ModelApi::OpenaiCompletions,
            None
        )));
        assert!(is_keyless(&def(
            "x",
            ModelApi::OpenaiCompletions,
            Some("http://127.0.0.1:8080")
        )));
        assert!(is_keyless(&def(
            "x",
            ModelApi::OpenaiCompletions,
            Some("http://localhost:1234/v1")
        )));
        assert!(is_keyless(&def(
            "x",
            ModelApi::OpenaiCompletions,
            Some("http://[::1]:8080")
        )));
        assert!(is_keyless(&def("x", ModelApi::Local, None)));
        assert!(!is_keyless(&def(
            "openai",
            ModelApi::OpenaiCompletions,
            None
        )));
        assert!(!is_keyless(&def(
            "x",
            ModelApi::OpenaiCompletions,
            Some("https://localhost.evil.com")
        )));
        assert!(!is_keyless(&def(
            "x",
            ModelApi::OpenaiCompletions,
            Some("http://192.168.1.5:8080")
        )));
    }

    #[test]
    fn official_openai_detection() {
        assert!(is_official_openai("https://api.openai.com/v1"));
        assert!(!is_official_openai("https://openrouter.ai/api/v1"));
    }
}
