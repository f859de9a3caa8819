//! Streamable HTTP servers: the client we give `rmcp`, and what its errors mean in HTTP terms.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Once;

use reqwest_rmcp::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError,
    StreamableHttpClientTransportConfig, StreamableHttpError,
};

use crate::McpError;

/// The transport type for an HTTP server.
pub(crate) type HttpTransport = StreamableHttpClientTransport<reqwest_rmcp::Client>;

/// rmcp's reqwest is built without a TLS crypto provider: install ring's as the process
/// default once (another crate may have installed one already; that one is kept).
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The transport for `url`, every request carrying `headers`.
pub(crate) fn transport(
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<HttpTransport, McpError> {
    install_crypto_provider();
    let mut default_headers = HeaderMap::new();
    for (name, value) in headers {
        let invalid = |what: &str| McpError::Http {
            status: None,
            // The value is a secret more often than not: only the name is told.
            message: format!("header `{name}` has an invalid {what}"),
        };
        let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
        let mut header_value = HeaderValue::from_str(value).map_err(|_| invalid("value"))?;
        header_value.set_sensitive(true);
        default_headers.insert(header_name, header_value);
    }
    let client = reqwest_rmcp::Client::builder()
        .default_headers(default_headers)
        // A redirect would turn the POST into a GET or replay our headers elsewhere: report
        // it instead, so the configured URL gets fixed.
        .redirect(reqwest_rmcp::redirect::Policy::none())
        .build()
        .map_err(|e| McpError::Http {
            status: None,
            message: format!("could not build the HTTP client: {}", chain(&e)),
        })?;
    // A server restarted behind our back forgets our session: start a new one.
    let config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .reinit_on_expired_session(true);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

/// The HTTP meaning of a transport error, if it has one: a status, or a failed connection.
pub(crate) fn http_failure(error: &(dyn Error + 'static), url: &str) -> Option<McpError> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = classify(error, url) {
            return Some(found);
        }
        current = error.source();
    }
    None
}

fn classify(error: &(dyn Error + 'static), url: &str) -> Option<McpError> {
    let http = |status: Option<u16>, message: String| {
        Some(McpError::Http {
            status,
            message: redact(&message, url),
        })
    };
    if let Some(e) = error.downcast_ref::<StreamableHttpError<reqwest_rmcp::Error>>() {
        return match e {
            StreamableHttpError::AuthRequired(_) => http(Some(401), "unauthorized".into()),
            StreamableHttpError::InsufficientScope(_) => http(Some(403), "forbidden".into()),
            StreamableHttpError::HttpStatus(status) => http(
                Some(status.status),
                format!("the server answered HTTP {}", status.status),
            ),
            StreamableHttpError::SessionExpired => http(Some(404), "the session expired".into()),
            StreamableHttpError::Client(e) => reqwest_failure(e, url),
            StreamableHttpError::UnexpectedServerResponse(message) => {
                let status = status_in(message);
                status.and_then(|status| http(Some(status), status_words(message)))
            }
            StreamableHttpError::UnexpectedContentType(content_type) => http(
                None,
                format!(
                    "the server answered with content type {} (not JSON or an event stream)",
                    content_type.as_deref().unwrap_or("(none)")
                ),
            ),
            _ => None,
        };
    }
    if error.downcast_ref::<AuthRequiredError>().is_some() {
        return http(Some(401), "unauthorized".into());
    }
    if error.downcast_ref::<InsufficientScopeError>().is_some() {
        return http(Some(403), "forbidden".into());
    }
    if let Some(e) = error.downcast_ref::<HttpStatusError>() {
        return http(
            Some(e.status),
            format!("the server answered HTTP {}", e.status),
        );
    }
    if let Some(e) = error.downcast_ref::<reqwest_rmcp::Error>() {
        return reqwest_failure(e, url);
    }
    None
}

fn reqwest_failure(e: &reqwest_rmcp::Error, url: &str) -> Option<McpError> {
    let status = e.status().map(|s| s.as_u16());
    let message = if e.is_connect() {
        format!(
            "could not connect to {}: {}",
            redact(url, url),
            root_cause(e)
        )
    } else if e.is_timeout() {
        "the request timed out".to_string()
    } else {
        chain(e)
    };
    Some(McpError::Http {
        status,
        message: redact(&message, url),
    })
}

/// `HTTP 401 Unauthorized: …` → 401.
fn status_in(message: &str) -> Option<u16> {
    let rest = message.trim_start().strip_prefix("HTTP ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|s| (100..600).contains(s))
}

/// `HTTP 404 Not Found: body` → `Not Found: body` (first line, at most 300 characters), or
/// just `Not Found` when the body is empty.
fn status_words(message: &str) -> String {
    let line = message.trim_start().lines().next().unwrap_or_default();
    let rest = line
        .strip_prefix("HTTP ")
        .map(|r| {
            r.trim_start_matches(|c: char| c.is_ascii_digit())
                .trim_start()
        })
        .unwrap_or(line);
    let words = match rest.split_once(':') {
        Some((reason, body)) if body.trim().is_empty() => reason.trim().to_string(),
        Some((reason, body)) => format!("{}: {}", reason.trim(), body.trim()),
        None => rest.trim().to_string(),
    };
    let words: String = words.chars().take(300).collect();
    if words.is_empty() {
        "the server refused the request".to_string()
    } else {
        words
    }
}

/// An error and its sources, `: `-joined, without repeating a source already quoted.
pub(crate) fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut current = error.source();
    while let Some(source) = current {
        let part = source.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        current = source.source();
    }
    text
}

fn root_cause(error: &(dyn Error + 'static)) -> String {
    let mut current = error;
    while let Some(source) = current.source() {
        current = source;
    }
    current.to_string()
}

/// The URL's query string may hold a token: never quote it.
fn redact(message: &str, url: &str) -> String {
    match url.split_once('?') {
        Some((bare, _)) => message.replace(url, &format!("{bare}?…")),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_from_message() {
        assert_eq!(status_in("HTTP 401 Unauthorized: nope"), Some(401));
        assert_eq!(status_in("HTTP 5"), None);
        assert_eq!(status_in("oops"), None);
    }

    #[test]
    fn status_words_drop_the_status_and_an_empty_body() {
        assert_eq!(status_words("HTTP 404 Not Found: "), "Not Found");
        assert_eq!(
            status_words("HTTP 400 Bad Request: bad session\nmore"),
            "Bad Request: bad session"
        );
        assert_eq!(status_words("HTTP 418"), "the server refused the request");
    }

    #[test]
    fn query_is_redacted() {
        let url = "https://x.test/mcp?token=secret";
        assert_eq!(
            redact(&format!("error sending request for url ({url})"), url),
            "error sending request for url (https://x.test/mcp?…)"
        );
    }

    #[test]
    fn bad_header_names_the_header_not_the_value() {
        let mut headers = BTreeMap::new();
        headers.insert("Authorization".to_string(), "Bearer a\nb".to_string());
        let Err(McpError::Http { status, message }) = transport("http://127.0.0.1:9/mcp", &headers)
        else {
            panic!("expected an HTTP error");
        };
        assert_eq!(status, None);
        assert!(
            message.contains("Authorization") && !message.contains("Bearer"),
            "{message}"
        );
    }
}
