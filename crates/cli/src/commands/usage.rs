//! `braincode usage [--since …] [--by day|role|model|project|session] [--json]`: tokens and
//! cost across sessions, from the journals' `token_usage` records, priced with the
//! catalogue's `pricing` (models.json, with built-in prices for the built-in models).

use std::process::ExitCode;

use anyhow::Context;
use braincode_config::usage::{UsageGroup, UsageQuery, UsageRow, summarize_usage};
use braincode_config::{Home, load_models};

/// Arguments of `braincode usage`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prices are US dollars per million tokens, per model in models.json \
(\"pricing\": {\"input\": 3, \"output\": 15, \"cacheRead\": 0.3, \"cacheWrite\": 3.75}); \
calls of a model without a price are counted but not costed, and named below the table."
)]
pub struct UsageArgs {
    /// Only calls since then: a date (2026-11-30), a date and time (RFC 3339), or a span
    /// back from now (30m, 12h, 7d).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    pub since: Option<i64>,
    /// Group rows by day (UTC), role, model, project or session.
    #[arg(long, value_name = "GROUP", default_value = "day", value_parser = parse_group)]
    pub by: UsageGroup,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_group(text: &str) -> Result<UsageGroup, String> {
    UsageGroup::parse(text).ok_or_else(|| {
        format!("{text:?} is not a grouping: use day, role, model, project or session")
    })
}

/// `--since` as Unix ms.
fn parse_since(text: &str) -> Result<i64, String> {
    braincode_config::usage::parse_since(text, chrono::Utc::now().timestamp_millis())
}

/// Runs `braincode usage`.
pub fn execute(args: &UsageArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    let catalog = load_models(&home).context("the model catalogue (for prices)")?;
    let prices = braincode_config::usage::catalog_prices(&catalog);
    let query = UsageQuery {
        since_ms: args.since,
        by: args.by,
    };
    let summary = summarize_usage(&home, &query, &prices)
        .with_context(|| format!("reading {}", home.sessions_dir().display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
        return Ok(ExitCode::SUCCESS);
    }
    if summary.total.calls == 0 {
        println!(
            "no model calls recorded{}",
            if args.since.is_some() {
                " in that time"
            } else {
                ""
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "",
        "calls",
        "input",
        "output",
        "reasoning",
        "cache read",
        "cache write",
        "cost",
    ];
    let mut table: Vec<[String; 8]> = vec![header.map(str::to_string)];
    table.extend(summary.rows.iter().map(row));
    table.push(row(&summary.total));
    let widths: Vec<usize> = (0..8)
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, cells) in table.iter().enumerate() {
        if i + 1 == table.len() {
            println!("{}", "─".repeat(widths.iter().sum::<usize>() + 2 * 7));
        }
        let line: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 0 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        println!("{}", line.join("  "));
    }
    println!(
        "{} session(s), {} journal(s), {:.1} MB read",
        summary.sessions,
        summary.files_read,
        summary.bytes_read as f64 / 1e6
    );
    if !summary.unpriced_models.is_empty() {
        println!(
            "no price for {} ({} tokens not in the cost): add \"pricing\" to their models.json entries",
            summary.unpriced_models.join(", "),
            summary.total.unpriced_tokens
        );
    }
    if summary.unreadable_lines > 0 {
        eprintln!(
            "! {} journal line(s) could not be read and were skipped",
            summary.unreadable_lines
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn row(row: &UsageRow) -> [String; 8] {
    let cost = if row.cost_usd == 0.0 && row.unpriced_tokens > 0 {
        "—".to_string()
    } else {
        braincode_session::report::fmt_cost_fixed(row.cost_usd)
    };
    [
        row.key.clone(),
        row.calls.to_string(),
        row.usage.input.to_string(),
        row.usage.output.to_string(),
        row.usage.reasoning.to_string(),
        row.usage.cache_read.to_string(),
        row.usage.cache_write.to_string(),
        cost,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_dates_times_and_spans() {
        assert_eq!(parse_since("2026-11-30"), Ok(1_795_996_800_000));
        assert_eq!(
            parse_since("2026-11-30T01:00:00Z"),
            Ok(1_795_996_800_000 + 3_600_000)
        );
        let now = chrono::Utc::now().timestamp_millis();
        let week = parse_since("7d").unwrap();
        assert!((now - week - 7 * 86_400_000).abs() < 60_000);
        for bad in ["yesterday", "7x", "d", "", "99999999999999999999d"] {
            assert!(parse_since(bad).is_err(), "{bad}");
        }
    }
}
