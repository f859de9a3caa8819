//! `braincode usage [--since …] [--by day|role|phase|model|project|session] [--recent N]
//! [--json]`: tokens, cost and cache-hit ratio across sessions, from the journals'
//! `token_usage` records, priced with the catalogue's `pricing` (models.json, with built-in
//! prices for the built-in models), and the most recent calls.

use std::process::ExitCode;

use anyhow::Context;
use braincode_config::usage::{UsageCall, UsageGroup, UsageQuery, UsageRow, summarize_usage};
use braincode_config::{Home, load_models};

/// Arguments of `braincode usage`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Prices are US dollars per million tokens, per model in models.json \
(\"pricing\": {\"input\": 3, \"output\": 15, \"cacheRead\": 0.3, \"cacheWrite\": 3.75}); \
calls of a model without a price are counted but not costed, and named below the table. \
The cache-hit ratio is the share of prompt tokens the provider served from its cache \
(cache read / (input + cache read))."
)]
pub struct UsageArgs {
    /// Only calls since then: a date (2026-11-30), a date and time (RFC 3339), or a span
    /// back from now (30m, 12h, 7d).
    #[arg(long, value_name = "WHEN", value_parser = parse_since)]
    pub since: Option<i64>,
    /// Group rows by day (UTC), role, phase (router, support, primary, review, pet), model,
    /// project or session.
    #[arg(long, value_name = "GROUP", default_value = "day", value_parser = parse_group)]
    pub by: UsageGroup,
    /// List the N most recent model calls (0: none).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub recent: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_group(text: &str) -> Result<UsageGroup, String> {
    UsageGroup::parse(text)
        .ok_or_else(|| format!("{text:?} is not a grouping: use {}", UsageGroup::CHOICES))
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
        recent: args.recent,
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
        "cache hit",
        "cost",
    ];
    let mut table: Vec<Vec<String>> = vec![header.map(str::to_string).to_vec()];
    table.extend(summary.rows.iter().map(row));
    table.push(row(&summary.total));
    print_table(&table, Rule::BeforeLast);
    if let Some(ratio) = summary.total.cache_hit_ratio {
        println!(
            "cache hit ratio: {} of prompt tokens served from the provider's cache",
            percent(ratio)
        );
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
    if !summary.recent.is_empty() {
        println!();
        println!("recent calls (newest first)");
        let mut calls = vec![
            [
                "time", "role", "phase", "model", "in", "out", "cached", "cost", "latency",
            ]
            .map(str::to_string)
            .to_vec(),
        ];
        calls.extend(summary.recent.iter().map(call_row));
        print_table(&calls, Rule::None);
    }
    if summary.unreadable_lines > 0 {
        eprintln!(
            "! {} journal line(s) could not be read and were skipped",
            summary.unreadable_lines
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Where a table has a rule line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Above its last row (the total).
    BeforeLast,
    /// Nowhere.
    None,
}

/// Prints rows of cells: the first column left-aligned, the others right-aligned.
fn print_table(table: &[Vec<String>], rule: Rule) {
    let columns = table.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .iter()
                .map(|r| r.get(c).map_or(0, |cell| cell.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, cells) in table.iter().enumerate() {
        if rule == Rule::BeforeLast && i + 1 == table.len() {
            let width = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
            println!("{}", "─".repeat(width));
        }
        let line: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        println!("{}", line.join("  ").trim_end());
    }
}

fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

/// A recent call's cells: local time, role, phase, model, tokens, cost, latency.
fn call_row(call: &UsageCall) -> Vec<String> {
    let time = chrono::DateTime::from_timestamp_millis(call.timestamp).map_or_else(
        || "?".to_string(),
        |t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        },
    );
    vec![
        time,
        call.role.clone().unwrap_or_else(|| "—".into()),
        call.phase.clone().unwrap_or_else(|| "—".into()),
        call.model.clone(),
        call.usage.input.to_string(),
        call.usage.output.to_string(),
        call.usage.cache_read.to_string(),
        call.cost_usd
            .map_or_else(|| "—".into(), braincode_session::report::fmt_cost_fixed),
        call.duration_ms.map_or_else(|| "—".into(), latency),
    ]
}

fn latency(ms: u64) -> String {
    if ms < 1_000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn row(row: &UsageRow) -> Vec<String> {
    let cost = if row.cost_usd == 0.0 && row.unpriced_tokens > 0 {
        "—".to_string()
    } else {
        braincode_session::report::fmt_cost_fixed(row.cost_usd)
    };
    vec![
        row.key.clone(),
        row.calls.to_string(),
        row.usage.input.to_string(),
        row.usage.output.to_string(),
        row.usage.reasoning.to_string(),
        row.usage.cache_read.to_string(),
        row.usage.cache_write.to_string(),
        row.cache_hit_ratio.map_or_else(|| "—".into(), percent),
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
