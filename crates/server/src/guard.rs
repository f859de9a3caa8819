//! Who may talk to the panel: a request must name our own host (no DNS rebinding), come from
//! our own origin when it says where it comes from (no CSRF), and carry the token, as the
//! cookie the first visit sets or as a bearer header (scripts).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rand::RngCore;

use crate::AppState;
use crate::i18n::t;
use crate::layout::L;

/// A fresh random token: 32 bytes from the OS generator, hex.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    braincode_protocol::lower_hex(&bytes)
}

/// The cookie carries the port: two panels on one machine keep their own.
pub(crate) fn cookie_name(hosts: &[String]) -> String {
    let port = hosts
        .first()
        .and_then(|host| host.rsplit(':').next())
        .unwrap_or("0");
    format!("braincode_panel_{port}")
}

/// Compares in time independent of where the strings differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn cookie_token<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    header_str(headers, header::AUTHORIZATION)?.strip_prefix("Bearer ")
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == "token")
        .map(|(_, value)| value)
}

/// The query without its `token` parameter (every other parameter kept, in order), or `None`
/// when nothing is left.
fn query_without_token(query: &str) -> Option<String> {
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty() && pair.split('=').next() != Some("token"))
        .collect();
    (!kept.is_empty()).then(|| kept.join("&"))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let body = crate::layout::bare_page(
        t(if status == StatusCode::UNAUTHORIZED {
            L::SignIn
        } else {
            L::Refused
        }),
        message,
    );
    (status, body).into_response()
}

/// The middleware in front of every route.
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host_ok = header_str(headers, header::HOST).is_some_and(|host| {
        state
            .hosts
            .iter()
            .any(|allowed| host.eq_ignore_ascii_case(allowed))
    });
    if !host_ok {
        return refuse(StatusCode::FORBIDDEN, t(L::HostRefused));
    }
    if let Some(origin) = header_str(headers, header::ORIGIN) {
        let own = state
            .hosts
            .iter()
            .any(|host| origin.eq_ignore_ascii_case(&format!("http://{host}")));
        if !own {
            return refuse(StatusCode::FORBIDDEN, t(L::OriginRefused));
        }
    }
    let unsafe_method = !matches!(*request.method(), Method::GET | Method::HEAD);
    if unsafe_method
        && header_str(headers, header::HeaderName::from_static("sec-fetch-site"))
            .is_some_and(|site| site != "same-origin" && site != "none")
    {
        return refuse(StatusCode::FORBIDDEN, t(L::OwnPagesOnly));
    }
    let cookie = cookie_name(&state.hosts);
    if let Some(offered) = query_token(request.uri().query()) {
        if !same_secret(offered, &state.token) {
            return refuse(StatusCode::UNAUTHORIZED, t(L::WrongToken));
        }
        // The token leaves the address bar at once (the cookie carries it from now on); the
        // rest of the address stays as it was.
        let mut path = request.uri().path().to_string();
        if let Some(rest) = request.uri().query().and_then(query_without_token) {
            path.push('?');
            path.push_str(&rest);
        }
        let mut response = (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, path),
                (header::CACHE_CONTROL, "no-store".into()),
            ],
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&format!(
            "{cookie}={}; HttpOnly; SameSite=Strict; Path=/",
            state.token
        )) {
            response.headers_mut().insert(header::SET_COOKIE, value);
        }
        return response;
    }
    let presented = cookie_token(headers, &cookie).or_else(|| bearer_token(headers));
    if !presented.is_some_and(|token| same_secret(token, &state.token)) {
        return refuse(StatusCode::UNAUTHORIZED, t(L::NoToken));
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_long() {
        let (a, b) = (random_token(), random_token());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        assert!(!same_secret("", "a"));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; braincode_panel_80=tok; b=2"),
        );
        assert_eq!(cookie_token(&headers, "braincode_panel_80"), Some("tok"));
        assert_eq!(cookie_token(&headers, "braincode_panel_81"), None);
        assert_eq!(query_token(Some("x=1&token=t")), Some("t"));
        assert_eq!(
            query_without_token("q=a&token=t&by=role").as_deref(),
            Some("q=a&by=role")
        );
        assert_eq!(query_without_token("token=t"), None);
        assert_eq!(
            query_without_token("tokens=2&token=t").as_deref(),
            Some("tokens=2")
        );
        assert_eq!(
            cookie_name(&["127.0.0.1:4242".into()]),
            "braincode_panel_4242"
        );
    }
}
