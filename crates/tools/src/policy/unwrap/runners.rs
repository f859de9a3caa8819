//! Readers of commands that run other command text: `env` (assignments, `-S`), shells and
//! `su` (`-c` scripts, standard input), `trap`, `script`, `find -exec`, `npx` and package
//! managers' `exec`/`dlx`, plus the option skipping they and the wrappers share.

use super::{Unwrapped, Word, checks_dangerous_variable, unwrap_into};
use crate::policy::normalize::PM_VALUE_OPTIONS;

/// Skips leading options (`value_options` take the next word) and then `positional`
/// arguments; returns the wrapped command.
pub(in crate::policy) fn skip_options(
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
    after_positional(rest, index, positional)
}

/// The words after `index` once `positional` more words are skipped (fewer when the command
/// line ends first).
pub(super) fn after_positional(
    rest: &[Word],
    mut index: usize,
    positional: usize,
) -> Option<Vec<Word>> {
    let mut skipped = 0;
    while skipped < positional && index < rest.len() {
        index += 1;
        skipped += 1;
    }
    rest.get(index..).map(<[Word]>::to_vec)
}

pub(super) fn env(rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
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
                script.push_str(&crate::policy::words::display_words(tail));
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

pub(super) fn trap(rest: &[Word], out: &mut Unwrapped) {
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

pub(super) fn script(rest: &[Word], out: &mut Unwrapped) {
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

pub(super) fn npx(rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
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

pub(super) fn package_manager(name: &str, rest: &[Word], out: &mut Unwrapped) -> Option<Vec<Word>> {
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

pub(super) fn nested_from_words(words: &[Word], what: &str, out: &mut Unwrapped) {
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

pub(super) fn shell(rest: &[Word], out: &mut Unwrapped) {
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

pub(super) fn su(rest: &[Word], out: &mut Unwrapped) {
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

pub(super) fn find(rest: &[Word], out: &mut Unwrapped, depth: usize) {
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
