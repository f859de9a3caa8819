//! Layout checks run in the browser: no word of a table cell is broken across lines.

use fantoccini::Client;
use serde_json::Value;

/// For every `th` and `td` of the page's tables, each word of its text (split at spaces, and
/// after `-`, `/`, `→` and each CJK character, where a line may break without cutting a word) must sit on one
/// line: the word's range has client rects on a single line. Returns the broken words, each
/// as `"<word>" in <cell text>`.
const BROKEN_WORDS: &str = r#"
const broken = [];
// Chinese (and Japanese) text may break after any character: each is a word of its own.
const breakAfter = /(?<=[-\/→\u3000-\u9fff\uff00-\uffef])/;
for (const cell of document.querySelectorAll("main table th, main table td")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => node.parentElement.closest("svg, select, textarea, input, details:not([open])")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent;
    for (const match of text.matchAll(/\S+/g)) {
      let offset = match.index;
      for (const word of match[0].split(breakAfter)) {
        const range = document.createRange();
        range.setStart(node, offset);
        range.setEnd(node, offset + word.length);
        offset += word.length;
        const lines = new Set();
        for (const rect of range.getClientRects()) {
          if (rect.width > 0 && rect.height > 0) lines.add(Math.round(rect.top));
        }
        if (lines.size > 1) {
          broken.push(`${JSON.stringify(word)} in ${JSON.stringify(cell.textContent.trim().slice(0, 80))}`);
        }
      }
    }
  }
}
return broken;
"#;

/// The words of table cells that the page breaks across lines.
pub async fn broken_words(client: &Client) -> Vec<String> {
    let found = client.execute(BROKEN_WORDS, vec![]).await.unwrap();
    match found {
        Value::Array(words) => words
            .into_iter()
            .map(|w| w.as_str().unwrap_or_default().to_string())
            .collect(),
        other => panic!("the layout check returned {other}"),
    }
}

/// How much of the window's width the page's main column uses, from 0 to 1.
pub async fn main_width_share(client: &Client) -> f64 {
    client
        .execute(
            "return document.querySelector('main').getBoundingClientRect().width / document.documentElement.clientWidth;",
            vec![],
        )
        .await
        .unwrap()
        .as_f64()
        .unwrap()
}

/// Whether the page scrolls sideways (a table wider than the window).
pub async fn overflows_sideways(client: &Client) -> bool {
    client
        .execute(
            "return document.documentElement.scrollWidth > document.documentElement.clientWidth + 1;",
            vec![],
        )
        .await
        .unwrap()
        .as_bool()
        .unwrap()
}
