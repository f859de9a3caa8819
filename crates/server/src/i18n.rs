//! The panel's two languages. Every word a person reads comes from a catalogue: each page
//! keeps its own table (an enum made by [`texts!`], one line per string with its English and
//! Chinese), so a new page's strings are new table lines, and a string without its Chinese
//! does not compile.
//!
//! The language of a request is decided once, in [`scope`] (in front of every route, the
//! guard included): `?lang=` first, then the `braincode_lang` cookie the header's switch
//! sets, then `Accept-Language`, else English. It is held for the request's task, so a page
//! renders with [`t`] without passing it through every function.

use axum::extract::Request;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;

/// A language of the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    En,
    Zh,
}

/// The cookie the header's language switch writes.
pub(crate) const LANG_COOKIE: &str = "braincode_lang";

impl Lang {
    /// `en` or `zh`.
    pub(crate) fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    fn parse(text: &str) -> Option<Lang> {
        let primary = text.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        match primary.as_str() {
            "en" => Some(Lang::En),
            "zh" => Some(Lang::Zh),
            _ => None,
        }
    }

    /// The language a request asks for (see the module's documentation).
    pub(crate) fn of_request(query: Option<&str>, headers: &HeaderMap) -> Lang {
        let from_query = query.and_then(|query| {
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(key, _)| *key == "lang")
                .and_then(|(_, value)| Lang::parse(value))
        });
        let from_cookie = || {
            headers
                .get_all(header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(';'))
                .filter_map(|pair| pair.trim().split_once('='))
                .find(|(key, _)| *key == LANG_COOKIE)
                .and_then(|(_, value)| Lang::parse(value))
        };
        // The first language of the list the panel speaks (weights are in the order people
        // write them; browsers send them sorted).
        let from_accept = || {
            headers
                .get(header::ACCEPT_LANGUAGE)
                .and_then(|v| v.to_str().ok())
                .and_then(|list| {
                    list.split(',')
                        .filter_map(|item| Lang::parse(item.split(';').next().unwrap_or("")))
                        .next()
                })
        };
        from_query
            .or_else(from_cookie)
            .or_else(from_accept)
            .unwrap_or(Lang::En)
    }

    /// The language of the request being served (English outside one).
    pub(crate) fn current() -> Lang {
        LANG.try_with(|lang| *lang).unwrap_or(Lang::En)
    }
}

tokio::task_local! {
    static LANG: Lang;
}

/// The middleware that decides the language and serves the request in it.
pub(crate) async fn scope(request: Request, next: Next) -> Response {
    let lang = Lang::of_request(request.uri().query(), request.headers());
    LANG.scope(lang, next.run(request)).await
}

/// Runs `f` with `lang` as the current language (tests and work moved off the request task).
#[cfg(test)]
pub(crate) fn with_lang<T>(lang: Lang, f: impl FnOnce() -> T) -> T {
    LANG.sync_scope(lang, f)
}

/// One catalogue table: an enum whose every variant has an English and a Chinese text.
pub(crate) trait Text: Copy + 'static {
    /// Every entry, for the completeness checks.
    #[cfg(test)]
    const ALL: &'static [Self];
    /// The English text.
    fn en(self) -> &'static str;
    /// The Chinese text.
    fn zh(self) -> &'static str;
    /// The text in `lang`.
    fn in_lang(self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.en(),
            Lang::Zh => self.zh(),
        }
    }
}

/// Declares a catalogue table: `texts! { pub(crate) enum Name { Key => "English", "中文"; … } }`.
/// A text may hold `{0}`, `{1}`… for [`tf`].
macro_rules! texts {
    ($vis:vis enum $name:ident { $($key:ident => $en:literal, $zh:literal;)* }) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name { $($key),* }
        impl $crate::i18n::Text for $name {
            #[cfg(test)]
            const ALL: &'static [Self] = &[$(Self::$key),*];
            fn en(self) -> &'static str { match self { $(Self::$key => $en),* } }
            fn zh(self) -> &'static str { match self { $(Self::$key => $zh),* } }
        }
    };
}
pub(crate) use texts;

/// `key` in the current language.
pub(crate) fn t<T: Text>(key: T) -> &'static str {
    key.in_lang(Lang::current())
}

/// `key` in the current language with `{0}`, `{1}`… replaced by `args`.
pub(crate) fn tf<T: Text>(key: T, args: &[&dyn std::fmt::Display]) -> String {
    let mut out = t(key).to_string();
    for (i, arg) in args.iter().enumerate() {
        out = out.replace(&format!("{{{i}}}"), &arg.to_string());
    }
    out
}

/// Every table's entries as (English, Chinese): the completeness tests walk this. A page
/// with a table of its own adds one line here.
#[cfg(test)]
pub(crate) fn catalogue() -> Vec<(&'static str, &'static str)> {
    fn entries<T: Text>() -> impl Iterator<Item = (&'static str, &'static str)> {
        T::ALL.iter().map(|key| (key.en(), key.zh()))
    }
    entries::<crate::layout::L>()
        .chain(entries::<crate::api::E>())
        .chain(entries::<crate::input::S>())
        .chain(entries::<crate::pages::settings::S>())
        .chain(entries::<crate::pages::tools::S>())
        .chain(entries::<crate::pages::hooks::S>())
        .chain(entries::<crate::pages::prompts::S>())
        .chain(entries::<crate::pages::usage::S>())
        .chain(entries::<crate::pages::models::S>())
        .chain(entries::<crate::pages::brains::S>())
        .chain(entries::<crate::pages::routing::S>())
        .chain(entries::<crate::pages::permissions::S>())
        .chain(entries::<crate::pages::mcp::S>())
        .chain(entries::<crate::pages::sessions::S>())
        .chain((crate::pages::auth::TEXT.iter()).map(|(_, en, zh)| (*en, *zh)))
        .collect()
}

#[cfg(test)]
mod render_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn every_entry_has_both_languages() {
        let all = catalogue();
        assert!(all.len() > 50, "{}", all.len());
        for (en, zh) in &all {
            assert!(
                !en.trim().is_empty(),
                "an empty English text (its Chinese: {zh:?})"
            );
            assert!(!zh.trim().is_empty(), "{en:?} has no Chinese");
            // A Chinese text is Chinese, unless the text is a name (MCP, API, URL).
            let is_name = en.chars().all(|c| !c.is_lowercase());
            assert!(
                is_name || zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{en:?} → {zh:?} is not Chinese"
            );
            // Placeholders survive the translation.
            for i in 0..4 {
                let mark = format!("{{{i}}}");
                assert_eq!(
                    en.contains(&mark),
                    zh.contains(&mark),
                    "{en:?} / {zh:?}: {mark}"
                );
            }
        }
    }

    #[test]
    fn the_language_comes_from_query_then_cookie_then_accept_language() {
        let mut headers = HeaderMap::new();
        assert_eq!(Lang::of_request(None, &headers), Lang::En);
        headers.insert(
            header::ACCEPT_LANGUAGE,
            HeaderValue::from_static("fr-FR,zh-CN;q=0.9,en;q=0.8"),
        );
        assert_eq!(Lang::of_request(None, &headers), Lang::Zh);
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; braincode_lang=en"),
        );
        assert_eq!(Lang::of_request(None, &headers), Lang::En);
        assert_eq!(Lang::of_request(Some("x=1&lang=zh"), &headers), Lang::Zh);
        assert_eq!(Lang::of_request(Some("lang=xx"), &headers), Lang::En);
        assert_eq!(with_lang(Lang::Zh, Lang::current), Lang::Zh);
        assert_eq!(Lang::current(), Lang::En);
    }
}
