//! The product's one list of protected project paths and of secret files, and how a path is
//! matched against them. The sandbox enforces them; the permission policy and the read tools
//! ask them the same questions ([`is_protected_path`], [`is_secret_file`]).
//!
//! Patterns are matched at any depth, case-insensitively (so `.GIT` on a case-insensitive
//! file system is `.git`): a pattern of one component matches a file or directory of that
//! name anywhere, one of several components (`.github/workflows`) matches that sequence of
//! names anywhere. A component may start or end with `*` (`*.pem`, `.env.*`).

use std::io::Read;
use std::path::{Component, Path};

/// Project paths that stay read-only for sandboxed commands and that only a person may let a
/// tool create or change, because writing them would make something run later outside the
/// sandbox (git hooks and config, editor tasks, MCP and agent configuration, package-manager
/// settings, direnv, dev containers, pre-commit hooks, CI workflows). Everything inside a
/// protected directory is protected.
pub const PROTECTED_PROJECT_PATHS: &[&str] = &[
    ".git",
    ".gitmodules",
    ".hg",
    ".jj",
    ".svn",
    ".agents",
    ".braincode",
    ".claude",
    ".codex",
    ".cursor",
    ".gemini",
    ".mcp.json",
    "mcp.json",
    ".npmrc",
    ".yarnrc*",
    ".pnpmfile.cjs",
    ".cargo",
    ".vscode",
    ".idea",
    ".envrc",
    ".devcontainer",
    ".pre-commit-config.yaml",
    ".husky",
    "lefthook.yml",
    ".lefthook.yml",
    ".github/workflows",
];

/// Secret files inside a project, hidden at any depth (see the module docs for the pattern
/// syntax). Names in [`SECRET_FILE_EXCEPTIONS`] are not secrets; [`SECRET_CONTENT_FILES`]
/// adds files that are secrets only when they hold a credential.
pub const SECRET_FILE_NAMES: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".pgpass",
    ".htpasswd",
    ".dockercfg",
    ".vault-token",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "master.key",
    "credentials.json",
    "client_secret*.json",
    "secrets.yml",
    "secrets.yaml",
    "*.tfvars",
    "*.tfvars.json",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    ".aws/credentials",
    ".docker/config.json",
    ".kube/config",
];

/// Names that match [`SECRET_FILE_NAMES`] but are templates committed on purpose.
pub const SECRET_FILE_EXCEPTIONS: &[&str] = &[
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    ".env.defaults",
];

/// Files that are secrets when their first [`SECRET_SNIFF_BYTES`] hold one of the markers: a
/// package-manager configuration with a registry token, a key file with a private key (a
/// `.pem` that only holds certificates stays readable, so TLS test fixtures keep working).
pub const SECRET_CONTENT_FILES: &[(&str, &[&str])] = &[
    (
        ".npmrc",
        &[
            "_authToken",
            "_auth",
            "_password",
            "npmAuthToken",
            "npmAuthIdent",
        ],
    ),
    (
        ".yarnrc*",
        &[
            "_authToken",
            "_auth",
            "_password",
            "npmAuthToken",
            "npmAuthIdent",
        ],
    ),
    ("*.pem", &["PRIVATE KEY"]),
    ("*.key", &["PRIVATE KEY"]),
];

/// How much of a file [`is_secret_file`] reads to look for [`SECRET_CONTENT_FILES`] markers.
pub const SECRET_SNIFF_BYTES: usize = 64 * 1024;

/// Secret paths relative to the user's home, hidden from sandboxed commands (credentials of
/// cloud CLIs, package registries, container registries, model hubs, git, ssh, gpg, other
/// agents, browsers, shell history). An entry ending in `*` hides every sibling whose name
/// starts with the rest.
pub const HOME_SECRET_PATHS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".oci",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/git/credentials",
    ".config/doctl",
    ".config/rclone",
    ".config/op",
    ".config/github-copilot",
    ".config/google-chrome",
    ".config/chromium",
    ".config/containers/auth.json",
    ".config/composer/auth.json",
    ".config/configstore",
    ".config/sops",
    ".config/hcloud",
    ".mozilla",
    ".local/share/keyrings",
    ".password-store",
    ".docker/config.json",
    ".kube",
    ".minikube",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".vault-token",
    ".databrickscfg",
    ".terraformrc",
    ".terraform.d/credentials.tfrc.json",
    ".pulumi/credentials.json",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".ivy2/.credentials",
    ".composer/auth.json",
    ".nuget/NuGet/NuGet.Config",
    ".cache/huggingface/token",
    ".huggingface/token",
    ".cargo/credentials*",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".gemini/oauth_creds.json",
    ".bash_history",
    ".zsh_history",
];

/// Whether one name matches one pattern component (one `*` anywhere stands for at least one
/// character), ignoring ASCII case. Allocates nothing: the walk asks it for every entry.
fn component_matches(pattern: &str, name: &str) -> bool {
    let name = name.as_bytes();
    match pattern.split_once('*') {
        Some((prefix, suffix)) => {
            name.len() > prefix.len() + suffix.len()
                && name[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
                && name[name.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        }
        None => name.eq_ignore_ascii_case(pattern.as_bytes()),
    }
}

/// Whether the path `parent/…/last` ends with the components of `pattern`.
pub(crate) fn matches_at(parent: &[&str], last: &str, pattern: &str) -> bool {
    let mut parts = pattern.rsplit('/');
    if !parts
        .next()
        .is_some_and(|part| component_matches(part, last))
    {
        return false;
    }
    let mut names = parent.iter().rev();
    parts.all(|part| {
        names
            .next()
            .is_some_and(|name| component_matches(part, name))
    })
}

/// The normal components of a relative path (`.` and empty ones dropped); `None` when it
/// climbs out with `..` or is absolute, or is not UTF-8.
fn names_of(relative: &Path) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => names.push(name.to_str()?),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(names)
}

/// Whether the entry `name` of the directory `parent` (project-relative components) is itself
/// a protected path, ignoring whether its ancestors are.
pub(crate) fn is_protected_entry(parent: &[&str], name: &str) -> bool {
    PROTECTED_PROJECT_PATHS
        .iter()
        .any(|pattern| matches_at(parent, name, pattern))
}

/// Whether a project-relative path is protected: it, or a directory it is inside, matches
/// [`PROTECTED_PROJECT_PATHS`] at any depth (`vendor/x/.git/config`, `web/.npmrc`,
/// `.github/workflows/ci.yml`). A path that is not UTF-8 or climbs out with `..` is
/// protected: nothing can be said of it.
pub fn is_protected_path(relative: impl AsRef<Path>) -> bool {
    let Some(names) = names_of(relative.as_ref()) else {
        return true;
    };
    (0..names.len()).any(|index| is_protected_entry(&names[..index], names[index]))
}

/// Whether a file name is a secret file name per [`SECRET_FILE_NAMES`] (one-component
/// patterns only; see [`is_secret_file`] for paths and contents).
pub fn is_secret_file_name(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|name| secret_by_name(&[], name).unwrap_or(false))
}

/// `Some(true)`: the entry `last` of `parent` is a secret by name; `Some(false)`: it is not,
/// whatever it holds; `None`: it is a secret only if its contents say so
/// ([`SECRET_CONTENT_FILES`]).
pub(crate) fn secret_by_name(parent: &[&str], last: &str) -> Option<bool> {
    if SECRET_FILE_EXCEPTIONS
        .iter()
        .any(|exception| exception.eq_ignore_ascii_case(last))
    {
        return Some(false);
    }
    if SECRET_FILE_NAMES
        .iter()
        .any(|pattern| matches_at(parent, last, pattern))
    {
        return Some(true);
    }
    if SECRET_CONTENT_FILES
        .iter()
        .any(|(pattern, _)| component_matches(pattern, last))
    {
        return None;
    }
    Some(false)
}

/// Whether the first [`SECRET_SNIFF_BYTES`] of `path` hold a marker of the content rule
/// matching `name`. Never follows a symlink; an unreadable file is not a secret by content.
pub(crate) fn secret_by_content(path: &Path, name: &str) -> bool {
    let Some((_, markers)) = SECRET_CONTENT_FILES
        .iter()
        .find(|(pattern, _)| component_matches(pattern, name))
    else {
        return false;
    };
    if std::fs::symlink_metadata(path).map_or(true, |m| !m.is_file()) {
        return false;
    }
    let mut head = Vec::new();
    let read = std::fs::File::open(path)
        .and_then(|file| file.take(SECRET_SNIFF_BYTES as u64).read_to_end(&mut head));
    if read.is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&head);
    markers.iter().any(|marker| text.contains(marker))
}

/// Whether the file at `root/relative` is a secret: by its name or path at any depth
/// ([`SECRET_FILE_NAMES`], minus [`SECRET_FILE_EXCEPTIONS`]), or by what it holds
/// ([`SECRET_CONTENT_FILES`]: a `.npmrc` with `_authToken`, a `.pem` with a private key).
/// A path that is not UTF-8 or climbs out of the root is not judged here (the caller's
/// containment refuses it).
pub fn is_secret_file(root: &Path, relative: impl AsRef<Path>) -> bool {
    let relative = relative.as_ref();
    let Some((last, parent)) = names_of(relative)
        .as_deref()
        .and_then(|names| names.split_last().map(|(l, p)| (*l, p.to_vec())))
    else {
        return false;
    };
    match secret_by_name(&parent, last) {
        Some(secret) => secret,
        None => secret_by_content(&root.join(relative), last),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn protected_paths_match_at_any_depth_and_inside() {
        for path in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            ".GIT/config",
            "vendor/lib/.git/config",
            "sub/module/.git",
            ".agents/hooks.json",
            ".mcp.json",
            "web/.npmrc",
            ".yarnrc.yml",
            ".cargo/config.toml",
            ".github/workflows/ci.yml",
            "packages/app/.github/workflows",
            ".vscode/tasks.json",
            "a/b/.vscode/settings.json",
            ".envrc",
            "deep/er/.envrc",
            "../escape",
        ] {
            assert!(is_protected_path(path), "{path}");
        }
        for path in [
            "src/main.rs",
            ".gitignore",
            ".gitattributes",
            "docs/git.md",
            ".github/CODEOWNERS",
            ".github",
            "workflows/ci.yml",
            "",
        ] {
            assert!(!is_protected_path(path), "{path}");
        }
    }

    #[test]
    fn secret_names_match_env_files_keys_and_credentials_but_not_templates() {
        for name in [
            ".env",
            ".env.local",
            ".env.production",
            "prod.env",
            "id_rsa",
            ".netrc",
            "master.key",
            "credentials.json",
            "terraform.tfvars",
            "prod.auto.tfvars",
            "store.p12",
            "client_secret_123.apps.json",
        ] {
            assert!(is_secret_file_name(OsStr::new(name)), "{name}");
        }
        for name in [
            ".env.example",
            ".env.sample",
            "env",
            ".envrc",
            "README.md",
            ".env.",
            "cert.pem",
            ".npmrc",
        ] {
            assert!(!is_secret_file_name(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn secret_files_by_path_and_by_content() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path();
        std::fs::create_dir_all(root.join("web/.aws"))?;
        std::fs::write(
            root.join("web/.npmrc"),
            "//registry.npmjs.org/:_authToken=npm_x\n",
        )?;
        std::fs::write(root.join(".npmrc"), "registry=https://example.test/\n")?;
        std::fs::write(
            root.join("server.pem"),
            "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n",
        )?;
        std::fs::write(
            root.join("ca.pem"),
            "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
        )?;
        std::fs::write(root.join("web/.aws/credentials"), "[default]\n")?;
        assert!(is_secret_file(root, "web/.npmrc"));
        assert!(!is_secret_file(root, ".npmrc"));
        assert!(is_secret_file(root, "server.pem"));
        assert!(!is_secret_file(root, "ca.pem"));
        assert!(is_secret_file(root, "web/.aws/credentials"));
        assert!(is_secret_file(root, "config/master.key"));
        assert!(!is_secret_file(root, "src/credentials.rs"));
        assert!(!is_secret_file(root, "../outside/.env"));
        Ok(())
    }
}
