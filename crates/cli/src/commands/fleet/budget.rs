//! `fleet budget`: the fleet's and the submitters' token and cost budgets.

use std::process::ExitCode;

use braincode_fleet::Fleet;

#[derive(Debug, clap::Args)]
pub(super) struct BudgetArgs {
    /// Tokens all runs (or the submitter's runs) may use in all.
    #[arg(long, value_name = "TOKENS")]
    tokens: Option<u64>,
    /// Tokens one run may reserve when its task sets no maxTokens (default: all that is left).
    #[arg(long, value_name = "TOKENS", requires = "tokens")]
    per_task_tokens: Option<u64>,
    /// US dollars all runs (or the submitter's runs) may cost in all, priced by each worker's
    /// models.json.
    #[arg(long, value_name = "USD", value_parser = crate::commands::run::parse_usd)]
    usd: Option<f64>,
    /// US dollars one run may reserve when its task sets no maxCost.
    #[arg(long, value_name = "USD", requires = "usd", value_parser = crate::commands::run::parse_usd)]
    per_task_usd: Option<f64>,
    /// The submitter's budget instead of the fleet's.
    #[arg(long, value_name = "NAME")]
    submitter: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn micro(usd: f64) -> u64 {
    (usd * 1e6).round() as u64
}

/// Shows the budgets, or sets one.
pub(super) async fn run(fleet: &Fleet, args: &BudgetArgs) -> anyhow::Result<ExitCode> {
    use braincode_fleet::budget::{self, Meter};
    fn line(key: &str, what: &str, meter: &Meter, show: &dyn Fn(u64) -> String) -> String {
        format!(
            "{key:<24} {what:<7} {:>12} limit  {:>12} used  {:>12} reserved by {} run(s)  {:>12} available",
            show(meter.limit),
            show(meter.used),
            show(meter.reserved.values().sum::<u64>()),
            meter.reserved.len(),
            show(meter.available())
        )
    }
    let tokens = |n: u64| n.to_string();
    let dollars = |m: u64| format!("${:.2}", m as f64 / 1e6);
    let print = |key: &str, b: &budget::Budget| {
        if let Some(meter) = &b.tokens {
            println!("{}", line(key, "tokens", meter, &tokens));
        }
        if let Some(meter) = &b.cost_micro_usd {
            println!("{}", line(key, "cost", meter, &dollars));
        }
    };
    if args.tokens.is_some() || args.usd.is_some() {
        let key = args
            .submitter
            .as_deref()
            .map_or_else(|| "fleet".to_string(), budget::submitter_key);
        let set = budget::set(
            fleet,
            &key,
            args.tokens
                .map(|limit| (limit, args.per_task_tokens.unwrap_or(0))),
            args.usd
                .map(|usd| (micro(usd), args.per_task_usd.map_or(0, micro))),
        )
        .await
        .map_err(anyhow::Error::msg)?;
        print(&key, &set);
        return Ok(ExitCode::SUCCESS);
    }
    let budgets = budget::list(fleet).await.map_err(anyhow::Error::msg)?;
    if args.json {
        let map: serde_json::Map<String, serde_json::Value> = budgets
            .into_iter()
            .map(|(key, b)| (key, serde_json::to_value(b).unwrap_or_default()))
            .collect();
        println!("{}", serde_json::to_string_pretty(&map)?);
        return Ok(ExitCode::SUCCESS);
    }
    if budgets.is_empty() {
        println!("no budget: runs are limited only by their own --max-tokens and --max-cost");
    }
    for (key, b) in &budgets {
        print(key, b);
    }
    Ok(ExitCode::SUCCESS)
}
