//! Keyword patterns of the deterministic router, in English and Chinese.
//!
//! English keywords (and phrases) match whole words of the lower-cased prompt, so `ui` does
//! not fire inside `build`; Chinese has no word boundaries, so its keywords match as
//! substrings. No regex is involved: compiling large keyword alternations costs milliseconds,
//! and this runs on every plan.

mod families;

use families::{
    AUTH, BACKEND, CODEBASE, DBA, DESIGNER, DOCS, FILE_EDIT, FRONTEND, QA, REVIEW, SECURITY,
    SUMMARY, WORKSPACE,
};

/// One keyword family: English words or phrases (lower case, single spaces) and Chinese
/// substrings.
struct Keywords {
    english: &'static [&'static str],
    chinese: &'static [&'static str],
}

/// A prompt prepared for matching: lower-cased, and its ASCII words joined by single spaces
/// between leading and trailing spaces (` fix the ui `).
struct Prepared {
    lower: String,
    words: String,
}

impl Prepared {
    fn new(prompt: &str) -> Self {
        let lower = prompt.to_lowercase();
        let mut words = String::with_capacity(lower.len() + 2);
        words.push(' ');
        for word in lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            words.push_str(word);
            words.push(' ');
        }
        Self { lower, words }
    }

    /// Whether `phrase` appears as whole words.
    fn has_words(&self, phrase: &str) -> bool {
        self.words.match_indices(phrase).any(|(at, _)| {
            self.words.as_bytes().get(at.wrapping_sub(1)) == Some(&b' ')
                && self.words.as_bytes().get(at + phrase.len()) == Some(&b' ')
        })
    }
}

impl Prepared {
    /// Character offsets (start, end) of every whole-word occurrence of `phrase` in the
    /// lower-cased text.
    fn word_spans(&self, phrase: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        for (at, _) in self.lower.match_indices(phrase) {
            let end = at + phrase.len();
            let before = self.lower[..at].chars().next_back();
            let after = self.lower[end..].chars().next();
            let is_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
            if !is_word(before) && !is_word(after) {
                let start = self.lower[..at].chars().count();
                spans.push((start, start + phrase.chars().count()));
            }
        }
        spans
    }

    /// Character offsets of every occurrence of `needle` (no word boundaries).
    fn spans(&self, needle: &str) -> Vec<(usize, usize)> {
        self.lower
            .match_indices(needle)
            .map(|(at, _)| {
                let start = self.lower[..at].chars().count();
                (start, start + needle.chars().count())
            })
            .collect()
    }

    fn is_image_request(&self) -> bool {
        let near = |verbs: Vec<(usize, usize)>, nouns: Vec<(usize, usize)>, gap: usize| {
            verbs.iter().any(|(_, verb_end)| {
                nouns
                    .iter()
                    .any(|(noun_start, _)| *noun_start >= *verb_end && noun_start - verb_end <= gap)
            })
        };
        let english_verbs: Vec<_> = IMAGE_VERBS
            .iter()
            .flat_map(|v| self.word_spans(v))
            .collect();
        if !english_verbs.is_empty() {
            let nouns: Vec<_> = IMAGE_NOUNS
                .iter()
                .flat_map(|n| self.word_spans(n))
                .collect();
            if near(english_verbs, nouns, IMAGE_GAP_CHARS) {
                return true;
            }
        }
        if IMAGE_PHRASES_ZH.iter().any(|p| self.lower.contains(p)) {
            return true;
        }
        let verbs: Vec<_> = IMAGE_VERBS_ZH.iter().flat_map(|v| self.spans(v)).collect();
        !verbs.is_empty()
            && near(
                verbs,
                IMAGE_NOUNS_ZH.iter().flat_map(|n| self.spans(n)).collect(),
                IMAGE_GAP_CHARS_ZH,
            )
    }
}

impl Keywords {
    fn matches(&self, text: &Prepared) -> bool {
        self.english.iter().any(|w| text.has_words(w))
            || self.chinese.iter().any(|w| text.lower.contains(w))
    }
}

/// Image generation: a making verb followed, within 48 characters (24 in Chinese), by an
/// image noun; or one of the Chinese set phrases.
const IMAGE_VERBS: [&str; 7] = [
    "generate", "create", "make", "draw", "produce", "render", "edit",
];
const IMAGE_NOUNS: [&str; 18] = [
    "image",
    "images",
    "picture",
    "pictures",
    "illustration",
    "illustrations",
    "poster",
    "posters",
    "avatar",
    "avatars",
    "portrait",
    "portraits",
    "visual asset",
    "visual assets",
    "art",
    "artwork",
    "artworks",
    "arts",
];
const IMAGE_VERBS_ZH: [&str; 5] = ["生成", "画", "制作", "做", "创作"];
const IMAGE_NOUNS_ZH: [&str; 7] = ["图片", "图像", "海报", "头像", "插画", "插图", "壁纸"];
const IMAGE_PHRASES_ZH: [&str; 4] = ["画一张", "画一幅", "做图", "出图"];
const IMAGE_GAP_CHARS: usize = 48;
const IMAGE_GAP_CHARS_ZH: usize = 24;

/// Which keyword families a prompt contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[allow(missing_docs)] // One flag per pattern of the heuristic table.
pub struct Signals {
    pub file_edit: bool,
    pub workspace: bool,
    pub image: bool,
    pub frontend: bool,
    pub backend: bool,
    pub designer: bool,
    pub dba: bool,
    pub security: bool,
    pub qa: bool,
    pub review: bool,
    pub summary: bool,
    /// A question about the code base (see [`CODEBASE`]).
    pub codebase: bool,
    /// Documentation words (see [`DOCS`]).
    pub docs: bool,
}

impl Signals {
    /// Detects every keyword family in `prompt` (lower-cased first).
    pub fn detect(prompt: &str) -> Signals {
        let text = Prepared::new(prompt);
        let auth = AUTH.matches(&text);
        Signals {
            file_edit: FILE_EDIT.matches(&text),
            workspace: WORKSPACE.matches(&text),
            image: text.is_image_request(),
            frontend: FRONTEND.matches(&text),
            backend: BACKEND.matches(&text) || auth,
            designer: DESIGNER.matches(&text),
            dba: DBA.matches(&text),
            security: SECURITY.matches(&text) || auth,
            qa: QA.matches(&text),
            review: REVIEW.matches(&text),
            summary: SUMMARY.matches(&text),
            codebase: CODEBASE.matches(&text),
            docs: DOCS.matches(&text),
        }
    }

    /// Whether any domain family (frontend, backend, designer, dba, security, qa, review)
    /// matched.
    pub fn has_domain(&self) -> bool {
        self.frontend
            || self.backend
            || self.designer
            || self.dba
            || self.security
            || self.qa
            || self.review
    }
}

#[cfg(test)]
mod tests;
