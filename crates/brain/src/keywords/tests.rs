use super::*;

#[test]
fn keyword_tables_are_normalized() {
    for family in [
        &FILE_EDIT, &WORKSPACE, &FRONTEND, &BACKEND, &DESIGNER, &DBA, &SECURITY, &QA, &REVIEW,
        &SUMMARY,
    ] {
        for word in family.english {
            assert_eq!(*word, word.to_lowercase(), "{word}");
            assert!(
                word.split(' ')
                    .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric())),
                "{word:?}"
            );
        }
    }
}

#[test]
fn phrases_match_across_whitespace_and_punctuation() {
    assert!(Signals::detect("then run the package\n  scripts").workspace);
    assert!(!Signals::detect("package the scripts").workspace);
    assert!(Signals::detect("write a unit-test").qa);
    assert!(Signals::detect("the Front-End, please").frontend);
    assert!(!Signals::detect("frontendish").frontend);
    assert!(
        Signals::detect("修复bug").file_edit,
        "Chinese next to ASCII"
    );
}

#[test]
fn english_matches_whole_words_only() {
    assert!(Signals::detect("Fix the UI").frontend);
    assert!(
        !Signals::detect("build it quickly").frontend,
        "ui inside build"
    );
    assert!(
        !Signals::detect("a continuous process").workspace,
        "ci inside words"
    );
    assert!(Signals::detect("update the CI workflow").workspace);
    assert!(Signals::detect("Summarise this").summary);
}

#[test]
fn each_family_has_english_and_chinese_keywords() {
    type Flag = fn(&Signals) -> bool;
    let cases: [(&str, &str, Flag); 11] = [
        ("implement caching", "实现缓存", |s| s.file_edit),
        ("git push the branch", "推送到远程分支", |s| {
            s.workspace
        }),
        (
            "generate an image of a cat",
            "生成一张猫的图片",
            |s| s.image,
        ),
        ("the react component", "前端组件", |s| s.frontend),
        ("the api endpoint", "后端接口", |s| s.backend),
        ("a wireframe", "交互原型", |s| s.designer),
        ("the sql schema", "数据库表结构", |s| s.dba),
        ("xss vulnerability", "安全漏洞", |s| s.security),
        ("regression coverage", "回归测试覆盖率", |s| s.qa),
        ("code review please", "代码审查", |s| s.review),
        ("write a recap", "写一份总结", |s| s.summary),
    ];
    for (english, chinese, flag) in cases {
        assert!(flag(&Signals::detect(english)), "{english}");
        assert!(flag(&Signals::detect(chinese)), "{chinese}");
    }
}

#[test]
fn image_generation_needs_verb_and_noun_close_together() {
    assert!(Signals::detect("Draw a poster for the launch").image);
    assert!(Signals::detect("please generate art").image);
    assert!(Signals::detect("画一张风景").image);
    assert!(!Signals::detect("describe this image").image);
    let far = format!("create {} image", "x".repeat(60));
    assert!(!Signals::detect(&far).image);
}
