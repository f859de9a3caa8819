//! The stylesheet and script, embedded in the binary (no CDN, nothing fetched at run time).

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::AppState;

const CSS: &str = include_str!("../assets/app.css");
const JS: &str = include_str!("../assets/app.js");

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/assets/app.css",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/css; charset=utf-8"),
                        (header::CACHE_CONTROL, "private, max-age=300"),
                    ],
                    CSS,
                )
                    .into_response()
            }),
        )
        .route(
            "/assets/app.js",
            get(|| async {
                (
                    [
                        (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                        (header::CACHE_CONTROL, "private, max-age=300"),
                    ],
                    JS,
                )
                    .into_response()
            }),
        )
}
