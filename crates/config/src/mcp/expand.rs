//! `${VAR}` references in MCP server entries, as Claude Code and Codex users write them.
//!
//! * `${NAME}`: the environment variable; unset → an error naming it.
//! * `${NAME:-default}`: the variable, or `default` when it is unset or empty.
//! * `${BRAINCODE_AUTH:<provider>}`: the provider's API key from auth.json (then the
//!   environment, as for models).
//! * `${BRAINCODE_PROJECT_DIR}`: the project's root, for a user-level server that works on
//!   the project (it starts outside it).
//! * `$$` is a literal `$`; any other `$` is kept as written.

/// Where `${…}` values come from.
pub trait VarSource {
    /// An environment variable.
    fn env(&self, name: &str) -> Option<String>;
    /// A provider's API key (`${BRAINCODE_AUTH:<provider>}`).
    fn auth(&self, provider: &str) -> Option<String>;
}

/// The name that expands to the project's root.
pub const PROJECT_DIR_VAR: &str = "BRAINCODE_PROJECT_DIR";

/// The process environment, the user's auth.json and the project's root.
pub struct ProcessVars<'a> {
    /// The home whose auth.json is read.
    pub home: &'a crate::Home,
    /// What `${BRAINCODE_PROJECT_DIR}` expands to.
    pub project_dir: Option<&'a std::path::Path>,
}

impl VarSource for ProcessVars<'_> {
    fn env(&self, name: &str) -> Option<String> {
        match self.project_dir {
            Some(dir) if name == PROJECT_DIR_VAR => Some(dir.display().to_string()),
            _ => std::env::var(name).ok(),
        }
    }

    fn auth(&self, provider: &str) -> Option<String> {
        crate::auth::resolve_api_key(self.home, provider, None).map(|key| key.expose().to_string())
    }
}

/// Expands the references of `text`. The error names the variable (never a value).
pub fn expand_vars(text: &str, vars: &dyn VarSource) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        }
        let Some(body_and_tail) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let Some(close) = body_and_tail.find('}') else {
            return Err(format!("unclosed \"${{\" in {text:?}"));
        };
        let body = &body_and_tail[..close];
        rest = &body_and_tail[close + 1..];
        out.push_str(&resolve(body, vars)?);
    }
    out.push_str(rest);
    Ok(out)
}

fn resolve(body: &str, vars: &dyn VarSource) -> Result<String, String> {
    if let Some(provider) = body.strip_prefix("BRAINCODE_AUTH:") {
        let provider = provider.trim();
        return vars.auth(provider).filter(|k| !k.is_empty()).ok_or_else(|| {
            format!(
                "no API key for MCP auth provider {provider:?}: add one with `braincode auth set {provider}` or set {}",
                crate::auth::provider_env_var(provider)
            )
        });
    }
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(format!("\"${{{body}}}\" is not a variable reference"));
    }
    match (vars.env(name).filter(|v| !v.is_empty()), default) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(format!("environment variable {name} is not set")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    struct Vars(BTreeMap<&'static str, &'static str>);

    impl VarSource for Vars {
        fn env(&self, name: &str) -> Option<String> {
            self.0.get(name).map(ToString::to_string)
        }
        fn auth(&self, provider: &str) -> Option<String> {
            (provider == "github").then(|| "ghp_secret".to_string())
        }
    }

    fn vars() -> Vars {
        Vars(BTreeMap::from([("TOKEN", "t0k"), ("EMPTY", "")]))
    }

    #[test]
    fn expands_variables_defaults_and_auth() {
        let v = vars();
        assert_eq!(expand_vars("Bearer ${TOKEN}", &v).unwrap(), "Bearer t0k");
        assert_eq!(expand_vars("${MISSING:-x}/${EMPTY:-y}", &v).unwrap(), "x/y");
        assert_eq!(
            expand_vars("${BRAINCODE_AUTH:github}", &v).unwrap(),
            "ghp_secret"
        );
        assert_eq!(
            expand_vars("cost $5 and $$HOME", &v).unwrap(),
            "cost $5 and $HOME"
        );
        assert_eq!(expand_vars("no refs", &v).unwrap(), "no refs");
    }

    #[test]
    fn errors_name_the_variable_never_a_value() {
        let v = vars();
        let err = expand_vars("${NOPE}", &v).unwrap_err();
        assert!(err.contains("NOPE is not set"), "{err}");
        let err = expand_vars("${BRAINCODE_AUTH:gitlab}", &v).unwrap_err();
        assert!(
            err.contains("\"gitlab\"") && err.contains("GITLAB_API_KEY"),
            "{err}"
        );
        assert!(expand_vars("${TOKEN", &v).unwrap_err().contains("unclosed"));
        assert!(expand_vars("${1X}", &v).is_err());
        assert!(expand_vars("${A B}", &v).is_err());
    }
}
