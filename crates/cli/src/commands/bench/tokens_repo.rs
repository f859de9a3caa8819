//! The project `braincode bench tokens` runs in: a git repository of a few dozen source files
//! of 2–10 KB each, shaped like a small session service (modules with docs, types, methods and
//! tests), so that `read_file` and `search_files` return what they return on real code.

use std::fmt::Write as _;
use std::path::Path;

use super::filler::Filler;

/// The generated files: path, the type it defines, the noun its methods work on.
pub(super) const FILES: [(&str, &str, &str); 36] = [
    ("src/auth/token.rs", "TokenValidator", "token"),
    ("src/auth/session.rs", "SessionManager", "session"),
    ("src/auth/claims.rs", "ClaimsParser", "claims"),
    ("src/auth/keys.rs", "KeyRing", "key"),
    ("src/auth/refresh.rs", "RefreshService", "refresh_token"),
    ("src/auth/password.rs", "PasswordHasher", "credential"),
    ("src/auth/mod.rs", "AuthService", "principal"),
    ("src/http/middleware.rs", "AuthMiddleware", "request"),
    ("src/http/router.rs", "ApiRouter", "route"),
    ("src/http/handlers.rs", "SessionHandlers", "payload"),
    ("src/http/errors.rs", "ErrorMapper", "response"),
    ("src/http/extract.rs", "BearerExtractor", "header"),
    ("src/http/cors.rs", "CorsPolicy", "origin"),
    ("src/http/rate_limit.rs", "RateLimiter", "bucket"),
    ("src/db/pool.rs", "ConnectionPool", "connection"),
    ("src/db/session_store.rs", "SessionStore", "session_row"),
    ("src/db/user_store.rs", "UserStore", "user"),
    ("src/db/migrations.rs", "Migrator", "migration"),
    ("src/db/query.rs", "QueryBuilder", "clause"),
    ("src/cache/lru.rs", "LruCache", "entry"),
    ("src/cache/remote.rs", "RemoteCache", "cached_value"),
    ("src/config/mod.rs", "Settings", "setting"),
    ("src/config/secrets.rs", "SecretStore", "secret"),
    ("src/config/env.rs", "EnvLoader", "variable"),
    ("src/telemetry/metrics.rs", "MetricsRegistry", "counter"),
    ("src/telemetry/audit.rs", "AuditLog", "audit_event"),
    ("src/util/clock.rs", "SystemClock", "instant"),
    ("src/util/ids.rs", "IdGenerator", "identifier"),
    ("src/util/encoding.rs", "Base64Codec", "encoded"),
    (
        "src/jobs/cleanup.rs",
        "ExpiredSessionSweeper",
        "expired_session",
    ),
    ("src/jobs/scheduler.rs", "JobScheduler", "job"),
    ("src/main.rs", "Server", "listener"),
    ("tests/token_validation.rs", "TokenFixture", "token"),
    ("tests/session_flow.rs", "SessionFixture", "session"),
    ("tests/refresh_flow.rs", "RefreshFixture", "refresh_token"),
    ("tests/rate_limit.rs", "LimiterFixture", "bucket"),
];

const VERBS: [&str; 10] = [
    "validate", "load", "store", "revoke", "refresh", "lookup", "expire", "encode", "decode",
    "audit",
];

/// One method of `ty` about `noun`, in one of several shapes real services have.
fn method(f: &mut Filler, ty: &str, noun: &str, shape: u64) -> String {
    let verb = VERBS[(f.next() % VERBS.len() as u64) as usize];
    let field = f.word();
    let n = 30 + f.next() % 900;
    match shape % 5 {
        0 => format!(
            "    /// {verb_cap}s the {noun} for `key` and checks that it has not expired.\n    ///\n    /// Returns [`{ty}Error::Expired`] when the {noun} is past its deadline and\n    /// [`{ty}Error::NotFound`] when nothing is stored under `key`.\n    pub fn {verb}_{noun}(&self, key: &str) -> Result<{ty}Entry, {ty}Error> {{\n        let now = self.clock.now();\n        let entry = self\n            .{field}s\n            .get(key)\n            .ok_or_else(|| {ty}Error::NotFound(key.to_string()))?;\n        if entry.expires_at <= now {{\n            tracing::debug!(key, \"{noun} expired {{}}s ago\", (now - entry.expires_at).as_secs());\n            return Err({ty}Error::Expired);\n        }}\n        Ok(entry.clone())\n    }}\n\n",
            verb_cap = capitalize(verb)
        ),
        1 => format!(
            "    /// {verb_cap}s a batch of {noun}s, at most {n} at a time, and reports how many changed.\n    pub async fn {verb}_{noun}_batch(&self, keys: &[String]) -> Result<usize, {ty}Error> {{\n        let mut changed = 0;\n        for chunk in keys.chunks({n}) {{\n            let mut tx = self.pool.begin().await.map_err({ty}Error::Database)?;\n            for key in chunk {{\n                let rows = sqlx::query(\"UPDATE {noun}s SET {field} = $1 WHERE id = $2\")\n                    .bind(self.clock.now())\n                    .bind(key)\n                    .execute(&mut *tx)\n                    .await\n                    .map_err({ty}Error::Database)?;\n                changed += rows.rows_affected() as usize;\n            }}\n            tx.commit().await.map_err({ty}Error::Database)?;\n        }}\n        self.metrics.add(\"{noun}_{verb}\", changed as u64);\n        Ok(changed)\n    }}\n\n",
            verb_cap = capitalize(verb)
        ),
        2 => format!(
            "    /// Parses a {noun} from its wire form (`<version>.<payload>.<signature>`).\n    fn parse_{noun}(raw: &str) -> Result<Parsed{ty}, {ty}Error> {{\n        let mut parts = raw.splitn(3, '.');\n        let (Some(version), Some(payload), Some(signature)) =\n            (parts.next(), parts.next(), parts.next())\n        else {{\n            return Err({ty}Error::Malformed(\"expected three dot-separated parts\"));\n        }};\n        if version != \"v{v}\" {{\n            return Err({ty}Error::UnsupportedVersion(version.to_string()));\n        }}\n        let payload = base64::decode_config(payload, base64::URL_SAFE_NO_PAD)\n            .map_err(|_| {ty}Error::Malformed(\"payload is not base64url\"))?;\n        Ok(Parsed{ty} {{ payload, signature: signature.to_string() }})\n    }}\n\n",
            v = n % 4 + 1
        ),
        3 => format!(
            "    /// Whether `{noun}` may be used by `principal` right now.\n    pub fn is_{noun}_allowed(&self, {noun}: &{ty}Entry, principal: &Principal) -> bool {{\n        if {noun}.revoked || {noun}.owner != principal.id {{\n            return false;\n        }}\n        let scopes_ok = principal.scopes.iter().any(|s| {noun}.scopes.contains(s));\n        let fresh = self.clock.now() < {noun}.issued_at + self.config.{field}_ttl;\n        // Leeway of {n} ms for clock skew between nodes.\n        scopes_ok && (fresh || self.config.allow_stale_{field})\n    }}\n\n"
        ),
        _ => format!(
            "    /// Removes every {noun} older than the configured retention ({n} days by default).\n    pub async fn sweep_{noun}s(&self) -> Result<u64, {ty}Error> {{\n        let cutoff = self.clock.now() - Duration::from_secs(86_400 * self.config.retention_days);\n        let removed = sqlx::query(\"DELETE FROM {noun}s WHERE created_at < $1\")\n            .bind(cutoff)\n            .execute(&self.pool)\n            .await\n            .map_err({ty}Error::Database)?\n            .rows_affected();\n        if removed > 0 {{\n            tracing::info!(removed, \"swept old {noun}s\");\n            self.audit.record(AuditEvent::Swept {{ kind: \"{noun}\", count: removed }});\n        }}\n        Ok(removed)\n    }}\n\n"
        ),
    }
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().collect::<String>() + chars.as_str()
    })
}

/// A source file of about `len` bytes defining `ty`.
fn source(f: &mut Filler, path: &str, ty: &str, noun: &str, len: usize) -> String {
    let mut out = String::with_capacity(len + 2048);
    let _ = writeln!(
        out,
        "//! {ty}: {noun} handling for the session service ({path}).\n//!\n//! Every {noun} carries an expiry and an owner; callers go through {ty} and never touch\n//! the store directly, so revocation and auditing happen in one place.\n"
    );
    out.push_str(
        "use std::collections::HashMap;\nuse std::sync::Arc;\nuse std::time::{Duration, SystemTime};\n\n",
    );
    out.push_str("use crate::config::Settings;\nuse crate::telemetry::{AuditEvent, AuditLog, MetricsRegistry};\nuse crate::util::clock::Clock;\n\n");
    let _ = writeln!(
        out,
        "/// Why a {noun} operation failed.\n#[derive(Debug, thiserror::Error)]\npub enum {ty}Error {{\n    #[error(\"no {noun} under {{0}}\")]\n    NotFound(String),\n    #[error(\"the {noun} has expired\")]\n    Expired,\n    #[error(\"malformed {noun}: {{0}}\")]\n    Malformed(&'static str),\n    #[error(\"unsupported version {{0}}\")]\n    UnsupportedVersion(String),\n    #[error(transparent)]\n    Database(#[from] sqlx::Error),\n}}\n"
    );
    let _ = writeln!(
        out,
        "/// One stored {noun}.\n#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]\npub struct {ty}Entry {{\n    pub id: String,\n    pub owner: String,\n    pub scopes: Vec<String>,\n    pub issued_at: SystemTime,\n    pub expires_at: SystemTime,\n    pub revoked: bool,\n}}\n\npub struct {ty} {{\n    pool: sqlx::PgPool,\n    clock: Arc<dyn Clock>,\n    config: Arc<Settings>,\n    metrics: Arc<MetricsRegistry>,\n    audit: Arc<AuditLog>,\n    {}s: HashMap<String, {ty}Entry>,\n}}\n\nimpl {ty} {{",
        f.word()
    );
    let mut shape = f.next();
    while out.len() < len.saturating_sub(900) {
        out.push_str(&method(f, ty, noun, shape));
        shape += 1;
    }
    out.push_str("}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n");
    let _ = writeln!(
        out,
        "    #[test]\n    fn an_expired_{noun}_is_rejected() {{\n        let fixture = fixture();\n        let entry = fixture.insert_expired(\"{noun}-1\");\n        assert!(matches!(\n            fixture.service.validate_{noun}(&entry.id),\n            Err({ty}Error::Expired)\n        ));\n    }}\n\n    #[test]\n    fn an_empty_{noun}_is_malformed() {{\n        assert!({ty}::parse_{noun}(\"\").is_err());\n    }}\n}}"
    );
    out
}

/// Writes the files into `repo` and commits them; returns (files, bytes).
pub(super) fn populate(repo: &Path) -> anyhow::Result<(usize, usize)> {
    let mut f = Filler::new(0x70_6b_65_6e);
    let mut bytes = 0;
    for (path, ty, noun) in FILES {
        let len = f.between(2_000, 10_000);
        let text = source(&mut f, path, ty, noun, len);
        let full = repo.join(path);
        if let Some(dir) = full.parent() {
            std::fs::create_dir_all(dir)?;
        }
        bytes += text.len();
        std::fs::write(full, text)?;
    }
    std::fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"session-service\"\nversion = \"0.4.2\"\nedition = \"2021\"\n\n[dependencies]\nsqlx = { version = \"0.7\", features = [\"postgres\", \"runtime-tokio\"] }\nthiserror = \"1\"\ntracing = \"0.1\"\nserde = { version = \"1\", features = [\"derive\"] }\nbase64 = \"0.13\"\n",
    )?;
    super::overhead::git_commit_all(repo, false, "session service")?;
    Ok((FILES.len() + 1, bytes))
}
