//! Keyword patterns of the deterministic router, in English and Chinese.
//!
//! English keywords (and phrases) match whole words of the lower-cased prompt, so `ui` does
//! not fire inside `build`; Chinese has no word boundaries, so its keywords match as
//! substrings. No regex is involved: compiling large keyword alternations costs milliseconds,
//! and this runs on every plan.

/// One keyword family: English words or phrases (lower case, single spaces) and Chinese
/// substrings.
struct Keywords {
    english: &'static [&'static str],
    chinese: &'static [&'static str],
}

/// A prompt prepared for matching: lower-cased, and its ASCII words joined by single spaces
/// between leading and trailing spaces (` fix the ui `).
struct Prepared {
    lower: String,
    words: String,
}

impl Prepared {
    fn new(prompt: &str) -> Self {
        let lower = prompt.to_lowercase();
        let mut words = String::with_capacity(lower.len() + 2);
        words.push(' ');
        for word in lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            words.push_str(word);
            words.push(' ');
        }
        Self { lower, words }
    }

    /// Whether `phrase` appears as whole words.
    fn has_words(&self, phrase: &str) -> bool {
        self.words.match_indices(phrase).any(|(at, _)| {
            self.words.as_bytes().get(at.wrapping_sub(1)) == Some(&b' ')
                && self.words.as_bytes().get(at + phrase.len()) == Some(&b' ')
        })
    }
}

impl Prepared {
    /// Character offsets (start, end) of every whole-word occurrence of `phrase` in the
    /// lower-cased text.
    fn word_spans(&self, phrase: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        for (at, _) in self.lower.match_indices(phrase) {
            let end = at + phrase.len();
            let before = self.lower[..at].chars().next_back();
            let after = self.lower[end..].chars().next();
            let is_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
            if !is_word(before) && !is_word(after) {
                let start = self.lower[..at].chars().count();
                spans.push((start, start + phrase.chars().count()));
            }
        }
        spans
    }

    /// Character offsets of every occurrence of `needle` (no word boundaries).
    fn spans(&self, needle: &str) -> Vec<(usize, usize)> {
        self.lower
            .match_indices(needle)
            .map(|(at, _)| {
                let start = self.lower[..at].chars().count();
                (start, start + needle.chars().count())
            })
            .collect()
    }

    fn is_image_request(&self) -> bool {
        let near = |verbs: Vec<(usize, usize)>, nouns: Vec<(usize, usize)>, gap: usize| {
            verbs.iter().any(|(_, verb_end)| {
                nouns
                    .iter()
                    .any(|(noun_start, _)| *noun_start >= *verb_end && noun_start - verb_end <= gap)
            })
        };
        let english_verbs: Vec<_> = IMAGE_VERBS
            .iter()
            .flat_map(|v| self.word_spans(v))
            .collect();
        if !english_verbs.is_empty() {
            let nouns: Vec<_> = IMAGE_NOUNS
                .iter()
                .flat_map(|n| self.word_spans(n))
                .collect();
            if near(english_verbs, nouns, IMAGE_GAP_CHARS) {
                return true;
            }
        }
        if IMAGE_PHRASES_ZH.iter().any(|p| self.lower.contains(p)) {
            return true;
        }
        let verbs: Vec<_> = IMAGE_VERBS_ZH.iter().flat_map(|v| self.spans(v)).collect();
        !verbs.is_empty()
            && near(
                verbs,
                IMAGE_NOUNS_ZH.iter().flat_map(|n| self.spans(n)).collect(),
                IMAGE_GAP_CHARS_ZH,
            )
    }
}

impl Keywords {
    fn matches(&self, text: &Prepared) -> bool {
        self.english.iter().any(|w| text.has_words(w))
            || self.chinese.iter().any(|w| text.lower.contains(w))
    }
}

static FILE_EDIT: Keywords = Keywords {
    english: &[
        "implements",
        "implemented",
        "implementing",
        "implement",
        "builds",
        "building",
        "build",
        "create",
        "creates",
        "created",
        "creating",
        "adds",
        "added",
        "adding",
        "add",
        "fixes",
        "fixed",
        "fixing",
        "fix",
        "change",
        "changes",
        "changed",
        "changing",
        "modify",
        "modifies",
        "modified",
        "modifying",
        "refactors",
        "refactored",
        "refactoring",
        "refactor",
        "edits",
        "edited",
        "editing",
        "edit",
        "write",
        "writes",
        "writing",
        "delete",
        "deletes",
        "deleted",
        "deleting",
        "rename",
        "renames",
        "renamed",
        "renaming",
        "move",
        "moves",
        "moved",
        "moving",
        "extracts",
        "extracted",
        "extracting",
        "extract",
        "inline",
        "rewrite",
        "rewrites",
        "rewriting",
        "replace",
        "replaces",
        "replaced",
        "replacing",
        "remove",
        "removes",
        "removed",
        "removing",
        "update",
        "updates",
        "updated",
        "updating",
    ],
    chinese: &[
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
};

static WORKSPACE: Keywords = Keywords {
    english: &[
        "git",
        "commits",
        "commit",
        "stage",
        "staged",
        "staging",
        "status",
        "diff",
        "push",
        "pull",
        "branches",
        "branch",
        "checkout",
        "merge",
        "rebase",
        "tags",
        "tag",
        "release",
        "ci",
        "workflows",
        "workflow",
        "shell",
        "terminal",
        "commands",
        "command",
        "execute",
        "run scripts",
        "run script",
        "package scripts",
        "package script",
        "npm",
        "bun",
        "pnpm",
        "yarn",
        "cargo",
        "tests",
        "test",
        "lint",
        "typecheck",
        "dependency",
        "dependencies",
        "bump",
        "upgrade",
        "lockfile",
        "lock file",
    ],
    chinese: &[
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
        "依赖",
        "升级",
    ],
};

/// Image generation: a making verb followed, within 48 characters (24 in Chinese), by an
/// image noun; or one of the Chinese set phrases.
const IMAGE_VERBS: [&str; 7] = [
    "generate", "create", "make", "draw", "produce", "render", "edit",
];
const IMAGE_NOUNS: [&str; 18] = [
    "image",
    "images",
    "picture",
    "pictures",
    "illustration",
    "illustrations",
    "poster",
    "posters",
    "avatar",
    "avatars",
    "portrait",
    "portraits",
    "visual asset",
    "visual assets",
    "art",
    "artwork",
    "artworks",
    "arts",
];
const IMAGE_VERBS_ZH: [&str; 5] = ["生成", "画", "制作", "做", "创作"];
const IMAGE_NOUNS_ZH: [&str; 7] = ["图片", "图像", "海报", "头像", "插画", "插图", "壁纸"];
const IMAGE_PHRASES_ZH: [&str; 4] = ["画一张", "画一幅", "做图", "出图"];
const IMAGE_GAP_CHARS: usize = 48;
const IMAGE_GAP_CHARS_ZH: usize = 24;

static FRONTEND: Keywords = Keywords {
    english: &[
        "front end",
        "frontend",
        "ui",
        "ux",
        "browser",
        "client",
        "components",
        "component",
        "react",
        "vue",
        "svelte",
        "css",
        "html",
        "pages",
        "page",
        "forms",
        "form",
        "layout",
        "screens",
        "screen",
        "views",
        "view",
    ],
    chinese: &[
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
};

static BACKEND: Keywords = Keywords {
    english: &[
        "back end",
        "backend",
        "apis",
        "api",
        "server",
        "endpoints",
        "endpoint",
        "handlers",
        "handler",
        "services",
        "service",
        "validation",
    ],
    chinese: &["后端", "接口", "服务端", "服务器", "校验"],
};

static DESIGNER: Keywords = Keywords {
    english: &[
        "designs",
        "designer",
        "design",
        "ux",
        "wireframes",
        "wireframe",
        "layout",
        "interactions",
        "interaction",
        "copy",
        "visuals",
        "visual",
    ],
    chinese: &["设计", "交互", "视觉", "布局", "文案", "原型"],
};

static DBA: Keywords = Keywords {
    english: &[
        "databases",
        "database",
        "db",
        "sql",
        "schemas",
        "schema",
        "migrations",
        "migration",
        "indexes",
        "index",
        "query",
        "queries",
    ],
    chinese: &["数据库", "迁移", "索引", "查询", "表结构", "建表", "数据表"],
};

static SECURITY: Keywords = Keywords {
    english: &[
        "security",
        "secure",
        "permissions",
        "permission",
        "vulnerability",
        "vulnerabilities",
        "xss",
        "csrf",
        "injection",
        "secrets",
        "secret",
    ],
    chinese: &["安全", "漏洞", "权限", "注入", "密钥", "风控"],
};

/// Authentication and sessions: backend work that is a security change too, so both
/// families match them.
static AUTH: Keywords = Keywords {
    english: &[
        "authentication",
        "authorization",
        "auth",
        "login",
        "sessions",
        "session",
        "tokens",
        "token",
        "oauth",
        "jwt",
        "password",
        "passwords",
        "credentials",
        "encryption",
    ],
    chinese: &["认证", "鉴权", "登录", "会话", "令牌", "密码", "加密"],
};

static QA: Keywords = Keywords {
    english: &[
        "qa",
        "tests",
        "test",
        "testing",
        "verify",
        "verification",
        "coverage",
        "regressions",
        "regression",
        "e2e",
        "unit tests",
        "unit test",
        "integration tests",
        "integration test",
    ],
    chinese: &["测试", "验证", "回归", "覆盖率", "单元测试", "集成测试"],
};

static REVIEW: Keywords = Keywords {
    english: &[
        "reviews",
        "review",
        "code review",
        "inspect",
        "audits",
        "audit",
    ],
    chinese: &["审查", "评审", "代码审查", "复查", "审核"],
};

static SUMMARY: Keywords = Keywords {
    english: &[
        "summary",
        "summarise",
        "summarize",
        "reports",
        "report",
        "recap",
        "handoff",
    ],
    chinese: &["总结", "汇总", "报告", "交接", "摘要"],
};

/// A question about the code base itself (explain it, where is, how does it work): it needs
/// read tools, so it must not take the tool-less conversational path. Generous on purpose: a
/// repository question answered without looking is worse than a chat answer that looked.
static CODEBASE: Keywords = Keywords {
    english: &[
        "repo",
        "repos",
        "repository",
        "repositories",
        "codebase",
        "code base",
        "this project",
        "the project",
        "this code",
        "the code",
        "source code",
        "source",
        "explain",
        "explains",
        "walk me through",
        "where is",
        "where are",
        "where does",
        "where do",
        "how does",
        "how is",
        "how are",
        "what does",
        "which file",
        "which files",
        "which function",
        "which module",
        "find",
        "locate",
        "look at",
        "read",
        "overview",
        "architecture",
        "entry point",
        "structure",
        "module",
        "modules",
        "function",
        "functions",
        "class",
        "classes",
        "method",
        "file",
        "files",
        "folder",
        "directory",
        "crate",
        "package",
        "implemented",
        "implementation",
        "defined",
        "called",
        "calls",
        "depends",
        "dependencies",
        "todo",
        "todos",
        "bug",
        "bugs",
    ],
    chinese: &[
        "仓库",
        "代码库",
        "代码",
        "源码",
        "项目",
        "工程",
        "解释",
        "讲解",
        "介绍一下",
        "在哪",
        "哪个文件",
        "哪些文件",
        "哪个函数",
        "怎么实现",
        "如何实现",
        "怎么工作",
        "如何工作",
        "是怎么",
        "做什么的",
        "干什么的",
        "架构",
        "结构",
        "入口",
        "模块",
        "函数",
        "文件",
        "目录",
        "依赖",
        "调用",
        "定义",
    ],
};

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
    /// A question about the code base (see [`CODEBASE`]).
    pub codebase: bool,
}

impl Signals {
    /// Detects every keyword family in `prompt` (lower-cased first).
    pub fn detect(prompt: &str) -> Signals {
        let text = Prepared::new(prompt);
        let auth = AUTH.matches(&text);
        Signals {
            file_edit: FILE_EDIT.matches(&text),
            workspace: WORKSPACE.matches(&text),
            image: text.is_image_request(),
            frontend: FRONTEND.matches(&text),
            backend: BACKEND.matches(&text) || auth,
            designer: DESIGNER.matches(&text),
            dba: DBA.matches(&text),
            security: SECURITY.matches(&text) || auth,
            qa: QA.matches(&text),
            review: REVIEW.matches(&text),
            summary: SUMMARY.matches(&text),
            codebase: CODEBASE.matches(&text),
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
mod tests;
