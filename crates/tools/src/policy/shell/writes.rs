//! Files a command writes by itself, without a redirection: `tee f`, `cp x f`, `sed -i … f`,
//! `dd of=f`, `curl -o f`, `ln -s x f`, `chmod +x f`, … — so path rules and protected paths
//! see them. Commands whose targets depend on data the policy does not read (an archive's
//! member names, a patch file's headers, a server's file name) are unanalysable.

use crate::policy::gitcmd::git_config_write;
use crate::policy::programs::sed_invocation;
use crate::policy::words::Word;

/// What one command form writes.
#[derive(Debug, Default)]
pub(super) struct Effects {
    /// Files written, changed or removed.
    pub paths: Vec<Word>,
    /// Links created (also in `paths`).
    pub links: Vec<Word>,
    /// Why the written files are not all known.
    pub unanalysable: Vec<String>,
}

/// Options and operands of a command line (`--x=v`, `-abc`, `-o v`, `--` handled).
struct Parsed {
    options: Vec<(String, Option<Word>)>,
    operands: Vec<Word>,
}

impl Parsed {
    fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(name, _)| names.contains(&name.as_str()))
    }

    fn values(&self, names: &[&str]) -> Vec<Word> {
        self.options
            .iter()
            .filter(|(name, _)| names.contains(&name.as_str()))
            .filter_map(|(_, value)| value.clone())
            .collect()
    }
}

/// Splits arguments into options and operands; `valued` options take a value (attached,
/// after `=`, or the next word). Short clusters (`-rf`, `-sSLo out`) are split per letter.
fn parse(args: &[Word], valued: &[&str]) -> Parsed {
    let mut parsed = Parsed {
        options: Vec::new(),
        operands: Vec::new(),
    };
    let mut index = 0;
    let mut only_operands = false;
    while let Some(word) = args.get(index) {
        index += 1;
        let text = word.text.as_str();
        if only_operands || word.dynamic || !text.starts_with('-') || text == "-" {
            parsed.operands.push(word.clone());
            continue;
        }
        if text == "--" {
            only_operands = true;
            continue;
        }
        if text.starts_with("--") {
            if let Some((name, value)) = text.split_once('=') {
                parsed
                    .options
                    .push((name.to_string(), Some(Word::literal(value))));
            } else if valued.contains(&text) {
                parsed
                    .options
                    .push((text.to_string(), args.get(index).cloned()));
                index += 1;
            } else {
                parsed.options.push((text.to_string(), None));
            }
            continue;
        }
        let letters: Vec<char> = text[1..].chars().collect();
        for (position, letter) in letters.iter().enumerate() {
            let name = format!("-{letter}");
            if valued.contains(&name.as_str()) {
                let attached: String = letters[position + 1..].iter().collect();
                let value = if attached.is_empty() {
                    index += 1;
                    args.get(index - 1).cloned()
                } else {
                    Some(Word::literal(attached))
                };
                parsed.options.push((name, value));
                break;
            }
            parsed.options.push((name, None));
        }
    }
    parsed
}

fn basename(word: &Word) -> String {
    word.text
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Destination-style commands (`cp`, `mv`, `install`, `ln`): the destination, and the
/// destination joined with each source's name (the destination may be a directory).
fn copy_targets(parsed: &Parsed, effects: &mut Effects, sources_change: bool) -> Vec<Word> {
    let mut targets = Vec::new();
    let (directory, sources): (Option<Word>, Vec<Word>) =
        match parsed.values(&["-t", "--target-directory"]).pop() {
            Some(directory) => (Some(directory), parsed.operands.clone()),
            None => match parsed.operands.split_last() {
                Some((last, rest)) if !rest.is_empty() => (Some(last.clone()), rest.to_vec()),
                Some((last, _)) => (Some(last.clone()), Vec::new()),
                None => (None, Vec::new()),
            },
        };
    if let Some(directory) = directory {
        targets.push(directory.clone());
        for source in &sources {
            if directory.dynamic || source.dynamic {
                continue;
            }
            let name = basename(source);
            if !name.is_empty() {
                let mut joined = directory.clone();
                joined.text = format!("{}/{name}", directory.text.trim_end_matches('/'));
                targets.push(joined);
            }
        }
    }
    if sources_change {
        effects.paths.extend(sources);
    }
    targets
}

/// What a command form writes.
pub(super) fn command_writes(form: &[Word]) -> Effects {
    let mut effects = Effects::default();
    let Some((head, args)) = form.split_first() else {
        return effects;
    };
    let name = head.text.as_str();
    match name {
        "tee" => effects.paths = parse(args, &["--output-error"]).operands,
        "cp" | "mv" | "install" => {
            let parsed = parse(
                args,
                &[
                    "-t",
                    "--target-directory",
                    "-S",
                    "--suffix",
                    "-m",
                    "--mode",
                    "-o",
                    "--owner",
                    "-g",
                    "--group",
                ],
            );
            if name == "install" && parsed.has(&["-d", "--directory"]) {
                effects.paths = parsed.operands;
                return effects;
            }
            let targets = copy_targets(&parsed, &mut effects, name == "mv");
            if name == "cp" && parsed.has(&["-s", "-l", "--symbolic-link", "--link"]) {
                effects.links.extend(targets.iter().cloned());
            }
            effects.paths.extend(targets);
        }
        "ln" => {
            let parsed = parse(args, &["-t", "--target-directory", "-S", "--suffix"]);
            let targets = copy_targets(&parsed, &mut effects, false);
            effects.links.extend(targets.iter().cloned());
            effects.paths.extend(targets);
        }
        "link" => {
            if let Some(target) = args.get(1) {
                effects.links.push(target.clone());
                effects.paths.push(target.clone());
            }
        }
        "dd" => {
            for word in args {
                if let Some(path) = word.text.strip_prefix("of=") {
                    let mut target = word.clone();
                    target.text = path.to_string();
                    effects.paths.push(target);
                }
            }
        }
        "truncate" | "touch" => {
            let parsed = parse(
                args,
                &["-s", "--size", "-r", "--reference", "-d", "--date", "-t"],
            );
            effects.paths = parsed.operands;
        }
        "rm" | "rmdir" | "unlink" | "shred" | "mkdir" | "mkfifo" => {
            let parsed = parse(
                args,
                &["-m", "--mode", "-n", "--iterations", "-s", "--size"],
            );
            effects.paths = parsed.operands;
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
            let valued: &[&str] = if name == "setfacl" {
                &["-m", "-x", "-M", "-X"]
            } else {
                &[]
            };
            let parsed = parse(args, valued);
            let skip_first =
                !parsed.has(&["--reference"]) && name != "setfacl" && !parsed.operands.is_empty();
            effects.paths = parsed.operands[usize::from(skip_first)..].to_vec();
        }
        "sort" => {
            effects.paths = parse(args, &["-o", "--output", "-k", "-t", "-S", "-T"])
                .values(&["-o", "--output"]);
        }
        "sed" | "gsed" => {
            let sed = sed_invocation(args);
            effects.unanalysable.extend(sed.unanalysable);
            effects.paths.extend(sed.write_files);
            if sed.in_place {
                effects.paths.extend(sed.files);
            }
        }
        "curl" => curl(args, &mut effects),
        "wget" => {
            let parsed = parse(
                args,
                &[
                    "-O",
                    "--output-document",
                    "-o",
                    "--output-file",
                    "-a",
                    "--append-output",
                    "-P",
                    "--directory-prefix",
                    "-e",
                    "--execute",
                    "-i",
                    "--input-file",
                    "-U",
                    "--user-agent",
                    "--header",
                    "-t",
                    "-T",
                    "-w",
                ],
            );
            effects.paths = parsed.values(&[
                "-O",
                "--output-document",
                "-o",
                "--output-file",
                "-a",
                "--append-output",
                "-P",
                "--directory-prefix",
            ]);
            if !parsed.has(&["-O", "--output-document", "--spider"]) {
                effects
                    .unanalysable
                    .push("wget writes files named by the server".to_string());
            }
        }
        "rsync" => {
            let parsed = parse(args, &["-e", "--rsh", "--rsync-path", "-f", "--filter"]);
            if parsed.has(&["-e", "--rsh", "--rsync-path"]) {
                effects
                    .unanalysable
                    .push("rsync is given a program to run (-e/--rsync-path)".to_string());
            }
            if let Some(destination) = parsed.operands.last().filter(|_| parsed.operands.len() > 1)
            {
                effects.paths.push(destination.clone());
            }
        }
        "tar" | "bsdtar" | "gtar" => tar(args, &mut effects),
        "unzip" => {
            let parsed = parse(args, &["-d", "-x"]);
            if !parsed.has(&["-l", "-t", "-v", "-p", "-Z", "-z"]) {
                effects.paths.extend(parsed.values(&["-d"]));
                effects
                    .unanalysable
                    .push("unzip writes files named inside the archive".to_string());
            }
        }
        "patch" => {
            let parsed = parse(
                args,
                &[
                    "-o",
                    "--output",
                    "-i",
                    "--input",
                    "-d",
                    "--directory",
                    "-p",
                    "--strip",
                    "-B",
                    "-r",
                    "-z",
                    "-F",
                    "-D",
                ],
            );
            effects.paths = parsed.values(&["-o", "--output"]);
            match parsed.operands.first() {
                Some(file) => effects.paths.push(file.clone()),
                None => effects
                    .unanalysable
                    .push("patch writes the files named inside the patch".to_string()),
            }
        }
        "git" => {
            if let Some(target) = git_config_write(args) {
                effects.paths.push(target);
            }
        }
        _ => {}
    }
    effects
}

fn curl(args: &[Word], effects: &mut Effects) {
    let written = [
        "-o",
        "--output",
        "-D",
        "--dump-header",
        "-c",
        "--cookie-jar",
        "--trace",
        "--trace-ascii",
        "--stderr",
        "--libcurl",
        "--etag-save",
        "--hsts",
        "--alt-svc",
        "--output-dir",
    ];
    let mut valued: Vec<&str> = written.to_vec();
    valued.extend([
        "-d",
        "--data",
        "--data-raw",
        "--data-binary",
        "-H",
        "--header",
        "-X",
        "--request",
        "-u",
        "--user",
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "-F",
        "--form",
        "-T",
        "--upload-file",
        "-x",
        "--proxy",
        "-w",
        "--write-out",
        "-m",
        "--max-time",
        "-r",
        "--range",
        "-E",
        "--cert",
        "-b",
        "--cookie",
        "-K",
        "--config",
        "-C",
        "--continue-at",
        "-z",
        "--time-cond",
        "--url",
        "--retry",
        "--connect-timeout",
        "-U",
        "-Y",
        "-y",
        "-Q",
        "-P",
    ]);
    let parsed = parse(args, &valued);
    effects.paths.extend(parsed.values(&written));
    if parsed.has(&[
        "-O",
        "--remote-name",
        "--remote-name-all",
        "-J",
        "--remote-header-name",
    ]) {
        effects
            .unanalysable
            .push("curl writes a file named by the server (-O)".to_string());
    }
    if parsed.has(&["-K", "--config"]) {
        effects
            .unanalysable
            .push("curl reads its options from a file (-K)".to_string());
    }
}

fn tar(args: &[Word], effects: &mut Effects) {
    let mut words = args.to_vec();
    // Old-style `tar xzf a.tgz`: the first word is a bundle of options without a dash.
    if let Some(first) = words.first_mut()
        && !first.dynamic
        && !first.text.starts_with('-')
        && first.text.chars().all(|c| c.is_ascii_alphabetic())
    {
        first.text = format!("-{}", first.text);
    }
    let parsed = parse(
        &words,
        &[
            "-f",
            "--file",
            "-C",
            "--directory",
            "-I",
            "--use-compress-program",
            "--to-command",
            "-F",
            "--info-script",
            "--new-volume-script",
            "-T",
            "--files-from",
            "-X",
            "--exclude-from",
            "--checkpoint-action",
            "-b",
            "-H",
            "--format",
        ],
    );
    if parsed.has(&[
        "-I",
        "--use-compress-program",
        "--to-command",
        "-F",
        "--info-script",
        "--new-volume-script",
        "--checkpoint-action",
    ]) {
        effects
            .unanalysable
            .push("tar is given a program to run".to_string());
    }
    if parsed.has(&["-x", "--extract", "--get"]) {
        effects.paths.extend(parsed.values(&["-C", "--directory"]));
        effects
            .unanalysable
            .push("tar writes files named inside the archive".to_string());
    } else if parsed.has(&["-c", "--create", "-r", "--append", "-u", "--update"]) {
        effects.paths.extend(parsed.values(&["-f", "--file"]));
    }
}
