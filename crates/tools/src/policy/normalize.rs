//! Spelling variants of a command line, so one rule catches every spelling:
//! `rm -fr`/`rm -r -f`/`rm --recursive --force` → `rm -rf`, `git -C dir --no-pager push` →
//! `git push`, `npm --prefix web run-script publish` → `npm run publish`,
//! `cargo +nightly publish` → `cargo publish`.

use super::unwrap::skip_options;
use super::words::Word;

/// Package-manager and cargo options that take a value before the subcommand.
pub(super) const PM_VALUE_OPTIONS: &[&str] = &[
    "--prefix",
    "-C",
    "--dir",
    "--filter",
    "-F",
    "--workspace",
    "-w",
    "--registry",
    "--userconfig",
    "--cache",
    "--cwd",
    "--workspace-dir",
    "-Z",
    "--config",
    "--color",
    "-c",
    "--manifest-path",
];

/// `rm` with both recursive and force flags, in whatever spelling, as `rm -rf <operands>`.
pub(super) fn rm_variant(form: &[Word]) -> Option<Vec<Word>> {
    if form.first()?.text != "rm" {
        return None;
    }
    let (mut recursive, mut force) = (false, false);
    let mut operands = Vec::new();
    let mut options_done = false;
    for word in &form[1..] {
        let text = word.text.as_str();
        if options_done || !word.is_option() {
            operands.push(word.clone());
            continue;
        }
        if text == "--" {
            options_done = true;
        } else if let Some(long) = text.strip_prefix("--") {
            // GNU rm accepts any unambiguous prefix of a long option (`--rec`, `--f`).
            let long = long.to_ascii_lowercase();
            recursive |= !long.is_empty() && "recursive".starts_with(&long);
            force |= !long.is_empty() && "force".starts_with(&long);
        } else {
            recursive |= text.contains(['r', 'R']);
            force |= text.contains('f');
        }
    }
    if !(recursive && force) {
        return None;
    }
    let mut variant = vec![Word::literal("rm"), Word::literal("-rf")];
    variant.extend(operands);
    (variant != form).then_some(variant)
}

/// `git` with its global options (`-C dir`, `-c k=v`, `--no-pager`, …) removed.
pub(super) fn git_variant(form: &[Word]) -> Option<Vec<Word>> {
    if form.first()?.text != "git" {
        return None;
    }
    let rest = skip_options(&form[1..], super::gitcmd::VALUED_GLOBALS, 0)?;
    let mut variant = vec![form[0].clone()];
    variant.extend(rest);
    (variant != form).then_some(variant)
}

/// A package manager or cargo with leading options (and `+toolchain`) removed and
/// `run-script` spelled `run`.
pub(super) fn pm_variant(form: &[Word]) -> Option<Vec<Word>> {
    let name = form.first()?.text.as_str();
    if !matches!(name, "npm" | "pnpm" | "yarn" | "bun" | "cargo") {
        return None;
    }
    let rest: Vec<Word> = form[1..]
        .iter()
        .filter(|w| !(name == "cargo" && w.text.starts_with('+')))
        .cloned()
        .collect();
    let mut rest = skip_options(&rest, PM_VALUE_OPTIONS, 0)?;
    if let Some(first) = rest.first_mut()
        && matches!(
            first.text.to_lowercase().as_str(),
            "run-script" | "rum" | "urn"
        )
    {
        first.text = "run".to_string();
    }
    let mut variant = vec![form[0].clone()];
    variant.extend(rest);
    (variant != form).then_some(variant)
}
