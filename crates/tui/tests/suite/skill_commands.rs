//! Skills as commands, on real skill files in temp dirs: `/skill` lists the project's and the
//! user's skills, `/skill <id>` shows one, `/<id> <task>` becomes a request with the skill
//! applied, and an unknown id says which skills are close — as the info panel draws it.

use std::path::Path;

use braincode_config::Home;
use braincode_tui::session::draw_info;
use braincode_tui::session::skills::{SkillAction, SkillRequest, load_skills, skill_action};
use braincode_tui::slash::{self, SlashCommand};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

struct Dirs {
    _root: tempfile::TempDir,
    home: Home,
    project: std::path::PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let home_dir = root.path().join("home");
    let project = root.path().join("project");
    let write = |path: &Path, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        &project.join(".agents/skills/review/SKILL.md"),
        "# Review\nRead the diff first.\nName each risk with its file and line.\n",
    );
    write(
        &project.join(".agents/skills/release-notes/SKILL.md"),
        "# Release notes\nOne line per user-visible change.\n",
    );
    write(
        &home_dir.join("skills/docs.md"),
        "# Docs\nKeep examples runnable.\n",
    );
    Dirs {
        home: Home::at(&home_dir),
        project: project.canonicalize().unwrap(),
        _root: root,
    }
}

fn action(dirs: &Dirs, request: SkillRequest<'_>) -> SkillAction {
    skill_action(load_skills(&dirs.home, &dirs.project), request)
}

fn shown(action: SkillAction) -> Vec<String> {
    match action {
        SkillAction::Show(lines) => lines,
        SkillAction::Run(prompt) => panic!("expected lines, got a request:\n{prompt}"),
    }
}

/// The info panel as drawn, with the temp dirs' paths made stable.
fn screen(dirs: &Dirs, lines: &[String]) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 10)).unwrap();
    let lines: Vec<String> = lines
        .iter()
        .map(|line| {
            line.replace(&dirs.project.display().to_string(), "<project>")
                .replace(&dirs.home.root().display().to_string(), "<home>")
        })
        .collect();
    terminal
        .draw(|frame| draw_info(frame, frame.area(), &lines))
        .unwrap();
    terminal.backend().to_string()
}

#[test]
fn skill_lists_the_project_and_user_skills() {
    let dirs = dirs();
    let lines = shown(action(&dirs, SkillRequest::List));
    insta::assert_snapshot!(screen(&dirs, &lines));
}

#[test]
fn skill_with_an_id_shows_its_body() {
    let dirs = dirs();
    let lines = shown(action(
        &dirs,
        SkillRequest::Named {
            id: "review",
            task: None,
        },
    ));
    insta::assert_snapshot!(screen(&dirs, &lines));
}

#[test]
fn a_skill_command_runs_the_task_with_the_skill_applied() {
    let dirs = dirs();
    let SlashCommand::Other { name, args } = slash::parse("/review check src/lib.rs").unwrap()
    else {
        panic!("a skill id is not a command");
    };
    let SkillAction::Run(prompt) = action(
        &dirs,
        SkillRequest::Command {
            name: &name,
            args: &args,
        },
    ) else {
        panic!("/review did not run");
    };
    assert!(
        prompt.starts_with("Use the skill `review` (project skill, "),
        "{prompt}"
    );
    assert!(
        prompt.contains("Name each risk with its file and line."),
        "{prompt}"
    );
    assert!(prompt.ends_with("Task: check src/lib.rs"), "{prompt}");
    // `/skill <id> <task>` is the same request; a user skill says so.
    let SkillAction::Run(same) = action(
        &dirs,
        SkillRequest::Named {
            id: "review",
            task: Some("check src/lib.rs"),
        },
    ) else {
        panic!("/skill review <task> did not run");
    };
    assert_eq!(same, prompt);
    let SkillAction::Run(docs) = action(
        &dirs,
        SkillRequest::Command {
            name: "docs",
            args: "",
        },
    ) else {
        panic!("/docs did not run");
    };
    assert!(docs.contains("(user skill, "), "{docs}");
    assert!(
        docs.ends_with("Task: apply this skill to the current project"),
        "{docs}"
    );
}

#[test]
fn an_unknown_skill_names_the_close_ones_and_the_session_goes_on() {
    let dirs = dirs();
    let typo = shown(action(
        &dirs,
        SkillRequest::Command {
            name: "reveiw",
            args: "check src/lib.rs",
        },
    ));
    let named = shown(action(
        &dirs,
        SkillRequest::Named {
            id: "relese-notes",
            task: Some("for 1.2"),
        },
    ));
    let mut lines = typo;
    lines.push(String::new());
    lines.extend(named);
    insta::assert_snapshot!(screen(&dirs, &lines));
    // A mistyped command is still told apart from a skill.
    let command = shown(action(
        &dirs,
        SkillRequest::Command {
            name: "halp",
            args: "",
        },
    ));
    assert_eq!(
        command,
        ["unknown command /halp: did you mean /help? (type /help for the list)"]
    );
}
