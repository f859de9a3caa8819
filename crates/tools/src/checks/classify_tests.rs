use super::*;

#[test]
fn kinds_match_the_configuration_names() {
    let names: Vec<&str> = PatchKind::ALL.iter().map(|kind| kind.as_str()).collect();
    assert_eq!(names, crate::config::PATCH_KINDS);
    for kind in PatchKind::ALL {
        assert_eq!(kind.as_str().parse::<PatchKind>().unwrap(), kind);
        assert_eq!(
            serde_json::to_value(kind).unwrap(),
            serde_json::json!(kind.as_str())
        );
    }
    let error = "fast".parse::<PatchKind>().unwrap_err().to_string();
    assert!(error.contains("unknown patch kind \"fast\""), "{error}");
    assert_eq!(
        serde_json::to_value(RiskTier::Critical).unwrap(),
        serde_json::json!("critical")
    );
}

#[test]
fn classification_table() {
    let cases: &[(&[&str], PatchKind)] = &[
        (&[], PatchKind::UnknownCode),
        // Package files win over everything.
        (
            &["package.json", ".github/workflows/ci.yml"],
            PatchKind::PackageChange,
        ),
        (&["Cargo.lock"], PatchKind::PackageChange),
        (&["crates/x/Cargo.toml"], PatchKind::PackageChange),
        (&["web/pnpm-lock.yaml"], PatchKind::PackageChange),
        (&["go.sum"], PatchKind::PackageChange),
        (&["requirements-dev.txt"], PatchKind::PackageChange),
        (&["requirements/base.txt"], PatchKind::PackageChange),
        (&["Gemfile"], PatchKind::PackageChange),
        (&["pyproject.toml"], PatchKind::PackageChange),
        // CI.
        (
            &[".github/workflows/ci.yml", "src/auth/login.ts"],
            PatchKind::CiRisk,
        ),
        (&[".gitlab-ci.yml"], PatchKind::CiRisk),
        (&["Jenkinsfile"], PatchKind::CiRisk),
        (&[".circleci/config.yml"], PatchKind::CiRisk),
        (&["docker/Dockerfile"], PatchKind::CiRisk),
        // Database.
        (
            &["migrations/0001_init.sql", "src/auth.rs"],
            PatchKind::DbRisk,
        ),
        (&["db/schema.rb"], PatchKind::DbRisk),
        (&["prisma/schema.prisma"], PatchKind::DbRisk),
        (&["src/queries/users.sql"], PatchKind::DbRisk),
        (&["app/models/migrate/x.py"], PatchKind::DbRisk),
        // Auth.
        (&["src/auth/mod.rs"], PatchKind::AuthRisk),
        (&["web/src/LoginForm.tsx"], PatchKind::AuthRisk),
        (&["server/session_store.go"], PatchKind::AuthRisk),
        (&["lib/jwt.py", "README.md"], PatchKind::AuthRisk),
        (&["src/OAuthButton.tsx"], PatchKind::AuthRisk),
        (&["tests/test_password.py"], PatchKind::AuthRisk),
        // Prose about auth or databases is docs.
        (&["docs/auth.md", "docs/migrations.md"], PatchKind::DocsOnly),
        (
            &["README.md", "LICENSE", "docs/img/arch.png"],
            PatchKind::DocsOnly,
        ),
        (
            &["CHANGELOG", "LICENSE-MIT", "notes.txt"],
            PatchKind::DocsOnly,
        ),
        // Tests.
        (&["tests/it.rs"], PatchKind::TestOnly),
        (&["pkg/x_test.go", "test_app.py"], PatchKind::TestOnly),
        (
            &["web/src/a.test.ts", "web/src/b.spec.tsx"],
            PatchKind::TestOnly,
        ),
        (&["web/__tests__/x.js"], PatchKind::TestOnly),
        (&["src/parser/tests.rs", "README.md"], PatchKind::TestOnly),
        (&["src/test/java/FooTest.java"], PatchKind::TestOnly),
        (&["spec/user_spec.rb"], PatchKind::TestOnly),
        // Frontend before backend.
        (&["web/src/App.tsx", "src/main.rs"], PatchKind::Frontend),
        (&["styles/site.scss"], PatchKind::Frontend),
        (&["web/src/util.ts"], PatchKind::Frontend),
        (&["src/components/Button.vue"], PatchKind::Frontend),
        (&["index.html"], PatchKind::Frontend),
        // Backend.
        (&["src/main.rs"], PatchKind::Backend),
        (&["cmd/server/main.go"], PatchKind::Backend),
        (&["app/models.py", "README.md"], PatchKind::Backend),
        (&["server/routes/users.ts"], PatchKind::Backend),
        (&["src/parser.c", "include/parser.h"], PatchKind::Backend),
        // Unknown.
        (&["src/util.ts"], PatchKind::UnknownCode),
        (&["Makefile"], PatchKind::UnknownCode),
        (&["config/settings.yaml"], PatchKind::UnknownCode),
        (&["CMakeLists.txt"], PatchKind::UnknownCode),
    ];
    for (paths, expected) in cases {
        assert_eq!(classify_patch(paths), *expected, "{paths:?}");
    }
}

#[test]
fn risk_tier_table() {
    let cases: &[(&[&str], RiskTier)] = &[
        (&["README.md"], RiskTier::Low),
        (&["tests/it.rs"], RiskTier::Low),
        (&["src/main.rs"], RiskTier::Medium),
        (&["web/App.tsx"], RiskTier::Medium),
        (&["package.json"], RiskTier::Medium),
        (&["src/util.ts"], RiskTier::Medium),
        (&[], RiskTier::Medium),
        (&["src/auth/mod.rs"], RiskTier::High),
        (&["migrations/1.sql"], RiskTier::High),
        (&[".github/workflows/ci.yml"], RiskTier::High),
        // A workflow next to a lockfile is a package change, but still high risk.
        (&["Cargo.lock", ".github/workflows/ci.yml"], RiskTier::High),
        (
            &[".github/workflows/ci.yml", "src/auth/token.rs"],
            RiskTier::Critical,
        ),
    ];
    for (paths, expected) in cases {
        assert_eq!(risk_tier(paths), *expected, "{paths:?}");
    }
    assert_eq!(RiskTier::Low.raised_for_review(), RiskTier::High);
    assert_eq!(RiskTier::Critical.raised_for_review(), RiskTier::Critical);
}

#[test]
fn ecosystems_by_file_type() {
    for (path, expected) in [
        ("src/lib.rs", Some(Ecosystem::Cargo)),
        ("Cargo.lock", Some(Ecosystem::Cargo)),
        ("app/x.py", Some(Ecosystem::Python)),
        ("requirements.txt", Some(Ecosystem::Python)),
        ("pyproject.toml", Some(Ecosystem::Python)),
        ("web/a.tsx", Some(Ecosystem::Node)),
        ("web/yarn.lock", Some(Ecosystem::Node)),
        ("web/tsconfig.build.json", Some(Ecosystem::Node)),
        ("x.svelte", Some(Ecosystem::Node)),
        ("main.go", Some(Ecosystem::Go)),
        ("go.sum", Some(Ecosystem::Go)),
        ("src/x.c", None),
        ("Makefile", None),
        ("README.md", None),
    ] {
        assert_eq!(file_ecosystem(path), expected, "{path}");
    }
    assert_eq!(
        split_words("userSessions-OAuth2_x"),
        ["user", "sessions", "oauth2", "x"]
    );
}
