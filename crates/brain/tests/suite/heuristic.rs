//! The deterministic router: the spec's worked example, every keyword family in English
//! and Chinese, support-worker order, todos, dependencies, review and the mode caps.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{default_brain, uncapped_brain};
use braincode_brain::{
    SUPPORT_KEEP_ORDER, Signals, heuristic_route, heuristic_route_uncapped, routing_limits,
};
use braincode_protocol::{Mode, Role};

fn roles(plan: &braincode_brain::RoutingPlan) -> Vec<Role> {
    plan.workers.iter().map(|w| w.role).collect()
}

fn todo_ids(plan: &braincode_brain::RoutingPlan) -> Vec<&str> {
    plan.todos.iter().map(|t| t.id.as_str()).collect()
}

fn edges(plan: &braincode_brain::RoutingPlan) -> Vec<(&str, &str)> {
    plan.dependencies
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect()
}

const WORKED_EXAMPLE: &str = "implement a secure frontend login flow";

#[test]
fn worked_example_uncapped_matches_the_reference() {
    // The reference heuristic ignores mode limits; with a brain whose budget is large enough
    // the capped router gives the same plan, so both are checked.
    for plan in [
        heuristic_route_uncapped(WORKED_EXAMPLE, &default_brain()),
        heuristic_route(WORKED_EXAMPLE, &uncapped_brain(), Mode::Auto),
    ] {
        assert_eq!(plan.primary, Role::Frontend);
        assert_eq!(
            roles(&plan),
            vec![
                Role::Frontend,
                Role::Librarian,
                Role::Backend,
                Role::Security
            ]
        );
        assert_eq!(
            todo_ids(&plan),
            vec![
                "map-context",
                "assess-security",
                "build-backend",
                "build-frontend"
            ]
        );
        assert!(plan.requires_review);
        assert!(!plan.clarification.required);
        assert_eq!(plan.confidence, None);
        assert!(
            plan.reason.contains("Deterministic plan"),
            "{}",
            plan.reason
        );
        assert!(plan.warnings.is_empty());
        assert!(plan.workers[0].goal.starts_with("Complete the request by"));
        assert!(
            plan.workers[1]
                .goal
                .starts_with("Support the primary agent by")
        );
        let e = edges(&plan);
        for expected in [
            ("map-context", "assess-security"),
            ("map-context", "build-backend"),
            ("map-context", "build-frontend"),
            ("assess-security", "build-backend"),
            ("build-backend", "build-frontend"),
            ("assess-security", "build-frontend"),
        ] {
            assert!(e.contains(&expected), "missing {expected:?} in {e:?}");
        }
        assert_eq!(e.len(), 6, "{e:?}");
    }
}

#[test]
fn worked_example_is_capped_in_default_auto_mode() {
    // Default brain, auto: 2 workers (primary + 1 support), 6 todos. Security is kept first.
    let plan = heuristic_route(WORKED_EXAMPLE, &default_brain(), Mode::Auto);
    assert_eq!(roles(&plan), vec![Role::Frontend, Role::Security]);
    assert_eq!(todo_ids(&plan), vec!["assess-security", "build-frontend"]);
    assert_eq!(edges(&plan), vec![("assess-security", "build-frontend")]);
    assert_eq!(plan.warnings.len(), 1);
    assert!(
        plan.warnings[0].contains("librarian") && plan.warnings[0].contains("backend"),
        "{}",
        plan.warnings[0]
    );
    assert!(
        plan.requires_review,
        "review still required; the runtime appends it"
    );

    // Radical with the default brain: 4 workers, so nothing is dropped.
    let radical = heuristic_route(WORKED_EXAMPLE, &default_brain(), Mode::Radical);
    assert_eq!(radical.workers.len(), 4);
    assert!(radical.warnings.is_empty());
}

#[test]
fn capping_drops_support_in_the_documented_order() {
    let prompt =
        "implement the secure login page with a database migration, api tests and a design review";
    let uncapped = heuristic_route_uncapped(prompt, &default_brain());
    assert_eq!(uncapped.primary, Role::Frontend);
    let supports: Vec<Role> = roles(&uncapped)[1..].to_vec();
    assert!(supports.len() >= 6, "{supports:?}");
    let mut brain = default_brain();
    for cap in 1..=6u32 {
        brain.routing.max_parallel_agents = cap;
        let plan = heuristic_route(prompt, &brain, Mode::Auto);
        let limits = routing_limits(&brain.routing, Mode::Auto);
        assert!(plan.workers.len() <= limits.max_worker_agents);
        assert!(plan.todos.len() <= limits.max_todos);
        assert_eq!(plan.primary, Role::Frontend);
        assert_eq!(plan.workers[0].role, Role::Frontend, "primary always kept");
        // The kept supports are the highest ranked ones in SUPPORT_KEEP_ORDER.
        let kept: Vec<Role> = roles(&plan)[1..].to_vec();
        let mut expected: Vec<Role> = SUPPORT_KEEP_ORDER
            .iter()
            .copied()
            .filter(|r| supports.contains(r))
            .take(kept.len())
            .collect();
        expected.sort_by_key(|r| supports.iter().position(|s| s == r));
        assert_eq!(kept, expected, "cap {cap}");
        // No edge refers to a dropped todo.
        for dep in &plan.dependencies {
            assert!(plan.todos.iter().any(|t| t.id == dep.from));
            assert!(plan.todos.iter().any(|t| t.id == dep.to));
        }
    }
}

#[test]
fn primary_rules_in_english_and_chinese() {
    let cases: [(&str, &str, Role); 12] = [
        (
            "generate an image of a red fox",
            "生成一张狐狸的图片",
            Role::ImageMaker,
        ),
        (
            "commit and push the branch",
            "提交并推送这个分支",
            Role::Devops,
        ),
        (
            "the react component looks off",
            "前端组件显示不对",
            Role::Frontend,
        ),
        (
            "the api endpoint returns 500",
            "后端接口返回 500",
            Role::Backend,
        ),
        ("the sql query is slow", "数据库查询很慢", Role::Dba),
        (
            "sketch a wireframe for onboarding",
            "给新手引导做个交互原型",
            Role::Designer,
        ),
        (
            "is there an xss vulnerability",
            "有没有安全漏洞",
            Role::Security,
        ),
        (
            "what is our regression coverage",
            "回归覆盖率是多少",
            Role::Qa,
        ),
        ("audit the last change", "代码审查最近的改动", Role::Review),
        (
            "recap what happened yesterday",
            "总结一下昨天的工作",
            Role::Summarize,
        ),
        ("explain monads", "解释一下单子", Role::Rush),
        ("run the release workflow", "运行发布流水线", Role::Devops),
    ];
    let brain = uncapped_brain();
    for (english, chinese, role) in cases {
        assert_eq!(
            heuristic_route_uncapped(english, &brain).primary,
            role,
            "{english}"
        );
        assert_eq!(
            heuristic_route_uncapped(chinese, &brain).primary,
            role,
            "{chinese}"
        );
    }
}

#[test]
fn the_heuristic_never_makes_oracle_or_librarian_primary() {
    let brain = uncapped_brain();
    for prompt in [
        "think hard about the architecture",
        "where is the config loaded",
        "find the symbol",
    ] {
        let plan = heuristic_route_uncapped(prompt, &brain);
        assert!(
            !matches!(plan.primary, Role::Oracle | Role::Librarian),
            "{prompt}"
        );
    }
}

#[test]
fn image_primary_gets_no_support() {
    let plan = heuristic_route_uncapped(
        "draw a poster for the backend security talk",
        &uncapped_brain(),
    );
    assert_eq!(plan.primary, Role::ImageMaker);
    assert_eq!(roles(&plan), vec![Role::ImageMaker]);
    assert_eq!(todo_ids(&plan), vec!["generate-image"]);
}

#[test]
fn support_workers_follow_the_reference_order() {
    let plan = heuristic_route_uncapped(
        "fix the dashboard: design copy, api server, ui view, sql index, secrets, tests and a code review",
        &uncapped_brain(),
    );
    assert_eq!(plan.primary, Role::Frontend);
    assert_eq!(
        roles(&plan),
        vec![
            Role::Frontend,
            Role::Librarian,
            Role::Designer,
            Role::Backend,
            Role::Dba,
            Role::Security,
            Role::Qa,
            Role::Review,
        ]
    );
    assert_eq!(
        todo_ids(&plan),
        vec![
            "map-context",
            "design-experience",
            "plan-data",
            "assess-security",
            "build-backend",
            "build-frontend",
            "verify-behavior",
            "review-result",
        ]
    );
    let e = edges(&plan);
    for expected in [
        ("design-experience", "build-frontend"),
        ("plan-data", "build-backend"),
        ("build-backend", "verify-behavior"),
        ("build-frontend", "review-result"),
        ("verify-behavior", "build-frontend"),
    ] {
        assert!(e.contains(&expected), "missing {expected:?} in {e:?}");
    }
    // Primary -> support edges are not executable and never appear.
    assert!(!e.contains(&("build-frontend", "verify-behavior")));
}

#[test]
fn review_worker_needs_review_and_edit_wording() {
    let brain = uncapped_brain();
    let with_edit = heuristic_route_uncapped("refactor the api and review it", &brain);
    assert!(with_edit.has_worker(Role::Review));
    // A review that asks for no change is led by the reviewer (the reference let the code
    // domain lead, so "audit the auth code" was planned as a backend change).
    let without_edit = heuristic_route_uncapped("review the api", &brain);
    assert_eq!(without_edit.primary, Role::Review);
    let reviewers = without_edit
        .workers
        .iter()
        .filter(|w| w.role == Role::Review);
    assert_eq!(reviewers.count(), 1, "only the primary reviews");
    assert!(!without_edit.requires_review);
}

#[test]
fn requires_review_follows_the_brain_policy() {
    let mut brain = uncapped_brain();
    assert!(heuristic_route_uncapped("add a login form", &brain).requires_review);
    assert!(heuristic_route_uncapped("修改登录表单", &brain).requires_review);
    brain.routing.require_review_for_file_edits = false;
    assert!(!heuristic_route_uncapped("add a login form", &brain).requires_review);
}

#[test]
fn summary_requests_get_a_report_todo_owned_by_the_primary() {
    let plan = heuristic_route_uncapped("fix the api and write a report", &uncapped_brain());
    assert_eq!(plan.primary, Role::Backend);
    let report = plan.todos.iter().find(|t| t.id == "final-report").unwrap();
    assert_eq!(report.role, Role::Backend);
    assert!(edges(&plan).contains(&("build-backend", "final-report")));
}

#[test]
fn primaries_without_a_fixed_todo_get_a_generated_one() {
    let rush = heuristic_route_uncapped("hello there", &uncapped_brain());
    assert_eq!(rush.primary, Role::Rush);
    assert_eq!(todo_ids(&rush), vec!["todo-01-rush"]);
    let summary = heuristic_route_uncapped("summarize the test coverage", &uncapped_brain());
    assert_eq!(summary.primary, Role::Qa);
    let summarize = heuristic_route_uncapped("summarize yesterday", &uncapped_brain());
    assert_eq!(summarize.primary, Role::Summarize);
    assert_eq!(todo_ids(&summarize), vec!["todo-01-summarize"]);
}

#[test]
fn vague_prompts_carry_a_clarification() {
    let brain = uncapped_brain();
    assert!(
        heuristic_route_uncapped("fix it", &brain)
            .clarification
            .required
    );
    let chinese = heuristic_route_uncapped("改一下", &brain).clarification;
    assert!(chinese.required);
    assert_eq!(chinese.options.len(), 3);
    assert!(
        !heuristic_route_uncapped("fix the login redirect", &brain)
            .clarification
            .required
    );
}

#[test]
fn signals_are_exposed_for_diagnostics() {
    let s = Signals::detect(WORKED_EXAMPLE);
    assert!(s.file_edit && s.frontend && s.backend && s.security && !s.dba);
    assert!(s.has_domain());
}

#[test]
fn worked_example_in_chinese_gives_the_same_plan() {
    let plan = heuristic_route_uncapped("实现一个安全的前端登录流程", &uncapped_brain());
    assert_eq!(plan.primary, Role::Frontend);
    assert_eq!(
        roles(&plan),
        vec![
            Role::Frontend,
            Role::Librarian,
            Role::Backend,
            Role::Security
        ]
    );
    assert_eq!(
        todo_ids(&plan),
        vec![
            "map-context",
            "assess-security",
            "build-backend",
            "build-frontend"
        ]
    );
    assert!(plan.requires_review);
}

#[test]
fn support_roles_are_found_from_chinese_keywords() {
    let plan = heuristic_route_uncapped(
        "修改前端页面：设计文案、后端接口、数据库索引、权限、测试，并做代码审查",
        &uncapped_brain(),
    );
    assert_eq!(plan.primary, Role::Frontend);
    assert_eq!(
        roles(&plan),
        vec![
            Role::Frontend,
            Role::Librarian,
            Role::Designer,
            Role::Backend,
            Role::Dba,
            Role::Security,
            Role::Qa,
            Role::Review,
        ]
    );
}
