//! Keyword patterns of the deterministic router, in English and Chinese.
//!
//! English keywords match on word boundaries (so `ui` does not fire inside `build`); Chinese
//! has no word boundaries, so its keywords match as substrings. Every regex is compiled once,
//! on first use.

use std::sync::LazyLock;

use regex::Regex;

/// One compiled pattern. `None` only if the pattern failed to compile, which the unit tests
/// rule out; a `None` pattern never matches rather than aborting a run.
type Pattern = LazyLock<Option<Regex>>;

/// `\b(?:english…)\b|chinese…`, case-insensitive.
fn keywords(english: &[&str], chinese: &[&str]) -> Option<Regex> {
    let mut pattern = format!(r"(?i)\b(?:{})\b", english.join("|"));
    for word in chinese {
        pattern.push('|');
        pattern.push_str(&regex::escape(word));
    }
    Regex::new(&pattern).ok()
}

static FILE_EDIT: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"implement(?:s|ed|ing)?",
            r"build(?:s|ing)?",
            r"creat(?:e|es|ed|ing)",
            r"add(?:s|ed|ing)?",
            r"fix(?:es|ed|ing)?",
            r"chang(?:e|es|ed|ing)",
            r"modif(?:y|ies|ied|ying)",
            r"refactor(?:s|ed|ing)?",
            r"edit(?:s|ed|ing)?",
            r"writ(?:e|es|ing)",
            r"delet(?:e|es|ed|ing)",
            r"renam(?:e|es|ed|ing)",
            r"mov(?:e|es|ed|ing)",
            r"extract(?:s|ed|ing)?",
            r"inline",
            r"rewrit(?:e|es|ing)",
            r"replac(?:e|es|ed|ing)",
            r"remov(?:e|es|ed|ing)",
            r"updat(?:e|es|ed|ing)",
        ],
        &[
            "实现",
            "开发",
            "修复",
            "新增",
            "添加",
            "增加",
            "修改",
            "重构",
            "编辑",
            "删除",
            "重命名",
            "移动",
            "替换",
            "移除",
            "改写",
            "编写",
            "创建",
            "更新",
            "改成",
            "改为",
            "改一下",
        ],
    )
});

static WORKSPACE: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"git",
            r"commits?",
            r"stag(?:e|ed|ing)",
            r"status",
            r"diff",
            r"push",
            r"pull",
            r"branch(?:es)?",
            r"checkout",
            r"merge",
            r"rebase",
            r"tags?",
            r"release",
            r"ci",
            r"workflows?",
            r"shell",
            r"terminal",
            r"commands?",
            r"execute",
            r"run\s+scripts?",
            r"package\s+scripts?",
            r"npm",
            r"bun",
            r"pnpm",
            r"yarn",
            r"cargo",
            r"tests?",
            r"lint",
            r"typecheck",
        ],
        &[
            "提交",
            "推送",
            "拉取",
            "分支",
            "合并",
            "变基",
            "标签",
            "发布",
            "流水线",
            "命令",
            "终端",
            "脚本",
            "测试",
        ],
    )
});

static IMAGE: Pattern = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\b(?:generate|create|make|draw|produce|render|edit)\b.{0,48}",
        r"\b(?:images?|pictures?|illustrations?|posters?|avatars?|portraits?|visual\s+assets?|art(?:work)?)\b",
        r"|\bgenerate\s+art\b",
        r"|(?:生成|画|制作|做|创作).{0,24}(?:图片|图像|海报|头像|插画|插图|壁纸)",
        r"|画一张|画一幅|做图|出图",
    ))
    .ok()
});

static FRONTEND: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"front-?end",
            r"ui",
            r"ux",
            r"browser",
            r"client",
            r"components?",
            r"react",
            r"vue",
            r"svelte",
            r"css",
            r"html",
            r"pages?",
            r"forms?",
            r"layout",
            r"screens?",
            r"views?",
        ],
        &[
            "前端",
            "界面",
            "页面",
            "组件",
            "表单",
            "登录页",
            "样式",
            "按钮",
            "浏览器",
        ],
    )
});

static BACKEND: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"back-?end",
            r"apis?",
            r"server",
            r"endpoints?",
            r"handlers?",
            r"services?",
            r"auth(?:entication|orization)?",
            r"login",
            r"sessions?",
            r"tokens?",
            r"oauth",
            r"validation",
        ],
        &[
            "后端",
            "接口",
            "服务端",
            "服务器",
            "认证",
            "鉴权",
            "登录",
            "会话",
            "令牌",
            "校验",
        ],
    )
});

static DESIGNER: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"design(?:s|er)?",
            r"ux",
            r"wireframes?",
            r"layout",
            r"interactions?",
            r"copy",
            r"visuals?",
        ],
        &["设计", "交互", "视觉", "布局", "文案", "原型"],
    )
});

static DBA: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"databases?",
            r"db",
            r"sql",
            r"schemas?",
            r"migrations?",
            r"index(?:es)?",
            r"query",
            r"queries",
        ],
        &["数据库", "迁移", "索引", "查询", "表结构", "建表", "数据表"],
    )
});

static SECURITY: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"security",
            r"secure",
            r"permissions?",
            r"vulnerabilit(?:y|ies)",
            r"xss",
            r"csrf",
            r"injection",
            r"secrets?",
        ],
        &["安全", "漏洞", "权限", "注入", "密钥", "风控"],
    )
});

static QA: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"qa",
            r"tests?",
            r"testing",
            r"verify",
            r"verification",
            r"coverage",
            r"regressions?",
            r"e2e",
            r"unit\s+tests?",
            r"integration\s+tests?",
        ],
        &["测试", "验证", "回归", "覆盖率", "单元测试", "集成测试"],
    )
});

static REVIEW: Pattern = LazyLock::new(|| {
    keywords(
        &[r"reviews?", r"code\s+review", r"inspect", r"audits?"],
        &["审查", "评审", "代码审查", "复查", "审核"],
    )
});

static SUMMARY: Pattern = LazyLock::new(|| {
    keywords(
        &[
            r"summary",
            r"summari[sz]e",
            r"reports?",
            r"recap",
            r"handoff",
        ],
        &["总结", "汇总", "报告", "交接", "摘要"],
    )
});

fn hit(pattern: &Pattern, text: &str) -> bool {
    pattern.as_ref().is_some_and(|re| re.is_match(text))
}

/// Which keyword families a prompt contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[allow(missing_docs)] // One flag per pattern of the heuristic table.
pub struct Signals {
    pub file_edit: bool,
    pub workspace: bool,
    pub image: bool,
    pub frontend: bool,
    pub backend: bool,
    pub designer: bool,
    pub dba: bool,
    pub security: bool,
    pub qa: bool,
    pub review: bool,
    pub summary: bool,
}

impl Signals {
    /// Detects every keyword family in `prompt` (lower-cased first).
    pub fn detect(prompt: &str) -> Signals {
        let text = prompt.to_lowercase();
        Signals {
            file_edit: hit(&FILE_EDIT, &text),
            workspace: hit(&WORKSPACE, &text),
            image: hit(&IMAGE, &text),
            frontend: hit(&FRONTEND, &text),
            backend: hit(&BACKEND, &text),
            designer: hit(&DESIGNER, &text),
            dba: hit(&DBA, &text),
            security: hit(&SECURITY, &text),
            qa: hit(&QA, &text),
            review: hit(&REVIEW, &text),
            summary: hit(&SUMMARY, &text),
        }
    }

    /// Whether any domain family (frontend, backend, designer, dba, security, qa, review)
    /// matched.
    pub fn has_domain(&self) -> bool {
        self.frontend
            || self.backend
            || self.designer
            || self.dba
            || self.security
            || self.qa
            || self.review
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        for pattern in [
            &FILE_EDIT, &WORKSPACE, &IMAGE, &FRONTEND, &BACKEND, &DESIGNER, &DBA, &SECURITY, &QA,
            &REVIEW, &SUMMARY,
        ] {
            assert!(pattern.is_some());
        }
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
}
