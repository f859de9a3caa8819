//! From the words of one simple command to the command lines it really runs: wrappers
//! (`sudo`, `env`, `timeout`, `chrt`, `xargs`, …) are peeled off when their syntax is known,
//! shells and `eval` hand back their script text for re-parsing, and a few commands are
//! normalized (`rm -fr` → `rm -rf`, `git -C x push` → `git push`, `npm --prefix x publish` →
//! `npm publish`). Whatever cannot be followed (unknown wrapper options, inline interpreter
//! code, `eval`, `source`, git aliases, …) is recorded as unanalysable.

use super::normalize::{PM_VALUE_OPTIONS, git_variant, pm_variant, rm_variant};
use super::programs::{awk_unanalysable, interpreter_unanalysable};
use super::shell::dangerous_variable as checks_dangerous_variable;
use super::words::Word;

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

/// A wrapper whose syntax is known: options without a value, options with one, options that
/// mean "no command follows", and how many positional words come before the command.
struct Wrapper {
    name: &'static str,
    flags: &'static [&'static str],
    valued: &'static [&'static str],
    stops: &'static [&'static str],
    positional: usize,
}

const WRAPPERS: &[Wrapper] = &[
    Wrapper {
        name: "nohup",
        flags: &[],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "builtin",
        flags: &[],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "nocorrect",
        flags: &[],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "noglob",
        flags: &[],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "chronic",
        flags: &["-e", "-v"],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "coproc",
        flags: &[],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "dbus-run-session",
        flags: &[],
        valued: &["--config-file", "--dbus-daemon"],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "busybox",
        flags: &[],
        valued: &[],
        stops: &["--list", "--install"],
        positional: 0,
    },
    Wrapper {
        name: "unbuffer",
        flags: &["-p"],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "command",
        flags: &["-p"],
        valued: &[],
        stops: &["-v", "-V"],
        positional: 0,
    },
    Wrapper {
        name: "exec",
        flags: &["-c", "-l"],
        valued: &["-a"],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "time",
        flags: &[
            "-p",
            "-a",
            "--append",
            "-v",
            "--verbose",
            "--portability",
            "-q",
            "--quiet",
        ],
        valued: &["-f", "--format", "-o", "--output"],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "nice",
        flags: &[],
        valued: &["-n", "--adjustment"],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "timeout",
        flags: &["--preserve-status", "--foreground", "-v", "--verbose", "-f"],
        valued: &["-s", "--signal", "-k", "--kill-after"],
        stops: &[],
        positional: 1,
    },
    Wrapper {
        name: "stdbuf",
        flags: &[],
        valued: &["-i", "-o", "-e", "--input", "--output", "--error"],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "setsid",
        flags: &["-c", "-f", "-w", "--ctty", "--fork", "--wait"],
        valued: &[],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "taskset",
        flags: &["-a", "--all-tasks", "-c", "--cpu-list"],
        valued: &[],
        stops: &["-p", "--pid"],
        positional: 1,
    },
    Wrapper {
        name: "ionice",
        flags: &["-t", "--ignore"],
        valued: &["-c", "--class", "-n", "--classdata"],
        stops: &["-p", "--pid", "-P", "--pgid", "-u", "--uid"],
        positional: 0,
    },
    Wrapper {
        name: "chrt",
        flags: &[
            "-a",
            "--all-tasks",
            "-b",
            "--batch",
            "-d",
            "--deadline",
            "-e",
            "--ext",
            "-f",
            "--fifo",
            "-i",
            "--idle",
            "-o",
            "--other",
            "-r",
            "--rr",
            "-R",
            "--reset-on-fork",
            "-v",
            "--verbose",
        ],
        valued: &[
            "-T",
            "--sched-runtime",
            "-P",
            "--sched-period",
            "-D",
            "--sched-deadline",
        ],
        stops: &["-p", "--pid", "-m", "--max"],
        positional: 1,
    },
    Wrapper {
        name: "flock",
        flags: &[
            "-s",
            "--shared",
            "-x",
            "-e",
            "--exclusive",
            "-u",
            "--unlock",
            "-n",
            "--nb",
            "--nonblock",
            "-o",
            "--close",
            "-F",
            "--no-fork",
            "--verbose",
        ],
        valued: &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
        stops: &[],
        positional: 1,
    },
    Wrapper {
        name: "strace",
        flags: &[
            "-f", "-ff", "-F", "-c", "-C", "-w", "-d", "-q", "-qq", "-r", "-t", "-tt", "-ttt",
            "-T", "-v", "-x", "-xx", "-y", "-yy", "-k", "-i", "-n", "-Z", "-z", "-A",
        ],
        valued: &[
            "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-I", "-b", "-P", "-O", "-S", "-X",
        ],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "ltrace",
        flags: &[
            "-f", "-c", "-C", "-i", "-r", "-S", "-t", "-tt", "-ttt", "-T",
        ],
        valued: &[
            "-o", "-e", "-p", "-s", "-u", "-a", "-n", "-l", "-w", "-x", "-L", "-F",
        ],
        stops: &[],
        positional: 0,
    },
    Wrapper {
        name: "doas",
        flags: &["-n", "-L"],
        valued: &["-u", "-C"],
        stops: &["-s"],
        positional: 0,
    },
    Wrapper {
        name: "sudo",
        flags: &[
            "-A",
            "-b",
            "-E",
            "-H",
            "-n",
            "-P",
            "-S",
            "-s",
            "-i",
            "-k",
            "-B",
            "-N",
            "--askpass",
            "--background",
            "--preserve-env",
            "--set-home",
            "--non-interactive",
            "--preserve-groups",
            "--stdin",
            "--shell",
            "--login",
            "--reset-timestamp",
            "--bell",
        ],
        valued: &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-U",
            "-T",
            "-R",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--chdir",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
            "--chroot",
        ],
        stops: &[
            "-e",
            "--edit",
            "-l",
            "--list",
            "-v",
            "--validate",
            "-K",
            "-V",
            "--version",
        ],
        positional: 0,
    },
    Wrapper {
        name: "chroot",
        flags: &["--skip-chdir"],
        valued: &["--userspec", "--groups"],
        stops: &[],
        positional: 1,
    },
    Wrapper {
        name: "caffeinate",
        flags: &["-d", "-i", "-m", "-s", "-u"],
        valued: &["-t", "-w"],
        stops: &[],
        positional: 0,
    },
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

/// The command a known wrapper runs; unknown options make it unanalysable (it may take a
/// value, and the command would start elsewhere).
fn wrapped(wrapper: &Wrapper, rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
    let name = wrapper.name;
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        let text = word.text.as_str();
        if word.dynamic {
            out.unanalysable.push(format!(
                "`{name}` is given `{text}`, only known at run time"
            ));
            break;
        }
        if text == "--" {
            index += 1;
            break;
        }
        if !word.is_option() {
            break;
        }
        if name == "flock" && matches!(text, "-c" | "--command") {
            nested_from_words(
                rest.get(index + 2..index + 3).unwrap_or_default(),
                "flock -c",
                out,
            );
            return None;
        }
        if wrapper.stops.contains(&text) {
            return None;
        }
        let long = text.starts_with("--");
        let (option, attached) = match text.split_once('=') {
            Some((option, _)) if long => (option, true),
            _ => (text, false),
        };
        if wrapper.flags.contains(&option) {
            index += 1;
            continue;
        }
        if wrapper.valued.contains(&option) {
            index += if attached { 1 } else { 2 };
            continue;
        }
        if name == "nice" && text[1..].chars().all(|c| c.is_ascii_digit()) {
            index += 1;
            continue;
        }
        if !long {
            // A cluster (`-oL`, `-c3`): known flags, then maybe one valued option.
            let mut known = true;
            let mut takes_next = false;
            let letters: Vec<char> = text[1..].chars().collect();
            for (position, letter) in letters.iter().enumerate() {
                let short = format!("-{letter}");
                if wrapper.stops.contains(&short.as_str()) {
                    return None;
                }
                if wrapper.flags.contains(&short.as_str()) {
                    continue;
                }
                if wrapper.valued.contains(&short.as_str()) {
                    takes_next = position + 1 == letters.len();
                    break;
                }
                known = false;
                break;
            }
            if known {
                index += if takes_next { 2 } else { 1 };
                continue;
            }
        }
        out.unanalysable.push(format!(
            "`{name}` is given `{text}`, an option the policy does not know (it may take a value)"
        ));
        index += 1;
    }
    let mut skipped = 0;
    while skipped < wrapper.positional && index < rest.len() {
        index += 1;
        skipped += 1;
    }
    rest.get(index..).map(<[Word]>::to_vec)
}

/// Skips leading options (`value_options` take the next word) and then `positional`
/// arguments; returns the wrapped command.
pub(super) fn skip_options(
    rest: &[Word],
    value_options: &[&str],
    positional: usize,
) -> Option<Vec<Word>> {
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        if word.dynamic {
            break;
        }
        if word.text == "--" {
            index += 1;
            break;
        }
        if !word.is_option() {
            break;
        }
        index += if value_options.contains(&word.text.as_str()) {
            2
        } else {
            1
        };
    }
    let mut skipped = 0;
    while skipped < positional && index < rest.len() {
        index += 1;
        skipped += 1;
    }
    rest.get(index..).map(<[Word]>::to_vec)
}

fn env(rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        if word.dynamic {
            out.unanalysable.push(format!(
                "`env` is given `{}`, only known at run time",
                word.text
            ));
            break;
        }
        let text = word.text.as_str();
        if text == "--" {
            index += 1;
            break;
        }
        // `-S 'cmd args'`, `-S'cmd args'`, `-iS…`, `--split-string[=]…`: a command line
        // split by env itself.
        let split = if let Some(value) = text.strip_prefix("--split-string") {
            Some(match value.strip_prefix('=') {
                Some(value) => (value.to_string(), 1),
                None => (
                    rest.get(index + 1)
                        .map(|w| w.text.clone())
                        .unwrap_or_default(),
                    2,
                ),
            })
        } else if !text.starts_with("--") && text.starts_with('-') {
            text.find('S').map(|position| {
                let attached = &text[position + 1..];
                if attached.is_empty() {
                    (
                        rest.get(index + 1)
                            .map(|w| w.text.clone())
                            .unwrap_or_default(),
                        2,
                    )
                } else {
                    (attached.to_string(), 1)
                }
            })
        } else {
            None
        };
        if let Some((mut script, used)) = split {
            out.unanalysable
                .push("`env -S` splits its own command line".to_string());
            let tail = rest.get(index + used..).unwrap_or_default();
            if !tail.is_empty() {
                script.push(' ');
                script.push_str(&super::words::display_words(tail));
            }
            out.nested.push(script);
            return None;
        }
        if word.is_option() {
            index += if matches!(text, "-u" | "--unset" | "-C" | "--chdir") {
                2
            } else {
                1
            };
            continue;
        }
        if let Some((name, value)) = assignment(text) {
            if let Some(reason) = checks_dangerous_variable(name) {
                out.unanalysable
                    .push(format!("it sets {name}, which {reason}"));
            }
            out.env.push((name.to_string(), value.to_string()));
            index += 1;
            continue;
        }
        break;
    }
    rest.get(index..).map(<[Word]>::to_vec)
}

fn assignment(text: &str) -> Option<(&str, &str)> {
    let (name, value) = text.split_once('=')?;
    (!name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit()))
    .then_some((name, value))
}

fn trap(rest: &[Word], out: &mut Unwrapped) {
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        if word.text == "--" {
            index += 1;
            break;
        }
        if !word.is_option() {
            break;
        }
        index += 1;
    }
    let handlers = rest.get(index..).unwrap_or_default();
    if handlers.len() >= 2 {
        out.unanalysable
            .push("`trap` runs its text later, when a signal arrives".to_string());
        nested_from_words(&handlers[..1], "trap", out);
    }
}

fn script(rest: &[Word], out: &mut Unwrapped) {
    let position = rest.iter().position(|w| {
        matches!(w.text.as_str(), "-c" | "--command")
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.ends_with('c'))
    });
    match position {
        Some(position) => nested_from_words(
            rest.get(position + 1..position + 2).unwrap_or_default(),
            "script -c",
            out,
        ),
        None => out.shell_reads_stdin = true,
    }
}

fn npx(rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
    if let Some(position) = rest
        .iter()
        .position(|w| matches!(w.text.as_str(), "-c" | "--call"))
    {
        nested_from_words(
            rest.get(position + 1..position + 2).unwrap_or_default(),
            "npx -c",
            out,
        );
        return None;
    }
    skip_options(rest, &["-p", "--package", "--node-options"], 0)
}

fn package_manager(name: &str, rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
    if name == "bun"
        && rest
            .iter()
            .any(|w| matches!(w.text.as_str(), "-e" | "--eval" | "-p" | "--print"))
    {
        out.unanalysable
            .push("inline bun code is not analysed".to_string());
        return None;
    }
    let after = skip_options(rest, PM_VALUE_OPTIONS, 0)?;
    let sub = after.first()?;
    if matches!(sub.text.to_lowercase().as_str(), "exec" | "dlx" | "x") {
        out.unanalysable.push(format!(
            "`{name} {}` runs a program the policy does not see",
            sub.text
        ));
        return skip_options(&after[1..], PM_VALUE_OPTIONS, 0);
    }
    None
}

fn nested_from_words(words: &[Word], what: &str, out: &mut Unwrapped) {
    if words.is_empty() {
        return;
    }
    if words.iter().any(|w| w.dynamic) {
        out.unanalysable
            .push(format!("{what} runs text only known at run time"));
    }
    let text = words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    out.nested.push(text);
}

fn shell(rest: &[Word], out: &mut Unwrapped) {
    let mut index = 0;
    let mut has_command = false;
    let mut stdin = false;
    while let Some(word) = rest.get(index) {
        if word.dynamic {
            out.unanalysable
                .push("a shell option is only known at run time".to_string());
            return;
        }
        let text = word.text.as_str();
        if text == "--" || text == "-" {
            index += 1;
            break;
        }
        let is_flag = (text.starts_with('-') || text.starts_with('+')) && text.len() > 1;
        if !is_flag {
            break;
        }
        if let Some(long) = text.strip_prefix("--") {
            if long == "command" {
                has_command = true;
            }
            if matches!(long, "rcfile" | "init-file") {
                out.unanalysable
                    .push(format!("the shell runs the file given to --{long}"));
                index += 2;
            } else {
                index += 1;
            }
            continue;
        }
        let flags = &text[1..];
        if flags.contains('c') {
            has_command = true;
        }
        if flags.contains('s') {
            stdin = true;
        }
        index += if flags.contains('o') || flags.contains('O') {
            2
        } else {
            1
        };
    }
    if has_command {
        match rest.get(index) {
            Some(word) if !word.dynamic => out.nested.push(word.text.clone()),
            Some(word) => out.unanalysable.push(format!(
                "the shell runs `{}`, only known at run time",
                word.text
            )),
            None => out
                .unanalysable
                .push("the shell's -c has no command text".to_string()),
        }
    } else if stdin || rest.get(index).is_none() {
        out.shell_reads_stdin = true;
    }
}

fn su(rest: &[Word], out: &mut Unwrapped) {
    let mut index = 0;
    while let Some(word) = rest.get(index) {
        let text = word.text.as_str();
        if let Some(command) = text.strip_prefix("--command=") {
            out.nested.push(command.to_string());
            return;
        }
        if matches!(text, "-c" | "--command" | "--session-command") {
            nested_from_words(
                rest.get(index + 1..index + 2).unwrap_or_default(),
                "su -c",
                out,
            );
            return;
        }
        index += 1;
    }
    out.shell_reads_stdin = true;
}

fn find(rest: &[Word], out: &mut Unwrapped, depth: usize) {
    let mut index = 0;
    while index < rest.len() {
        let text = rest[index].text.as_str();
        if matches!(text, "-exec" | "-execdir" | "-ok" | "-okdir") {
            out.unanalysable.push(format!(
                "`find {text}` runs a command on every file it finds"
            ));
            let start = index + 1;
            let mut end = start;
            while end < rest.len() && !matches!(rest[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            unwrap_into(&rest[start..end], out, depth + 1);
            index = end;
        } else if matches!(
            text,
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls"
        ) {
            out.unanalysable
                .push(format!("`find {text}` changes files it finds"));
        }
        index += 1;
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
