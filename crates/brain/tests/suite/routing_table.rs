//! Which prompts take the tool-less conversational fast path and which get read tools and
//! the librarian: greetings and chores that need no repository are answered at once; anything
//! about the code base (explain it, where is, how does, summarise this repo) is looked up.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::default_brain;
use braincode_brain::{heuristic_route, is_fast_path_eligible};
use braincode_protocol::{Mode, Role};

/// Prompts that need no repository: the fast path, no tools, no worker but rush.
const FAST: &[&str] = &[
    "hello",
    "hi there!",
    "good morning",
    "thanks, that's all",
    "who are you?",
    "what is a monad?",
    "tell me a joke",
    "translate 'good night' into French",
    "what's the capital of Australia?",
    "convert 5 km to miles",
    "你好",
    "早上好",
    "谢谢",
    "你是谁？",
    "讲个笑话",
    "把这句话翻译成英文：今天天气很好",
];

/// Questions about the code base: never the fast path; the librarian maps the code, or a
/// specialist whose domain the question names answers it with its tools.
const LOOKED_UP: &[&str] = &[
    "explain what this repository does",
    "explain this codebase",
    "where is the config loaded?",
    "how does the login flow work in this project?",
    "what does the main function do?",
    "summarise this repo",
    "give me an overview of the architecture",
    "which file defines the router?",
    "walk me through the source",
    "explain how valid() checks a token",
    "what does src/lib.rs export?",
    "find where `RunSink` is created",
    "解释一下这个仓库是做什么的",
    "配置是在哪里加载的？",
    "这个项目的架构是怎样的",
    "登录是怎么实现的",
    "总结一下这个代码库",
    "哪个文件定义了路由？",
    "入口函数在哪",
];

#[test]
fn greetings_and_repository_free_chores_take_the_fast_path() {
    let brain = default_brain();
    for prompt in FAST {
        let plan = heuristic_route(prompt, &brain, Mode::Auto);
        assert!(
            is_fast_path_eligible(prompt, &plan, 0),
            "{prompt}: expected the fast path, got primary {:?} with {:?}",
            plan.primary,
            plan.workers.iter().map(|w| w.role).collect::<Vec<_>>()
        );
    }
}

#[test]
fn questions_about_the_code_base_get_the_librarian_and_tools() {
    let brain = default_brain();
    for prompt in LOOKED_UP {
        let plan = heuristic_route(prompt, &brain, Mode::Auto);
        assert!(
            !is_fast_path_eligible(prompt, &plan, 0),
            "{prompt}: a repository question took the tool-less path"
        );
        assert!(
            plan.workers.iter().any(|w| w.role == Role::Librarian) || plan.primary != Role::Rush,
            "{prompt}: no librarian and no specialist in {:?} (primary {:?})",
            plan.workers.iter().map(|w| w.role).collect::<Vec<_>>(),
            plan.primary
        );
    }
}

#[test]
fn the_table_is_big_enough_to_mean_something() {
    assert!(FAST.len() + LOOKED_UP.len() >= 30);
    let chinese = |p: &&&str| !p.is_ascii();
    assert!(FAST.iter().filter(chinese).count() >= 5);
    assert!(LOOKED_UP.iter().filter(chinese).count() >= 5);
}
