//! `braincode <words…>` whose first word is not a command: a task, as with `braincode run`
//! — unless it is a single word that reads as a mistyped command (`braincode replya`).

/// The command `word` is most likely a typo of, if it is one: the closest of `commands` at
/// most two edits away (a swap of two neighbours is one edit), and at most a third of the
/// word, so that short words (`hi`, `fix`) stay tasks.
pub fn typo_of<'a>(word: &str, commands: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let length = word.chars().count();
    let allowed = (length / 3).min(2);
    commands
        .into_iter()
        .map(|command| (braincode_protocol::edit_distance(word, command), command))
        .filter(|(distance, _)| *distance <= allowed)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, command)| command)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMANDS: [&str; 6] = ["run", "replay", "sessions", "doctor", "tui", "trust"];

    #[test]
    fn mistyped_commands_are_found_and_words_are_not() {
        assert_eq!(typo_of("replya", COMMANDS), Some("replay"));
        assert_eq!(typo_of("docter", COMMANDS), Some("doctor"));
        assert_eq!(typo_of("sesions", COMMANDS), Some("sessions"));
        assert_eq!(typo_of("Doctor", COMMANDS), Some("doctor"));
        for word in ["explain", "hi", "fix", "test", "hello", "refactor"] {
            assert_eq!(typo_of(word, COMMANDS), None, "{word}");
        }
    }

    #[test]
    fn a_swap_is_one_edit() {
        use braincode_protocol::edit_distance;
        assert_eq!(edit_distance("replya", "replay"), 1);
        assert_eq!(edit_distance("", "run"), 3);
        assert_eq!(edit_distance("run", "run"), 0);
    }
}
