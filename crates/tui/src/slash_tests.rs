use super::*;

#[test]
fn every_table_entry_parses() {
    for info in COMMANDS {
        let line = match info.name {
            "plan" | "team-test" => format!("/{} add a test", info.name),
            "image" => "/image shot.png".to_string(),
            name => format!("/{name}"),
        };
        let command = parse(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(command.name(), info.name);
        for alias in info.aliases {
            let line = match info.name {
                "plan" | "team-test" => format!("/{alias} x"),
                _ => format!("/{alias}"),
            };
            assert_eq!(parse(&line).unwrap().name(), info.name, "{line}");
        }
    }
}

#[test]
fn a_theme_is_dark_light_auto_or_the_other_one() {
    use crate::view::theme::Palette;
    assert_eq!(parse("/theme").unwrap(), SlashCommand::Theme(None));
    assert_eq!(
        parse("/theme auto").unwrap(),
        SlashCommand::Theme(Some(None))
    );
    assert_eq!(
        parse("/theme Light").unwrap(),
        SlashCommand::Theme(Some(Some(Palette::Light)))
    );
    assert!(parse("/theme sepia").unwrap_err().contains("unknown theme"));
}

#[test]
fn mcp_and_hooks_switch_and_trust() {
    assert_eq!(parse("/mcp").unwrap(), SlashCommand::Mcp(McpAction::List));
    assert_eq!(
        parse("/mcp off docs").unwrap(),
        SlashCommand::Mcp(McpAction::Switch {
            name: "docs".into(),
            on: false
        })
    );
    assert_eq!(
        parse("/mcp trust").unwrap(),
        SlashCommand::Mcp(McpAction::Trust)
    );
    assert!(parse("/mcp off").unwrap_err().contains("usage"));
    assert_eq!(
        parse("/hooks trust").unwrap(),
        SlashCommand::Hooks(HooksAction::Trust)
    );
    assert!(parse("/hooks sometimes").unwrap_err().contains("usage"));
    assert_eq!(
        parse("/hooks off 2").unwrap(),
        SlashCommand::Hooks(HooksAction::Switch {
            number: 2,
            switch: braincode_config::HookSwitch::Off
        })
    );
    assert_eq!(
        parse("/hooks on 1").unwrap(),
        SlashCommand::Hooks(HooksAction::Switch {
            number: 1,
            switch: braincode_config::HookSwitch::On
        })
    );
    assert!(
        parse("/hooks off 0")
            .unwrap_err()
            .contains("not a hook number")
    );
    assert!(
        parse("/hooks off two")
            .unwrap_err()
            .contains("not a hook number")
    );
    assert!(parse("/hooks off").unwrap_err().contains("usage"));
}

#[test]
fn a_team_test_needs_its_task() {
    assert_eq!(
        parse("/team-test  say which role you are ").unwrap(),
        SlashCommand::TeamTest {
            task: "say which role you are".into()
        }
    );
    assert!(parse("/team").unwrap_err().contains("needs a task"));
}

#[test]
fn arguments_are_typed() {
    assert_eq!(
        parse("  /plan   fix the login bug  ").unwrap(),
        SlashCommand::Plan {
            task: "fix the login bug".into()
        }
    );
    assert_eq!(
        parse("/mode radical").unwrap(),
        SlashCommand::Mode(Some(Mode::Radical))
    );
    assert_eq!(
        parse("/mode AUTO").unwrap(),
        SlashCommand::Mode(Some(Mode::Auto))
    );
    assert_eq!(parse("/mode").unwrap(), SlashCommand::Mode(None));
    assert_eq!(
        parse("/permissions edits").unwrap(),
        SlashCommand::Permissions(Some(PermissionMode::AllowEdits))
    );
    assert_eq!(
        parse("/permissions read-only").unwrap(),
        SlashCommand::Permissions(Some(PermissionMode::ReadOnly))
    );
    assert_eq!(
        parse("/permissions yes").unwrap(),
        SlashCommand::Permissions(Some(PermissionMode::Yes))
    );
    assert_eq!(
        parse("/brain fast").unwrap(),
        SlashCommand::Brain(Some("fast".into()))
    );
    assert_eq!(
        parse("/resume 3f2a").unwrap(),
        SlashCommand::Resume(Some("3f2a".into()))
    );
    assert_eq!(parse("/resume").unwrap(), SlashCommand::Resume(None));
    assert_eq!(
        parse("/handoff the parser part").unwrap(),
        SlashCommand::Handoff {
            focus: Some("the parser part".into())
        }
    );
    assert_eq!(parse("/exit").unwrap(), SlashCommand::Quit);
}

#[test]
fn bad_arguments_say_the_usage() {
    let err = parse("/plan").unwrap_err();
    assert!(err.contains("usage: /plan <task>"), "{err}");
    let err = parse("/mode fast").unwrap_err();
    assert!(err.contains("unknown mode `fast`"), "{err}");
    assert!(err.contains("[auto|radical]"), "{err}");
    let err = parse("/permissions all").unwrap_err();
    assert!(err.contains("ask|edits|yes|read-only"), "{err}");
    let err = parse("/new now").unwrap_err();
    assert!(err.contains("/new takes no arguments"), "{err}");
    let err = parse("/brain a b").unwrap_err();
    assert!(err.contains("one word"), "{err}");
}

#[test]
fn unknown_commands_name_the_closest() {
    assert_eq!(
        unknown_command("halp"),
        "unknown command /halp: did you mean /help? (type /help for the list)"
    );
    assert!(unknown_command("sesions").contains("/sessions"));
    assert!(unknown_command("perm").contains("/permissions"));
    assert!(unknown_command("Quit").contains("did you mean /quit"));
    let far = unknown_command("zzzzzzzz");
    assert_eq!(far, "unknown command /zzzzzzzz (type /help for the list)");
    // A word that is no command may be a skill: the session decides.
    assert_eq!(
        parse("/review  fix the parser ").unwrap(),
        SlashCommand::Other {
            name: "review".into(),
            args: "fix the parser".into()
        }
    );
    assert_eq!(
        parse("/skill review fix it").unwrap(),
        SlashCommand::Skill {
            id: Some("review".into()),
            task: Some("fix it".into())
        }
    );
    assert_eq!(
        parse("/skills").unwrap(),
        SlashCommand::Skill {
            id: None,
            task: None
        }
    );
    assert!(parse("/").unwrap_err().contains("type a command"));
    assert!(parse("hello").unwrap_err().contains("not a command"));
}

#[test]
fn completions_prefer_prefixes() {
    let names = |p: &str| completions(p).iter().map(|c| c.name).collect::<Vec<_>>();
    assert_eq!(names("p"), vec!["plan", "permissions"]);
    assert_eq!(names("ex"), vec!["quit"]);
    assert_eq!(names("sesn"), vec!["sessions"]);
    assert_eq!(names("").len(), COMMANDS.len());
    assert!(help_lines()[0].starts_with("/help "));
}

#[test]
fn image_needs_a_path_and_keeps_it_whole() {
    assert_eq!(
        parse("/image  \"shots/my shot.png\" ").unwrap(),
        SlashCommand::Image {
            path: "\"shots/my shot.png\"".into()
        }
    );
    let error = parse("/image").unwrap_err();
    assert!(error.starts_with("usage: /image <path>"), "{error}");
}
