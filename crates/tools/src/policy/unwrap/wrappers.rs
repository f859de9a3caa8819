//! The wrappers whose syntax is known (`sudo`, `timeout`, `nice`, `chrt`, `flock`, …): their
//! options table, and how the command they run is found after those options.

use super::runners::{after_positional, nested_from_words};
use super::{Unwrapped, Word};

/// A wrapper whose syntax is known: options without a value, options with one, options that
/// mean "no command follows", and how many positional words come before the command.
pub(super) struct Wrapper {
    pub(super) name: &'static str,
    flags: &'static [&'static str],
    valued: &'static [&'static str],
    stops: &'static [&'static str],
    positional: usize,
}

pub(super) const WRAPPERS: &[Wrapper] = &[
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

/// The command a known wrapper runs; unknown options make it unanalysable (it may take a
/// value, and the command would start elsewhere).
pub(super) fn wrapped(wrapper: &Wrapper, rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
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
    after_positional(rest, index, wrapper.positional)
}
