//! Rules: the defaults every policy starts with, pattern compilation and matching.
//!
//! Command patterns are matched per simple command, word by word: a deny or ask pattern
//! matches when its words appear as consecutive words of any form of a command (so
//! `sudo rm -rf x` matches `rm -rf`, but `echo "git push is denied"` does not match
//! `git push`: the quoted text is one word). Allow patterns are stricter: they must match at
//! the start of the command as written, so `evil --x cargo test` is not allowed by
//! `cargo test`. A pattern with `*` is a glob over the whole command line.
//!
//! The built-in rules are in `defaults`, path rules in `path`, command rules in `command`,
//! and the loose text a deny pattern is searched in when a command cannot be fully analysed
//! in `loose`; their items are re-exported here.

mod command;
mod defaults;
mod loose;
mod path;
mod tool;

pub use command::{CompiledCommandRule, MatchStrength, check_command_pattern};
pub use defaults::{
    BRAINCODE_HOME_REASON, DEFAULT_COMMAND_RULES, DEFAULT_HOME_PATH_RULES, DEFAULT_PATH_RULES,
    default_command_rules, default_path_rules, directory_deny_rule,
};
pub use loose::{loose_text, loose_variants};
pub use path::{CompiledPathRule, check_path_pattern, expand_path_pattern};
pub use tool::{CompiledToolRule, check_tool_pattern};
