//! Git command lines: what makes them unanalysable (configuration given on the command line,
//! a subcommand that is not built in and may be an alias, subcommands and options that run
//! programs) and the configuration file `git config` writes.

use super::unwrap::Unwrapped;
use super::words::Word;

/// Git's built-in subcommands (`git help -a`), minus the ones that exist to run programs,
/// serve the network or print credentials. Anything else may be an alias or a `git-x` program.
pub const GIT_BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "backfill",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fetch",
    "fmt-merge-msg",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "get-tar-commit-id",
    "grep",
    "hash-object",
    "help",
    "index-pack",
    "init",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "pack-refs",
    "prune",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "replay",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-objects",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Global options that take a value (the command normaliser skips the same ones).
pub(super) const VALUED_GLOBALS: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--exec-path",
    "--list-cmds",
    "--attr-source",
];

/// Subcommand options that name a program to run.
const PROGRAM_OPTIONS: &[&str] = &[
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "-x",
    "--extcmd",
    "--tool",
    "-O",
    "--open-files-in-pager",
    "--config",
    "--template",
    "--sendmail-cmd",
];

/// The subcommand position: global options skipped. Returns the index of the subcommand in
/// `rest` (`None`: no subcommand) and problems found among the global options.
fn subcommand(rest: &[Word]) -> (Option<usize>, Vec<String>, Vec<(String, String)>) {
    let mut problems = Vec::new();
    let mut inline_aliases = Vec::new();
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        let text = word.text.as_str();
        if word.dynamic {
            problems.push(format!("git is given `{text}`, only known at run time"));
            return (Some(index), problems, inline_aliases);
        }
        if !text.starts_with('-') {
            return (Some(index), problems, inline_aliases);
        }
        let (name, attached) = match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (text, None),
        };
        let value = if VALUED_GLOBALS.contains(&name) && attached.is_none() {
            index += 1;
            rest.get(index).map(|w| w.text.clone())
        } else {
            attached
        };
        match name {
            "-c" => {
                let setting = value.unwrap_or_default();
                if let Some((key, alias_value)) = setting.split_once('=')
                    && let Some(alias) = key.to_lowercase().strip_prefix("alias.")
                {
                    inline_aliases.push((alias.to_string(), alias_value.to_string()));
                }
                problems.push(format!(
                    "`git -c {setting}` sets configuration (aliases, pagers, hooks run programs)"
                ));
            }
            "--config-env" => problems
                .push("`git --config-env` sets configuration from the environment".to_string()),
            "--exec-path" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
            | "--attr-source" => problems.push(format!(
                "`git {name}` points git at other programs or another repository's configuration"
            )),
            "-C" => {
                let dir = value.unwrap_or_default();
                if dir.starts_with('/') || dir.starts_with('~') || dir.split('/').any(|p| p == "..")
                {
                    problems.push(format!(
                        "`git -C {dir}` runs git in a repository outside the project (its configuration can run programs)"
                    ));
                }
            }
            _ => {}
        }
        index += 1;
    }
    (None, problems, inline_aliases)
}

/// Classifies `git <rest>`: records why it is unanalysable, the alias it may use and the
/// aliases it defines.
pub(super) fn classify(rest: &[Word], out: &mut Unwrapped) {
    let (position, problems, inline_aliases) = subcommand(rest);
    out.unanalysable.extend(problems);
    out.git_alias_inline.extend(inline_aliases);
    let Some(position) = position else {
        return;
    };
    let Some(word) = rest.get(position) else {
        return;
    };
    if word.dynamic {
        return;
    }
    let sub = word.text.to_lowercase();
    let args = rest.get(position + 1..).unwrap_or_default();
    if !GIT_BUILTINS.contains(&sub.as_str()) {
        out.unanalysable.push(format!(
            "`git {sub}` is not a built-in git command: it may be an alias or a git-{sub} program"
        ));
        out.git_alias_use = Some((sub, args.to_vec()));
        return;
    }
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let runs_program = match sub.as_str() {
        "bisect" => texts.first() == Some(&"run"),
        "submodule" => texts.contains(&"foreach"),
        "rebase" => texts
            .iter()
            .any(|t| matches!(*t, "-x" | "--exec") || t.starts_with("--exec=")),
        _ => texts.iter().any(|t| {
            PROGRAM_OPTIONS
                .iter()
                .any(|o| *t == *o || t.starts_with(&format!("{o}=")))
                || (matches!(sub.as_str(), "clone" | "fetch" | "pull") && (*t == "-u"))
                || (sub == "grep" && t.starts_with("-O"))
        }),
    };
    if runs_program {
        out.unanalysable
            .push(format!("`git {sub}` is given a program to run"));
    }
    if sub == "config"
        && let Some(definitions) = config_write(args)
    {
        out.unanalysable.push(
            "`git config` changes git's configuration (aliases, hooks and pagers run programs)"
                .to_string(),
        );
        out.git_alias_definitions.extend(definitions);
    }
}

/// For `git config <args>` that writes: the aliases it defines (empty when none).
fn config_write(args: &[Word]) -> Option<Vec<(String, String)>> {
    const READS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "-l",
        "--list",
        "get",
        "list",
    ];
    const WRITES: &[&str] = &[
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
        "set",
        "unset",
        "rename-section",
        "remove-section",
        "edit",
    ];
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let positional: Vec<&Word> = args
        .iter()
        .filter(|w| !w.text.starts_with('-') && !matches!(w.text.as_str(), "set" | "get"))
        .collect();
    let writes = texts.iter().any(|t| WRITES.contains(t))
        || args.iter().any(|w| w.dynamic)
        || (!texts.iter().any(|t| READS.contains(t)) && positional.len() >= 2);
    if !writes {
        return None;
    }
    let mut definitions = Vec::new();
    if let [key, value, ..] = positional.as_slice()
        && let Some(alias) = key.text.to_lowercase().strip_prefix("alias.")
    {
        definitions.push((alias.to_string(), value.text.clone()));
    }
    Some(definitions)
}

/// The file a `git …` command line's `git config` writes, if it writes one.
pub fn git_config_write(rest: &[Word]) -> Option<Word> {
    let (position, _, _) = subcommand(rest);
    let position = position?;
    if rest.get(position)?.text != "config" {
        return None;
    }
    let args = rest.get(position + 1..).unwrap_or_default();
    config_write(args)?;
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    if let Some(index) = texts.iter().position(|t| matches!(*t, "-f" | "--file")) {
        return args.get(index + 1).cloned();
    }
    if let Some(file) = texts.iter().find_map(|t| t.strip_prefix("--file=")) {
        return Some(Word::literal(file));
    }
    Some(Word::literal(if texts.contains(&"--global") {
        "~/.gitconfig"
    } else if texts.contains(&"--system") {
        "/etc/gitconfig"
    } else {
        ".git/config"
    }))
}
