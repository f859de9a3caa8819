//! Deterministic filler for synthetic journals: words, prose, code and usage figures.

use braincode_protocol::Usage;

/// A small deterministic generator (PCG-style LCG): the same journal every time.
pub(super) struct Filler(u64);

impl Filler {
    pub(super) fn new(seed: u64) -> Self {
        Filler(
            seed.wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407),
        )
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A length in `lo..hi`.
    pub(super) fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }

    pub(super) fn word(&mut self) -> &'static str {
        const WORDS: [&str; 24] = [
            "token", "session", "validate", "handler", "request", "cache", "schema", "worker",
            "route", "patch", "config", "error", "parser", "review", "tests", "module", "index",
            "user", "expiry", "claims", "secret", "store", "query", "result",
        ];
        WORDS[(self.next() % WORDS.len() as u64) as usize]
    }

    /// Prose of about `len` bytes.
    pub(super) fn prose(&mut self, len: usize) -> String {
        let mut out = String::with_capacity(len + 16);
        while out.len() < len {
            out.push_str(self.word());
            out.push(if self.next().is_multiple_of(11) {
                '.'
            } else {
                ' '
            });
        }
        out
    }

    /// Source-like text of about `len` bytes (what `read_file` and `search_files` return).
    pub(super) fn code(&mut self, path: &str, len: usize) -> String {
        let mut out = String::with_capacity(len + 96);
        out.push_str(&format!("# {path} (chars 0-{len}/{len})\n"));
        let mut line = 1;
        while out.len() < len {
            let (a, b, c) = (self.word(), self.word(), self.word());
            let n = self.next() % 1000;
            out.push_str(&match line % 4 {
                0 => format!("pub fn {a}_{b}(&self, {c}: &str) -> Result<{a}, Error> {{\n"),
                1 => format!("    let {a} = self.{b}.get({c}).ok_or(Error::{a})?; // {n}\n"),
                2 => format!("    if {a}.is_empty() {{ return Err(Error::{b}({n})); }}\n"),
                _ => "}\n".to_string(),
            });
            line += 1;
        }
        out
    }
}

/// Plausible usage of one call with about `input` input tokens.
pub(super) fn usage(f: &mut Filler, input: u64) -> Usage {
    Usage::new(
        input + f.next() % 4000,
        200 + f.next() % 1500,
        f.next() % 20000,
        0,
    )
}
