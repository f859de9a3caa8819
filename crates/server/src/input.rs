//! What a form field may hold, checked on the server whatever the page's script did: a bad
//! value is refused at its field with the reason, never turned into "no value" (which for a
//! budget would remove the limit).
//!
//! The page's script applies the same rules before it sends (assets/app.js, `checkField`);
//! these are the ones that count.

use serde_json::Value;

use crate::i18n::{t, texts, tf};

texts! {
    pub(crate) enum S {
        HowTokens => "write a whole number of tokens such as 50000, 50k or 1.5m, or leave it empty for no limit", "请写整数令牌数，如 50000、50k 或 1.5m，留空表示不限";
        NotTokens => "{0} is not a token count; {1}", "{0} 不是令牌数；{1}";
        TooManyDecimals => "{0} has too many decimals; {1}", "{0} 的小数位太多；{1}";
        TooLarge => "{0} is too large; {1}", "{0} 太大；{1}";
        NotWhole => "{0} is not a whole number of tokens; {1}", "{0} 不是整数令牌数；{1}";
        ZeroTokens => "0 tokens would stop every run before it starts; {0}", "0 个令牌会让每次运行在开始前就停止；{0}";
        HowDollars => "write an amount of US dollars such as 5 or 0.50, or leave it empty for no limit", "请写美元金额，如 5 或 0.50，留空表示不限";
        CostPositive => "a cost limit must be more than 0 (got {0}); {1}", "费用上限必须大于 0（得到 {0}）；{1}";
        NotAmount => "{0} is not an amount; {1}", "{0} 不是金额；{1}";
        GiveId => "give the model an id, such as openrouter/qwen3-coder", "请给模型一个 ID，例如 openrouter/qwen3-coder";
        IdComma => "a comma (commas separate the models of a fallback chain)", "逗号（逗号用于分隔回退链中的模型）";
        IdSpace => "{0} (an id is one word, with no spaces)", "{0}（ID 是一个词，不能有空格）";
        IdContains => "{0} contains {1}; write it like provider/model, e.g. openrouter/qwen3-coder", "{0} 包含{1}；请写成 provider/model，例如 openrouter/qwen3-coder";
        HowUrl => "write the endpoint's address, such as https://api.example.com/v1 or http://127.0.0.1:11434/v1", "请写端点地址，例如 https://api.example.com/v1 或 http://127.0.0.1:11434/v1";
        NotUrl => "{0} is not a URL; {1}", "{0} 不是 URL；{1}";
        NotHttp => "{0} is not an http or https URL; {1}", "{0} 不是 http 或 https 地址；{1}";
        NoHost => "{0} names no host; {1}", "{0} 没有主机名；{1}";
        IsZero => "{0} is 0; it must be a positive whole number", "{0} 为 0；必须是正整数";
        NotPositive => "{0} is not a {1}; it must be a positive whole number", "{0} 不是有效的{1}；必须是正整数";
        NotPrice => "{0} is not a price; write US dollars per million tokens, 0 or more (e.g. 3 or 0.4)", "{0} 不是价格；请写每百万令牌的美元数，0 或以上（例如 3 或 0.4）";
        ContextWindow => "context window", "上下文窗口";
    }
}

/// A token count as people write it: `50000`, `50k`, `1.5m` (k = 1 000, m = 1 000 000,
/// either case). Empty (or JSON null) is `None`: no limit. Anything else, 0 included, is an
/// error that says what to write.
pub(crate) fn token_count(value: &Value) -> Result<Option<u64>, String> {
    let how = t(S::HowTokens);
    let text = match value {
        Value::Null => return Ok(None),
        Value::String(text) => text.trim().to_string(),
        Value::Number(number) => number.to_string(),
        other => return Err(tf(S::NotTokens, &[other, &how])),
    };
    if text.is_empty() {
        return Ok(None);
    }
    let (digits, scale) = match text.chars().last() {
        Some('k' | 'K') => (&text[..text.len() - 1], 1_000u64),
        Some('m' | 'M') => (&text[..text.len() - 1], 1_000_000u64),
        _ => (text.as_str(), 1u64),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !all_digits(whole) || !all_digits(fraction) {
        return Err(tf(S::NotTokens, &[&format!("{text:?}"), &how]));
    }
    // Exact arithmetic: 1.5m is 15 × 1 000 000 / 10, and must come out whole.
    let denominator = 10u64
        .checked_pow(u32::try_from(fraction.len()).unwrap_or(u32::MAX))
        .ok_or_else(|| tf(S::TooManyDecimals, &[&format!("{text:?}"), &how]))?;
    let mantissa: u64 = format!("{whole}{fraction}")
        .parse()
        .map_err(|_| tf(S::TooLarge, &[&format!("{text:?}"), &how]))?;
    let scaled = mantissa
        .checked_mul(scale)
        .ok_or_else(|| tf(S::TooLarge, &[&format!("{text:?}"), &how]))?;
    if scaled % denominator != 0 {
        return Err(tf(S::NotWhole, &[&format!("{text:?}"), &how]));
    }
    match scaled / denominator {
        0 => Err(tf(S::ZeroTokens, &[&how])),
        count => Ok(Some(count)),
    }
}

/// An amount of US dollars: a number or the text of one, more than 0. Empty (or JSON null)
/// is `None`: no limit.
pub(crate) fn dollars(value: &Value) -> Result<Option<f64>, String> {
    let how = t(S::HowDollars);
    let amount = match value {
        Value::Null => return Ok(None),
        Value::Number(number) => number.as_f64(),
        Value::String(text) if text.trim().is_empty() => return Ok(None),
        Value::String(text) => {
            let text = text.trim().trim_start_matches('$');
            let plain = !text.is_empty()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-');
            plain.then(|| text.parse::<f64>().ok()).flatten()
        }
        _ => None,
    };
    match amount {
        Some(amount) if amount.is_finite() && amount > 0.0 => Ok(Some(amount)),
        Some(amount) if amount.is_finite() => Err(tf(S::CostPositive, &[&amount, &how])),
        _ => Err(tf(S::NotAmount, &[value, &how])),
    }
}

/// Why `id` cannot name a model, if it cannot. models.json asks for a non-empty id (and one
/// of its own, checked against the file); the panel also refuses what would break where ids
/// are written: a space or control character (a command-line argument, a chain in a brain)
/// and a comma (the separator of a fallback chain).
pub(crate) fn model_id_problem(id: &str) -> Option<String> {
    if id.trim().is_empty() {
        return Some(t(S::GiveId).into());
    }
    if let Some(bad) = id
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || *c == ',')
    {
        let what = if bad == ',' {
            t(S::IdComma).to_string()
        } else {
            tf(S::IdSpace, &[&format!("{bad:?}")])
        };
        return Some(tf(S::IdContains, &[&format!("{id:?}"), &what]));
    }
    None
}

/// Why `url` cannot be a model endpoint's base URL, if it cannot: it must be an absolute
/// http or https URL with a host.
pub(crate) fn base_url_problem(url: &str) -> Option<String> {
    let how = t(S::HowUrl);
    let shown = format!("{url:?}");
    let Ok(parsed) = url.parse::<axum::http::Uri>() else {
        return Some(tf(S::NotUrl, &[&shown, &how]));
    };
    let scheme_ok = matches!(parsed.scheme_str(), Some("http" | "https"));
    let host_ok = parsed.host().is_some_and(|host| !host.is_empty());
    if !scheme_ok {
        return Some(tf(S::NotHttp, &[&shown, &how]));
    }
    if !host_ok {
        return Some(tf(S::NoHost, &[&shown, &how]));
    }
    None
}

/// A positive whole number (a context window): a JSON number or the text of one.
pub(crate) fn positive_integer(value: &Value, what: S) -> Result<u64, String> {
    let what = t(what);
    let number = match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.trim().parse::<u64>().ok(),
        _ => None,
    };
    match number {
        Some(0) => Err(tf(S::IsZero, &[&what])),
        Some(number) => Ok(number),
        None => Err(tf(S::NotPositive, &[value, &what])),
    }
}

/// A price in US dollars per million tokens: a number or the text of one, 0 or more.
pub(crate) fn price(value: &Value) -> Result<f64, String> {
    let number = match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok(),
        _ => None,
    };
    match number {
        Some(price) if price.is_finite() && price >= 0.0 => Ok(price),
        _ => Err(tf(S::NotPrice, &[value])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn token_counts_take_k_and_m_and_nothing_else() {
        for (given, expected) in [
            (json!("50k"), Some(50_000)),
            (json!("50K"), Some(50_000)),
            (json!("1.5m"), Some(1_500_000)),
            (json!("2.5k"), Some(2_500)),
            (json!(" 12000 "), Some(12_000)),
            (json!(12000), Some(12_000)),
            (json!(""), None),
            (json!(null), None),
        ] {
            assert_eq!(token_count(&given), Ok(expected), "{given}");
        }
        for bad in [
            json!("abc"),
            json!("50 k"),
            json!("k"),
            json!(".5k"),
            json!("1.2345k"),
            json!("1.5"),
            json!("-5"),
            json!("0"),
            json!("0k"),
            json!("5g"),
            json!("1e6"),
            json!("99999999999999999999"),
            json!(1.5),
            json!(-3),
            json!(true),
        ] {
            let err = token_count(&bad).expect_err(&bad.to_string());
            assert!(err.contains("50k"), "{bad}: {err}");
        }
    }

    #[test]
    fn dollars_are_positive_numbers() {
        assert_eq!(dollars(&json!("5")), Ok(Some(5.0)));
        assert_eq!(dollars(&json!("$0.50")), Ok(Some(0.5)));
        assert_eq!(dollars(&json!(2)), Ok(Some(2.0)));
        assert_eq!(dollars(&json!(" ")), Ok(None));
        for bad in [
            json!("abc"),
            json!("-1"),
            json!("0"),
            json!("1e999"),
            json!([]),
        ] {
            assert!(dollars(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn model_ids_are_one_word_and_base_urls_are_http() {
        assert_eq!(model_id_problem("openrouter/qwen3-coder"), None);
        assert_eq!(model_id_problem("local/smollm2:1.7b"), None);
        for bad in ["", "  ", "bad id with spaces", "a,b", "tab\there"] {
            assert!(model_id_problem(bad).is_some(), "{bad:?}");
        }
        assert_eq!(base_url_problem("https://openrouter.ai/api/v1"), None);
        assert_eq!(base_url_problem("http://127.0.0.1:11434/v1"), None);
        for bad in [
            "not a url",
            "ftp://example.com",
            "https://",
            "/v1",
            "example.com/v1",
        ] {
            assert!(base_url_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn numbers_of_the_model_form() {
        assert_eq!(
            positive_integer(&json!("128000"), S::ContextWindow),
            Ok(128_000)
        );
        assert!(positive_integer(&json!("abc"), S::ContextWindow).is_err());
        assert!(positive_integer(&json!(1.5), S::ContextWindow).is_err());
        assert!(positive_integer(&json!(0), S::ContextWindow).is_err());
        assert_eq!(price(&json!("0.4")), Ok(0.4));
        assert!(price(&json!("-1")).is_err());
        assert!(price(&json!("abc")).is_err());
    }
}
