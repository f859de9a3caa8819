//! From the words of one simple command to the command lines it really runs: wrappers
//! (`sudo`, `env`, `timeout`, `chrt`, `xargs`, …) are peeled off when their syntax is known,
//! shells and `eval` hand back their script text for re-parsing, and a few commands are
//! normalized (`rm -fr` → `rm -rf`, `git -C x push` → `git push`, `npm --prefix x publish` →
//! `npm publish`). Whatever cannot be followed (unknown wrapper options, inline interpreter
//! code, `eval`, `source`, git aliases, …) is recorded as unanalysable.
//!
//! This module holds the result type and the dispatch over command names; the table of
//! wrappers with known syntax is in `wrappers`, the readers of commands that run other
//! command text (`env`, shells, `su`, `find -exec`, …) in `runners`.

mod runners;
mod wrappers;

use super::normalize::{git_variant, pm_variant, rm_variant};
use super::programs::{awk_unanalysable, interpreter_unanalysable};
use super::shell::dangerous_variable as checks_dangerous_variable;
use super::words::Word;
use runners::{env, find, nested_from_words, npx, package_manager, script, shell, su, trap};
use wrappers::{WRAPPERS, wrapped};

pub(super) use runners::skip_options;

/// How many wrappers one command may stack before the analysis gives up.
const MAX_UNWRAP: usize = 16;

/// What one simple command turned out to run.
#[derive(Debug, Default, Clone)]
pub struct Unwrapped {
    /// Every command line the words stand for, outermost first (the command word reduced to
    /// its lower-case basename; other words keep their case). Rules are matched against each.
    pub forms: Vec<Vec<Word>>,
    /// Script text handed to a shell, `eval`, `trap`, … that must be parsed in turn.
    pub nested: Vec<String>,
    /// Why the analysis cannot be sure what runs.
    pub unanalysable: Vec<String>,
    /// A shell that reads its script from standard input.
    pub shell_reads_stdin: bool,
    /// Variables set for the command (`env A=1 cmd`).
    pub env: Vec<(String, String)>,
    /// `git <name> <args>` where `<name>` is not built in (an alias, maybe).
    pub git_alias_use: Option<(String, Vec<Word>)>,
    /// Aliases given on the git command line (`git -c alias.p=push p`).
    pub git_alias_inline: Vec<(String, String)>,
    /// Aliases a `git config alias.x …` defines for later commands.
    pub git_alias_definitions: Vec<(String, String)>,
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "tcsh", "csh",
];

/// Commands that run another command but whose options this analysis does not model: what
/// they run is unanalysable (deny patterns still match their words).
const OPAQUE_RUNNERS: &[&str] = &[
    "ssh",
    "docker",
    "podman",
    "kubectl",
    "nsenter",
    "unshare",
    "firejail",
    "bwrap",
    "systemd-run",
    "runuser",
    "sg",
    "prlimit",
    "numactl",
    "cpulimit",
    "valgrind",
    "gdb",
    "perf",
    "torsocks",
    "proxychains",
    "proxychains4",
    "faketime",
    "fakeroot",
    "eatmydata",
    "xvfb-run",
    "dbus-launch",
    "ssh-agent",
    "sshpass",
    "parallel",
    "entr",
    "rlwrap",
    "expect",
    "tmux",
    "screen",
    "at",
    "batch",
    "crontab",
    "direnv",
    "nix-shell",
    "catchsegv",
    "make",
    "gmake",
    "bmake",
    "just",
];

/// Lower-cased basename of a command word, without a `.exe` suffix.
pub fn command_basename(text: &str) -> String {
    let trimmed = text.trim();
    let base = trimmed.rsplit('/').next().unwrap_or(trimmed).to_lowercase();
    base.strip_suffix(".exe")
        .map(str::to_string)
        .unwrap_or(base)
}

/// Peels wrappers off one simple command.
pub fn unwrap_command(words: &[Word]) -> Unwrapped {
    let mut out = Unwrapped::default();
    unwrap_into(words, &mut out, 0);
    out.unanalysable.dedup();
    out
}

fn unwrap_into(words: &[Word], out: &mut Unwrapped, depth: usize) {
    if depth > MAX_UNWRAP {
        out.unanalysable
            .push("commands are nested too deeply to analyse".to_string());
        return;
    }
    let mut current: Vec<Word> = words.to_vec();
    for _ in 0..MAX_UNWRAP {
        let Some(head) = current.first() else {
            return;
        };
        if head.dynamic {
            out.unanalysable.push(format!(
                "the command name `{}` is only known at run time",
                head.text
            ));
            out.forms.push(current);
            return;
        }
        if head.expanded {
            out.unanalysable.push(format!(
                "the command name `{}` comes from a variable",
                head.text
            ));
        }
        if head.glob {
            out.unanalysable.push(format!(
                "the command name `{}` is a glob pattern the shell expands",
                head.text
            ));
        }
        let name = command_basename(&head.text);
        let mut form = current.clone();
        form[0].text.clone_from(&name);
        push_form(out, form);
        let rest = current[1..].to_vec();
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == name) {
            match wrapped(wrapper, &rest, out) {
                Some(next) if !next.is_empty() => {
                    current = next;
                    continue;
                }
                _ => return,
            }
        }
        let next = match name.as_str() {
            "env" => env(&rest, out),
            "eval" => {
                out.unanalysable
                    .push("`eval` runs text as a new script".to_string());
                nested_from_words(&rest, "eval", out);
                None
            }
            "source" | "." => {
                out.unanalysable.push(format!(
                    "`{name}` runs the commands of a file the policy does not read"
                ));
                None
            }
            "trap" => {
                trap(&rest, out);
                None
            }
            "let" => {
                if rest
                    .iter()
                    .any(|w| w.text.chars().any(|c| c.is_ascii_alphabetic() || c == '$'))
                {
                    out.unanalysable.push(
                        "`let` evaluates bash arithmetic over variables, whose values can run commands"
                            .to_string(),
                    );
                }
                None
            }
            "hash" if rest.iter().any(|w| w.text.starts_with("-p")) => {
                out.unanalysable
                    .push("`hash -p` maps a command name to another program".to_string());
                None
            }
            "enable" => {
                out.unanalysable
                    .push("`enable` loads or turns off shell builtins".to_string());
                None
            }
            "bind" | "complete" | "compgen" => {
                if rest
                    .iter()
                    .any(|w| matches!(w.text.as_str(), "-x" | "-C" | "-F"))
                {
                    out.unanalysable
                        .push(format!("`{name}` registers a command to run later"));
                }
                None
            }
            "declare" | "typeset" | "local" | "export" | "readonly" | "read" | "unset"
            | "printf" | "mapfile" | "readarray" | "getopts" => {
                for word in &rest {
                    let variable = word.text.split('=').next().unwrap_or_default();
                    if let Some(reason) = checks_dangerous_variable(variable) {
                        out.unanalysable
                            .push(format!("`{name}` sets {variable}, which {reason}"));
                    }
                }
                None
            }
            "watch" => {
                out.unanalysable
                    .push("`watch` runs its command repeatedly through a shell".to_string());
                if let Some(command) = skip_options(&rest, &["-n", "--interval", "-d"], 0) {
                    nested_from_words(&command, "watch", out);
                }
                None
            }
            "script" => {
                script(&rest, out);
                None
            }
            "su" => {
                su(&rest, out);
                None
            }
            "xargs" => {
                out.unanalysable.push(
                    "xargs builds its command from text read from standard input".to_string(),
                );
                skip_options(
                    &rest,
                    &[
                        "-I",
                        "-L",
                        "-n",
                        "-P",
                        "-d",
                        "-E",
                        "-s",
                        "-a",
                        "--max-args",
                        "--max-procs",
                        "--delimiter",
                        "--arg-file",
                        "--max-lines",
                        "--replace",
                    ],
                    0,
                )
            }
            "find" => {
                find(&rest, out, depth);
                None
            }
            "alias" => {
                for word in &rest {
                    if let Some((_, value)) = word.text.split_once('=') {
                        if word.dynamic {
                            out.unanalysable
                                .push("an alias is defined from run-time text".to_string());
                        } else {
                            out.nested.push(value.to_string());
                        }
                    }
                }
                None
            }
            "npx" | "bunx" | "pnpx" => {
                out.unanalysable.push(format!(
                    "`{name}` downloads and runs a package the policy does not see"
                ));
                npx(&rest, out)
            }
            "npm" | "pnpm" | "yarn" | "bun" => package_manager(&name, &rest, out),
            "git" => {
                super::gitcmd::classify(&rest, out);
                None
            }
            "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => {
                if let Some(reason) = awk_unanalysable(&name, &rest) {
                    out.unanalysable.push(reason);
                }
                None
            }
            "uv" | "poetry" | "pipenv" | "bundle" | "pdm" | "hatch" | "rye" | "conda" | "mise"
            | "asdf" => {
                if rest
                    .iter()
                    .any(|w| matches!(w.text.as_str(), "run" | "exec"))
                {
                    out.unanalysable.push(format!(
                        "`{name}` runs a command in an environment it sets up"
                    ));
                }
                None
            }
            _ if OPAQUE_RUNNERS.contains(&name.as_str()) => {
                out.unanalysable.push(if name.contains("make") || name == "just" {
                    format!(
                        "`{name}` runs recipes from a file in the repository (with its own variables, shell and includes)"
                    )
                } else {
                    format!("`{name}` runs another command with options the policy does not model")
                });
                None
            }
            _ if SHELLS.contains(&name.as_str()) => {
                shell(&rest, out);
                None
            }
            _ => {
                if let Some(reason) = interpreter_unanalysable(&name, &rest) {
                    out.unanalysable.push(reason);
                }
                None
            }
        };
        match next {
            Some(next) if !next.is_empty() => current = next,
            _ => return,
        }
    }
    out.unanalysable
        .push("too many wrapper commands to analyse".to_string());
}

fn push_form(out: &mut Unwrapped, form: Vec<Word>) {
    let variants = [rm_variant(&form), git_variant(&form), pm_variant(&form)];
    if !out.forms.contains(&form) {
        out.forms.push(form);
    }
    for variant in variants.into_iter().flatten() {
        if !out.forms.contains(&variant) {
            out.forms.push(variant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Word> {
        text.split_whitespace().map(Word::literal).collect()
    }

    fn texts(forms: &[Vec<Word>]) -> Vec<String> {
        forms
            .iter()
            .map(|f| {
                f.iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn peels_wrappers() {
        let out = unwrap_command(&words(
            "sudo -u root env A=1 timeout -s KILL 5 /usr/bin/git push",
        ));
        assert!(
            texts(&out.forms).contains(&"git push".to_string()),
            "{:?}",
            texts(&out.forms)
        );
        let out = unwrap_command(&words("rm -r -f x"));
        assert!(texts(&out.forms).contains(&"rm -rf x".to_string()));
        let out = unwrap_command(&words("git -C repo --no-pager push"));
        assert!(texts(&out.forms).contains(&"git push".to_string()));
        let out = unwrap_command(&words("npm --prefix web run-script publish"));
        assert!(texts(&out.forms).contains(&"npm run publish".to_string()));
        let out = unwrap_command(&words("cargo +nightly publish"));
        assert!(texts(&out.forms).contains(&"cargo publish".to_string()));
    }

    #[test]
    fn shells_hand_back_their_script() {
        let out = unwrap_command(&[
            Word::literal("bash"),
            Word::literal("-lc"),
            Word::literal("git push"),
        ]);
        assert_eq!(out.nested, vec!["git push".to_string()]);
        let out = unwrap_command(&words("sh"));
        assert!(out.shell_reads_stdin);
        let out = unwrap_command(&words("bash script.sh"));
        assert!(!out.shell_reads_stdin && out.nested.is_empty());
        let out = unwrap_command(&[
            Word::literal("python3"),
            Word::literal("-c"),
            Word::literal("x"),
        ]);
        assert!(!out.unanalysable.is_empty());
    }
}
