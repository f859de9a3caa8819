//! Checks that make a script unanalysable: bash arithmetic over variables (a variable holding
//! `a[$(cmd)]` runs `cmd` when evaluated), assignments to variables that change what commands
//! do, and the raw bracket depth used to refuse absurd nesting before parsing.

use tree_sitter::Node;

use super::{Walker, clip, named_children, text};
use crate::policy::words::Word;

/// Test operators that evaluate their operands as arithmetic inside `[[ … ]]`.
const ARITHMETIC_TEST_OPERATORS: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// The deepest nesting of `(`, `{` and `[` in the raw text (quotes are not considered: this
/// is a cheap upper bound taken before parsing).
pub(super) fn bracket_depth(src: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for byte in src.bytes() {
        match byte {
            b'(' | b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Why assigning this variable changes what later commands run, if it does.
pub fn dangerous_variable(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let exact: &[(&str, &str)] = &[
        ("IFS", "changes how the shell splits words"),
        ("PATH", "changes which program a command name runs"),
        (
            "BASH_ENV",
            "names a script every non-interactive bash runs first",
        ),
        ("ENV", "names a script every sh runs first"),
        (
            "PROMPT_COMMAND",
            "is a command the shell runs before each prompt",
        ),
        (
            "PS4",
            "is expanded (running substitutions) when tracing is on",
        ),
        ("SHELLOPTS", "changes shell options of child shells"),
        ("BASHOPTS", "changes shell options of child shells"),
        ("HOME", "changes where programs read their configuration"),
        (
            "XDG_CONFIG_HOME",
            "changes where programs read their configuration",
        ),
        (
            "NODE_OPTIONS",
            "makes every node process load code (--require)",
        ),
        ("PYTHONSTARTUP", "makes python run a file"),
        ("PYTHONPATH", "changes which modules python imports"),
        ("PERL5OPT", "adds options (and code) to every perl"),
        ("PERL5LIB", "changes which modules perl loads"),
        ("RUBYOPT", "adds options to every ruby"),
        ("RUSTFLAGS", "changes how rustc builds (linker, plugins)"),
        ("RUSTC", "names the compiler cargo runs"),
        ("RUSTC_WRAPPER", "names a program cargo runs around rustc"),
        (
            "RUSTC_WORKSPACE_WRAPPER",
            "names a program cargo runs around rustc",
        ),
        ("RUSTDOC", "names the program cargo runs for docs"),
        ("CC", "names the C compiler build scripts run"),
        ("CXX", "names the C++ compiler build scripts run"),
        ("AR", "names the archiver build scripts run"),
        ("LD", "names the linker build scripts run"),
        ("PAGER", "names a program run to show output"),
        ("MANPAGER", "names a program run to show output"),
        ("EDITOR", "names a program run to edit text"),
        ("VISUAL", "names a program run to edit text"),
        ("BROWSER", "names a program run to open links"),
        ("SSH_ASKPASS", "names a program run to ask for passwords"),
        ("SUDO_ASKPASS", "names a program run to ask for passwords"),
        ("LESSOPEN", "names a program less runs on each file"),
        ("MAKEFLAGS", "changes what make runs"),
        ("MAKEFILES", "makes make read other makefiles"),
        ("JAVA_TOOL_OPTIONS", "adds options (agents) to every JVM"),
    ];
    if let Some((_, reason)) = exact.iter().find(|(n, _)| *n == upper) {
        return Some(reason);
    }
    let prefixes: &[(&str, &str)] = &[
        (
            "GIT_",
            "changes git's configuration (aliases, hooks, programs it runs)",
        ),
        ("LD_", "changes which libraries programs load"),
        ("DYLD_", "changes which libraries programs load"),
        ("BASH_FUNC_", "defines a shell function in child shells"),
        (
            "NPM_CONFIG_",
            "changes npm's configuration (script-shell, node-options)",
        ),
        ("YARN_", "changes yarn's configuration"),
        ("PNPM_", "changes pnpm's configuration"),
    ];
    if let Some((_, reason)) = prefixes.iter().find(|(p, _)| upper.starts_with(p)) {
        return Some(reason);
    }
    let cargo_harmless = [
        "CARGO_TARGET_DIR",
        "CARGO_TERM_COLOR",
        "CARGO_TERM_VERBOSE",
        "CARGO_TERM_QUIET",
        "CARGO_INCREMENTAL",
        "CARGO_BUILD_JOBS",
    ];
    if upper.starts_with("CARGO_") && !cargo_harmless.contains(&upper.as_str()) {
        return Some("changes cargo's configuration (runners, wrappers, linkers)");
    }
    None
}

/// Whether a literal argument names an array element with an expansion in its subscript
/// (`printf -v 'a[$(cmd)]'`, `unset 'a[$(cmd)]'`): bash evaluates it as arithmetic.
pub(super) fn subscript_word(word: &Word) -> bool {
    let text = word.text.as_str();
    let Some(open) = text.find('[') else {
        return false;
    };
    let name = &text[..open];
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && text[open..].contains(['$', '`'])
}

fn has_variable_text(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_ascii_alphabetic() || c == '$' || c == '`' || c == '_')
}

impl Walker {
    /// `$(( … ))`, `(( … ))`, `for (( … ))` and array subscripts: bash evaluates variable
    /// names recursively there, and a value like `a[$(cmd)]` runs `cmd`.
    pub(super) fn arithmetic(&mut self, node: Node<'_>, src: &str) {
        let checked = if node.kind() == "subscript" {
            node.child_by_field_name("index")
                .map_or("", |index| text(index, src))
        } else {
            text(node, src)
        };
        let body = checked
            .trim_start_matches("$((")
            .trim_start_matches("((")
            .trim_start_matches("for");
        if has_variable_text(body) {
            self.unanalysable(format!(
                "`{}` is bash arithmetic over variables, whose values can run commands (`a[$(…)]`)",
                clip(text(node, src))
            ));
        }
    }

    /// `[[ $x -eq 0 ]]` evaluates `$x` as arithmetic (see [`Self::arithmetic`]).
    pub(super) fn test_command(&mut self, node: Node<'_>, src: &str) {
        let mut stack = vec![node];
        let mut visited = 0;
        while let Some(current) = stack.pop() {
            visited += 1;
            if visited > 256 {
                self.unanalysable("the `[[ … ]]` test is too large to analyse".to_string());
                return;
            }
            if current.kind() == "binary_expression" {
                let operator = current
                    .child_by_field_name("operator")
                    .map(|op| text(op, src))
                    .unwrap_or("");
                if ARITHMETIC_TEST_OPERATORS.contains(&operator) {
                    let literal = |field: &str| {
                        current
                            .child_by_field_name(field)
                            .is_some_and(|side| side.kind() == "number")
                    };
                    if !(literal("left") && literal("right")) {
                        self.unanalysable(format!(
                            "`{}` compares with {operator}, which evaluates its operands as bash arithmetic (a value like `a[$(…)]` runs a command)",
                            clip(text(node, src))
                        ));
                        return;
                    }
                }
            }
            stack.extend(named_children(current));
        }
    }
}
