//! The file patterns of patch classification (lowercase names, extensions and directory
//! segments).

pub(super) const DOC_EXTS: &[&str] = &[
    "md", "mdx", "markdown", "rst", "txt", "adoc", "asciidoc", "org", "rdoc",
];
pub(super) const DOC_NAMES: &[&str] = &[
    "license",
    "licence",
    "copying",
    "notice",
    "authors",
    "contributors",
    "changelog",
    "changes",
    "readme",
    "codeowners",
];
pub(super) const SCRIPT_EXTS: &[&str] = &["js", "mjs", "cjs", "ts", "mts", "cts"];
pub(super) const FRONTEND_EXTS: &[&str] = &[
    "tsx", "jsx", "vue", "svelte", "astro", "css", "scss", "sass", "less", "styl", "html", "htm",
];
pub(super) const FRONTEND_DIRS: &[&str] = &[
    "components",
    "pages",
    "ui",
    "frontend",
    "client",
    "web",
    "public",
    "styles",
    "views",
    "layouts",
];
pub(super) const BACKEND_EXTS: &[&str] = &[
    "rs", "go", "py", "pyi", "java", "kt", "kts", "scala", "rb", "php", "c", "h", "cc", "cpp",
    "cxx", "hpp", "hh", "cs", "ex", "exs", "erl", "clj", "zig",
];
pub(super) const BACKEND_DIRS: &[&str] = &[
    "server",
    "api",
    "backend",
    "routes",
    "services",
    "handlers",
    "controllers",
    "middleware",
];
pub(super) const TEST_DIRS: &[&str] = &[
    "tests",
    "test",
    "__tests__",
    "__mocks__",
    "spec",
    "specs",
    "testdata",
    "e2e",
];
pub(super) const PACKAGE_NAMES: &[&str] = &[
    "package.json",
    "npm-shrinkwrap.json",
    "pnpm-workspace.yaml",
    "cargo.toml",
    "cargo.lock",
    "go.mod",
    "go.sum",
    "go.work",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "pipfile",
    "pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "gemfile",
    "gemfile.lock",
    "composer.json",
    "composer.lock",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "gradle.lockfile",
    "mix.exs",
    "mix.lock",
];
pub(super) const CI_NAMES: &[&str] = &[
    ".gitlab-ci.yml",
    "jenkinsfile",
    ".travis.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "dockerfile",
    "containerfile",
];
pub(super) const DB_DIRS: &[&str] = &[
    "migrations",
    "migration",
    "migrate",
    "alembic",
    "db",
    "database",
];
pub(super) const DB_NAMES: &[&str] = &[
    "schema.rb",
    "alembic.ini",
    "knexfile.js",
    "knexfile.ts",
    "ormconfig.json",
    "ormconfig.ts",
    "drizzle.config.ts",
];
/// Words of a path (directories and file stem, split on punctuation and camelCase) that make
/// it security-sensitive.
pub(super) const AUTH_WORDS: &[&str] = &[
    "auth",
    "authn",
    "authz",
    "authentication",
    "authenticate",
    "authenticator",
    "authorization",
    "authorize",
    "login",
    "logout",
    "signin",
    "signup",
    "session",
    "sessions",
    "token",
    "tokens",
    "password",
    "passwords",
    "passwd",
    "oauth",
    "oauth2",
    "jwt",
    "jwks",
    "crypto",
    "cryptography",
    "permission",
    "permissions",
    "credential",
    "credentials",
    "acl",
    "rbac",
    "saml",
    "sso",
    "mfa",
    "totp",
];
