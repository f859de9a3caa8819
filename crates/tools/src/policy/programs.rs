//! Programs whose argument is itself a program: `sed` scripts (the `e` command and `w` files),
//! `awk` programs (`system`, pipes, output files) and interpreters given inline code or
//! reading their code from standard input. What they run is not shell text the policy can
//! parse, so they are unanalysable.

use super::words::Word;

/// What a `sed` command line does.
#[derive(Debug, Default)]
pub struct SedInvocation {
    /// `-i`/`--in-place`: the input files are rewritten.
    pub in_place: bool,
    /// Input files.
    pub files: Vec<Word>,
    /// Files the script writes (`w file`, `s/…/…/w file`).
    pub write_files: Vec<Word>,
    /// Why what sed does is not fully known.
    pub unanalysable: Vec<String>,
}

/// Reads a `sed` command line (GNU and BSD options).
pub fn sed_invocation(args: &[Word]) -> SedInvocation {
    let mut out = SedInvocation::default();
    let mut scripts: Vec<Word> = Vec::new();
    let mut operands: Vec<Word> = Vec::new();
    let mut script_file = false;
    let mut index = 0;
    let mut only_operands = false;
    while let Some(word) = args.get(index) {
        index += 1;
        let text = word.text.as_str();
        if only_operands || word.dynamic || !text.starts_with('-') || text == "-" {
            operands.push(word.clone());
            continue;
        }
        if text == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            match name {
                "in-place" => out.in_place = true,
                "expression" => {
                    let script = value
                        .map(Word::literal)
                        .or_else(|| args.get(index).cloned());
                    if value_was_next(long) {
                        index += 1;
                    }
                    scripts.extend(script);
                }
                "file" => {
                    script_file = true;
                    if value_was_next(long) {
                        index += 1;
                    }
                }
                "line-length" if value_was_next(long) => index += 1,
                _ => {}
            }
            continue;
        }
        let letters: Vec<char> = text[1..].chars().collect();
        for (position, letter) in letters.iter().enumerate() {
            let rest: String = letters[position + 1..].iter().collect();
            match letter {
                // `-i.bak`: the rest of the cluster is a backup suffix.
                'i' => {
                    out.in_place = true;
                    break;
                }
                'e' | 'f' | 'l' => {
                    let value = if rest.is_empty() {
                        index += 1;
                        args.get(index - 1).cloned()
                    } else {
                        Some(Word::literal(rest))
                    };
                    match letter {
                        'e' => scripts.extend(value),
                        'f' => script_file = true,
                        _ => {}
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if scripts.is_empty() && !script_file && !operands.is_empty() {
        scripts.push(operands.remove(0));
    }
    out.files = operands;
    if script_file {
        out.unanalysable
            .push("sed reads its script from a file (-f)".to_string());
    }
    for script in &scripts {
        if script.dynamic {
            out.unanalysable
                .push("the sed script is only known at run time".to_string());
            continue;
        }
        match scan_sed_script(&script.text) {
            Some(scan) => {
                if scan.executes {
                    out.unanalysable
                        .push("the sed script runs commands (the `e` command or flag)".to_string());
                }
                for file in scan.writes {
                    if !matches!(file.as_str(), "/dev/stdout" | "/dev/stderr") {
                        out.write_files.push(Word::literal(file));
                    }
                }
            }
            None => out
                .unanalysable
                .push("the sed script could not be analysed".to_string()),
        }
    }
    out
}

fn value_was_next(long: &str) -> bool {
    !long.contains('=')
}

#[derive(Debug, Default)]
struct SedScan {
    executes: bool,
    writes: Vec<String>,
}

/// Reads a sed script command by command; `None` when it cannot be followed.
fn scan_sed_script(script: &str) -> Option<SedScan> {
    let chars: Vec<char> = script.chars().collect();
    let mut scan = SedScan::default();
    let mut i = 0;
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
        chars[start..*i]
            .iter()
            .collect::<String>()
            .trim()
            .to_string()
    };
    // Skips a delimited part (`/re/`, or `\cREc`); returns false when unterminated.
    let skip_delimited = |i: &mut usize, delimiter: char| -> bool {
        while *i < chars.len() {
            match chars[*i] {
                '\\' => *i += 2,
                c if c == delimiter => {
                    *i += 1;
                    return true;
                }
                '\n' if delimiter != '\n' => return false,
                _ => *i += 1,
            }
        }
        false
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ';' || c == '}' || c == '{' || c == '!' {
            i += 1;
            continue;
        }
        // Addresses.
        if c.is_ascii_digit() || c == '$' || c == ',' || c == '~' || c == '+' {
            i += 1;
            continue;
        }
        if c == '/' {
            i += 1;
            if !skip_delimited(&mut i, '/') {
                return None;
            }
            while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                i += 1;
            }
            continue;
        }
        if c == '\\' {
            let delimiter = *chars.get(i + 1)?;
            i += 2;
            if !skip_delimited(&mut i, delimiter) {
                return None;
            }
            continue;
        }
        i += 1;
        match c {
            '#' | ':' | 'b' | 't' | 'T' | 'a' | 'i' | 'c' | 'r' | 'R' | 'q' | 'Q' | 'l' | 'L'
            | 'v' => {
                // Text, a label, a file to read or a number: up to the end of the line (`a`,
                // `i` and `c` texts may continue with a backslash).
                loop {
                    let line = rest_of_line(&mut i);
                    if matches!(c, 'a' | 'i' | 'c') && line.ends_with('\\') && i < chars.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'w' | 'W' => scan.writes.push(rest_of_line(&mut i)),
            'e' => {
                scan.executes = true;
                rest_of_line(&mut i);
            }
            's' | 'y' => {
                let delimiter = *chars.get(i)?;
                if delimiter == '\n' || delimiter == '\\' {
                    return None;
                }
                i += 1;
                for _ in 0..2 {
                    if !skip_delimited(&mut i, delimiter) {
                        return None;
                    }
                }
                if c == 's' {
                    while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                        match chars[i] {
                            'e' => {
                                scan.executes = true;
                                i += 1;
                            }
                            'w' => {
                                i += 1;
                                scan.writes.push(rest_of_line(&mut i));
                            }
                            _ => i += 1,
                        }
                    }
                }
            }
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            _ => return None,
        }
    }
    Some(scan)
}

/// Why an `awk` command line runs or writes things the policy cannot see, if it does.
pub fn awk_unanalysable(name: &str, args: &[Word]) -> Option<String> {
    let mut index = 0;
    let mut program: Option<&Word> = None;
    while let Some(word) = args.get(index) {
        index += 1;
        let text = word.text.as_str();
        if word.dynamic {
            return Some(format!("the {name} program is only known at run time"));
        }
        match text {
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec" => {
                return Some(format!("{name} reads program text from a file"));
            }
            "-v" | "-F" | "--assign" | "--field-separator" => index += 1,
            "-e" | "--source" => {
                program = args.get(index);
                index += 1;
            }
            "--" => {
                program = program.or(args.get(index));
                break;
            }
            _ if text.starts_with('-') && text.len() > 1 => {
                if text.starts_with("-f") || text.starts_with("--file=") {
                    return Some(format!("{name} reads program text from a file"));
                }
            }
            _ => {
                program = program.or(Some(word));
                break;
            }
        }
    }
    let program = program?.text.as_str();
    if program.contains("system") || program.contains('|') {
        return Some(format!(
            "the {name} program runs commands (system or a pipe)"
        ));
    }
    if program.contains("print") && program.contains('>') {
        return Some(format!("the {name} program may write files (print >)"));
    }
    None
}

/// Interpreters: inline-code options, and options that take a value.
const INTERPRETERS: &[(&str, &[&str], &[&str])] = &[
    (
        "python",
        &["-c"],
        &["-W", "-X", "-m", "--check-hash-based-pycs"],
    ),
    ("pypy", &["-c"], &["-W", "-X", "-m"]),
    (
        "node",
        &["-e", "--eval", "-p", "--print"],
        &[
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "-C",
            "--conditions",
            "--input-type",
            "--env-file",
        ],
    ),
    (
        "nodejs",
        &["-e", "--eval", "-p", "--print"],
        &["-r", "--require", "--import", "--loader"],
    ),
    ("perl", &["-e", "-E"], &["-I", "-M", "-m", "-x", "-l", "-0"]),
    ("ruby", &["-e"], &["-I", "-r", "-C", "-E", "-x"]),
    ("php", &["-r", "-R", "-B", "-E", "-F"], &["-c", "-d", "-z"]),
    ("lua", &["-e"], &["-l"]),
    ("rscript", &["-e"], &[]),
    ("osascript", &["-e"], &["-l"]),
    ("tclsh", &[], &[]),
    (
        "pwsh",
        &["-c", "-command", "-encodedcommand", "-ec", "-e"],
        &["-f", "-file"],
    ),
    (
        "powershell",
        &["-c", "-command", "-encodedcommand", "-ec", "-e"],
        &["-f", "-file"],
    ),
];

/// Why an interpreter invocation runs code the policy cannot see (inline code, or code read
/// from standard input), if it does.
pub fn interpreter_unanalysable(name: &str, args: &[Word]) -> Option<String> {
    let family = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let (_, inline, valued) = INTERPRETERS.iter().find(|(n, _, _)| *n == family)?;
    let mut index = 0;
    while let Some(word) = args.get(index) {
        index += 1;
        let lower = word.text.to_lowercase();
        if word.dynamic {
            return Some(format!(
                "{family} is given an argument only known at run time"
            ));
        }
        if lower == "-" || lower == "/dev/stdin" {
            return Some(format!("{family} reads its program from standard input"));
        }
        if !lower.starts_with('-') || lower == "--" {
            // The script file: code the policy does not read, like any project code.
            return None;
        }
        if inline.contains(&lower.as_str()) || lower.starts_with("--eval=") {
            return Some(format!("inline {family} code is not analysed"));
        }
        let clustered_inline = match family {
            "python" | "pypy" => !lower.starts_with("--") && lower.ends_with('c'),
            "perl" | "ruby" => !lower.starts_with("--") && lower.contains('e'),
            _ => false,
        };
        if clustered_inline {
            return Some(format!("inline {family} code is not analysed"));
        }
        if family.starts_with("python") && lower == "-m" {
            return None;
        }
        if valued.contains(&word.text.as_str()) {
            index += 1;
        }
    }
    Some(format!(
        "{family} without a script reads its program from standard input"
    ))
}
