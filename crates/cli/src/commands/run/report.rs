//! The human run report (`braincode run` without `--json`).

use std::fmt::Write as _;

use braincode_protocol::{FinalReport, Phase, RoutingSource};

/// Compacts a count: 999, 1.2k, 12k, 1.5M.
pub fn compact(count: u64) -> String {
    match count {
        0..=999 => count.to_string(),
        1_000..=9_999 => format!("{:.1}k", count as f64 / 1_000.0),
        10_000..=999_999 => format!("{}k", count / 1_000),
        1_000_000..=9_999_999 => format!("{:.1}M", count as f64 / 1_000_000.0),
        _ => format!("{}M", count / 1_000_000),
    }
}

fn percent(value: f64) -> String {
    format!("{:.0}%", (value * 100.0).clamp(0.0, 100.0))
}

/// Renders the report as fixed-order labelled lines, then the answer.
pub fn format_report(report: &FinalReport) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: &str| {
        let _ = writeln!(out, "{:<9} {value}", format!("{label}:"));
    };
    line(&mut out, "Status", report.status.as_str());
    line(
        &mut out,
        "Task",
        &braincode_context::clip_chars(report.task.trim(), 120).replace('\n', " "),
    );
    line(
        &mut out,
        "Brain",
        &format!(
            "{} ({}) · {}",
            report.brain.name, report.brain.id, report.brain.mode
        ),
    );

    let routing = &report.routing;
    let mut route = format!("{} → {}", routing.source.as_str(), routing.primary_role);
    if let Some(confidence) = routing.confidence {
        let _ = write!(route, " · confidence {}", percent(confidence));
    }
    if let Some(reason) = &routing.fallback_reason {
        let _ = write!(route, " (router not used: {reason})");
    } else if routing.source == RoutingSource::Heuristic
        && let Some(reason) = &routing.reason
    {
        let _ = write!(route, " ({reason})");
    }
    line(&mut out, "Routing", &route);

    if !routing.workers.is_empty() {
        let workers: Vec<String> = routing
            .workers
            .iter()
            .map(|w| {
                let status = w.status.as_deref().unwrap_or("not run");
                match &w.model {
                    Some(model) => format!("{} {status} [{model}]", w.role),
                    None => format!("{} {status}", w.role),
                }
            })
            .collect();
        line(&mut out, "Workers", &workers.join(" · "));
    }

    let patch = match &report.patch {
        Some(patch) if patch.has_patch_activity => {
            let files = patch.changed_files.len();
            match &patch.diff_stats {
                Some(stats) => format!(
                    "{files} file(s), +{} -{}",
                    stats.insertions, stats.deletions
                ),
                None => format!("{files} file(s)"),
            }
        }
        Some(_) => "no patch activity".to_string(),
        None => "not a git repository (changes not tracked)".to_string(),
    };
    line(&mut out, "Patch", &patch);

    if let Some(checks) = &report.checks {
        let mut text = format!("{:?}", checks.status).to_lowercase();
        if let Some(reason) = &checks.reason {
            let _ = write!(text, " ({reason})");
        }
        line(&mut out, "Checks", &text);
    }

    let review = match &report.review {
        Some(review) => match review.confidence {
            Some(c) => format!("{} ({})", review.decision.as_str(), percent(c)),
            None => review.decision.as_str().to_string(),
        },
        None => "not run".to_string(),
    };
    line(&mut out, "Review", &review);

    if let Some(metrics) = &report.metrics {
        let tokens = &metrics.tokens;
        let mut usage = format!("{} tokens", compact(tokens.total.total));
        let phases: Vec<String> = Phase::ALL
            .iter()
            .filter_map(|phase| {
                let u = tokens.by_phase.get(phase.as_str())?;
                (u.total > 0).then(|| format!("{} {}", phase.as_str(), compact(u.total)))
            })
            .collect();
        if !phases.is_empty() {
            let _ = write!(usage, " ({})", phases.join(" · "));
        }
        let _ = write!(usage, " · {} tool call(s)", metrics.tool_calls.total);
        if metrics.tool_calls.failed > 0 {
            let _ = write!(usage, ", {} failed", metrics.tool_calls.failed);
        }
        let _ = write!(usage, " · {:.1}s", metrics.duration_ms as f64 / 1_000.0);
        line(&mut out, "Usage", &usage);
    }
    line(&mut out, "Session", &report.session_id);
    for warning in &report.warnings {
        line(&mut out, "Warning", warning);
    }
    if let Some(error) = &report.error {
        line(&mut out, "Error", error);
    }
    if let Some(clarification) = &report.clarification
        && clarification.required
    {
        let _ = writeln!(out, "\nQuestion: {}", clarification.question);
        for option in &clarification.options {
            let _ = writeln!(out, "  - {}: {}", option.label, option.description);
        }
    }
    let _ = writeln!(out, "\n{}", report.model_summary.trim());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_compacted() {
        assert_eq!(compact(999), "999");
        assert_eq!(compact(1_234), "1.2k");
        assert_eq!(compact(12_345), "12k");
        assert_eq!(compact(1_500_000), "1.5M");
        assert_eq!(compact(25_000_000), "25M");
    }
}
