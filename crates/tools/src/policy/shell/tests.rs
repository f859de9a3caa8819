use super::*;
use crate::policy::words::display_words;

fn displays(script: &str) -> Vec<String> {
    analyze(script)
        .commands
        .into_iter()
        .flat_map(|c| c.forms)
        .map(|f| display_words(&f).to_lowercase())
        .collect()
}

#[test]
fn finds_commands_everywhere() {
    for script in [
        "a; git push",
        "a&&git push",
        "echo \"$(git push)\"",
        "echo `git push`",
        "sh -c \"git push\"",
        "g\"\"it push",
        "\\git push",
        "$'\\x67it' push",
        "a=git; $a push",
        "export a=git; ${a} push",
        "bash <<EOF\ngit push\nEOF",
        "sh <<< 'git push'",
        "diff <(git push) x",
        "f() { git push; }",
        "case x in a) git push;; esac",
        "git {push,status}",
        "find . -exec git push \\;",
    ] {
        assert!(
            displays(script).iter().any(|d| d.starts_with("git push")),
            "{script}: {:?}",
            displays(script)
        );
    }
}

#[test]
fn records_uncertainty() {
    for script in [
        "$CMD push",
        "eval $x",
        "echo x | sh",
        "git push (",
        "python3 -c 'x'",
    ] {
        assert!(!analyze(script).is_analysable(), "{script}");
    }
    for script in [
        "git status",
        "echo \"git push is denied\"",
        "ls 2>/dev/null | head -5",
    ] {
        assert!(
            analyze(script).is_analysable(),
            "{script}: {:?}",
            analyze(script).unanalysable
        );
    }
}

#[test]
fn write_paths_follow_cd() {
    let analysis = analyze("cd src && echo x > auth/a.ts; (cd /tmp; echo y > b) ; tee c < d 2>&1");
    assert_eq!(
        analysis.write_paths,
        vec!["src/auth/a.ts", "/tmp/b", "src/c"]
    );
}
