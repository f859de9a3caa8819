//! From the words of one simple command to the command lines it really runs: wrappers
//! (`sudo`, `env`, `timeout`, `xargs`, …) are peeled off, shells and `eval` hand back their
//! script text for re-parsing, and a few commands are normalized (`rm -fr` → `rm -rf`,
//! `git -C x push` → `git push`, `npm --prefix x publish` → `npm publish`).

use super::normalize::{PM_VALUE_OPTIONS, git_variant, pm_variant, rm_variant};
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
    pub uncertain: Vec<String>,
    /// A shell that reads its script from standard input.
    pub shell_reads_stdin: bool,
}

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "rbash", "yash", "tcsh", "csh",
];
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("rscript", &["-e"]),
    ("osascript", &["-e"]),
    ("tclsh", &["-c"]),
    ("pwsh", &["-c", "-command", "-encodedcommand"]),
    ("powershell", &["-c", "-command", "-encodedcommand"]),
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
    out
}

fn unwrap_into(words: &[Word], out: &mut Unwrapped, depth: usize) {
    if depth > MAX_UNWRAP {
        out.uncertain
            .push("commands are nested too deeply to analyze".to_string());
        return;
    }
    let mut current: Vec<Word> = words.to_vec();
    for _ in 0..MAX_UNWRAP {
        let Some(head) = current.first() else {
            return;
        };
        if head.dynamic {
            out.uncertain.push(format!(
                "the command name `{}` is only known at run time",
                head.text
            ));
            out.forms.push(current);
            return;
        }
        if head.glob {
            out.uncertain.push(format!(
                "the command name `{}` is a glob pattern the shell expands",
                head.text
            ));
        }
        let name = command_basename(&head.text);
        let mut form = current.clone();
        form[0].text.clone_from(&name);
        push_form(out, form);
        let rest = current[1..].to_vec();
        let next = match name.as_str() {
            "env" => env(&rest, out),
            "command" => skip_options(&rest, &[], 0),
            "builtin" | "nohup" | "nocorrect" | "noglob" | "chronic" | "coproc" | "unbuffer"
            | "busybox" | "setsid" | "dbus-run-session" => skip_options(&rest, &[], 0),
            "exec" => skip_options(&rest, &["-a"], 0),
            "time" => skip_options(&rest, &["-f", "-o", "--format", "--output"], 0),
            "nice" => skip_options(&rest, &["-n", "--adjustment"], 0),
            "sudo" => skip_options(
                &rest,
                &[
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
                ],
                0,
            ),
            "doas" => skip_options(&rest, &["-u", "-C"], 0),
            "stdbuf" => skip_options(&rest, &["-i", "-o", "-e"], 0),
            "ionice" => skip_options(&rest, &["-c", "-n", "-p", "-P", "-u"], 0),
            "chroot" => skip_options(&rest, &[], 1),
            "taskset" => skip_options(&rest, &[], 1),
            "caffeinate" => skip_options(&rest, &["-t", "-w"], 0),
            "strace" | "ltrace" => skip_options(
                &rest,
                &[
                    "-o", "-e", "-p", "-s", "-u", "-E", "-a", "-I", "-b", "-P", "-O", "-S", "-X",
                ],
                0,
            ),
            "timeout" => skip_options(&rest, &["-s", "-k", "--signal", "--kill-after"], 1),
            "xargs" => {
                out.uncertain
                    .push("xargs appends arguments read from standard input".to_string());
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
            "flock" => flock(&rest, out),
            "npx" | "bunx" | "pnpx" => npx(&rest, out),
            "npm" | "pnpm" | "yarn" | "bun" => package_manager(&name, &rest, out),
            "git" => {
                if rest.windows(2).any(|pair| {
                    pair[0].text == "-c" && pair[1].text.to_lowercase().starts_with("alias.")
                }) {
                    out.uncertain
                        .push("git is given an alias on the command line".to_string());
                }
                None
            }
            "script" => {
                if let Some(position) = rest
                    .iter()
                    .position(|w| matches!(w.text.as_str(), "-c" | "--command"))
                {
                    nested_from_words(
                        rest.get(position + 1..position + 2).unwrap_or_default(),
                        "script -c",
                        out,
                    );
                } else if let Some(position) = rest.iter().position(|w| {
                    w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c')
                }) {
                    nested_from_words(
                        rest.get(position + 1..position + 2).unwrap_or_default(),
                        "script -c",
                        out,
                    );
                }
                None
            }
            "find" => {
                find_exec(&rest, out, depth);
                None
            }
            "eval" => {
                nested_from_words(&rest, "eval", out);
                None
            }
            "su" => {
                su(&rest, out);
                None
            }
            "trap" => {
                if rest.len() >= 2 && !rest[0].is_option() {
                    nested_from_words(&rest[..1], "trap", out);
                }
                None
            }
            "watch" => {
                if let Some(command) = skip_options(&rest, &["-n", "--interval"], 0) {
                    nested_from_words(&command, "watch", out);
                }
                None
            }
            "alias" => {
                for word in &rest {
                    if let Some((_, value)) = word.text.split_once('=') {
                        if word.dynamic {
                            out.uncertain
                                .push("an alias is defined from run-time text".to_string());
                        } else {
                            out.nested.push(value.to_string());
                        }
                    }
                }
                None
            }
            "awk" | "gawk" | "mawk" | "nawk" => {
                if rest.iter().any(|word| word.text.contains("system")) {
                    out.uncertain
                        .push(format!("{name} program text may run commands (system)"));
                }
                None
            }
            _ if SHELLS.contains(&name.as_str()) => {
                shell(&rest, out);
                None
            }
            _ => {
                inline_interpreter(&name, &rest, out);
                None
            }
        };
        match next {
            Some(next) if !next.is_empty() => current = next,
            _ => return,
        }
    }
    out.uncertain
        .push("too many wrapper commands to analyze".to_string());
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
            break;
        }
        let text = word.text.as_str();
        if text == "--" {
            index += 1;
            break;
        }
        if matches!(text, "-S" | "--split-string") || text.starts_with("--split-string=") {
            let (value, used) = match text.split_once('=') {
                Some((_, value)) => (Some(value.to_string()), 1),
                None => (rest.get(index + 1).map(|w| w.text.clone()), 2),
            };
            let mut script = value.unwrap_or_default();
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
        if is_assignment(text) {
            index += 1;
            continue;
        }
        break;
    }
    rest.get(index..).map(<[Word]>::to_vec)
}

fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn flock(rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
    if let Some(position) = rest
        .iter()
        .position(|w| matches!(w.text.as_str(), "-c" | "--command"))
    {
        nested_from_words(
            rest.get(position + 1..position + 2).unwrap_or_default(),
            "flock -c",
            out,
        );
        return None;
    }
    skip_options(rest, &["-w", "--timeout", "-E", "--conflict-exit-code"], 1)
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
        out.uncertain
            .push("inline bun code is not analyzed".to_string());
        return None;
    }
    let after = skip_options(rest, PM_VALUE_OPTIONS, 0)?;
    let sub = after.first()?;
    if matches!(sub.text.to_lowercase().as_str(), "exec" | "dlx" | "x") {
        return skip_options(&after[1..], PM_VALUE_OPTIONS, 0);
    }
    None
}

fn nested_from_words(words: &[Word], what: &str, out: &mut Unwrapped) {
    if words.is_empty() {
        return;
    }
    if words.iter().any(|w| w.dynamic) {
        out.uncertain
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
            out.uncertain
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
            index += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
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
            Some(word) => out.uncertain.push(format!(
                "the shell runs `{}`, only known at run time",
                word.text
            )),
            None => out
                .uncertain
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
        if matches!(text, "-c" | "--command") {
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

fn inline_interpreter(name: &str, rest: &[Word], out: &mut Unwrapped) {
    let family = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let Some((_, flags)) = INTERPRETERS.iter().find(|(n, _)| *n == family) else {
        return;
    };
    let inline = rest.iter().any(|word| {
        let lower = word.text.to_lowercase();
        flags.contains(&lower.as_str())
            || (family == "python"
                && lower.starts_with('-')
                && !lower.starts_with("--")
                && lower.ends_with('c'))
    });
    if inline {
        out.uncertain
            .push(format!("inline {family} code is not analyzed"));
    }
}

fn find_exec(rest: &[Word], out: &mut Unwrapped, depth: usize) {
    let mut index = 0;
    while index < rest.len() {
        if matches!(
            rest[index].text.as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        ) {
            let start = index + 1;
            let mut end = start;
            while end < rest.len() && !matches!(rest[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            unwrap_into(&rest[start..end], out, depth + 1);
            index = end;
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
        assert!(!out.uncertain.is_empty());
    }
}
