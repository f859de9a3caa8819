//! Checks of the default brain: it resolves, each model it uses is in the catalogue and has
//! a key (or a pulled local file), and every role keeps at least one usable model.

use std::collections::BTreeMap;

use braincode_config::{Home, KeySource, Settings};
use braincode_protocol::{ModelDefinition, Role};
use braincode_runtime::{ProviderCredential, SubscriptionError};

use super::checks::Checks;

pub(super) fn check_brain(
    home: &Home,
    settings: &Settings,
    brains: &[braincode_brain::BrainPreset],
    models: &[ModelDefinition],
    checks: &mut Checks,
) {
    // The same selection a run makes (without a --brain override).
    let brain = match braincode_runtime::select_brain(home, brains, settings, None) {
        Ok(selected) => {
            let brain = selected.brain;
            let why = (selected.reason)
                .map(|reason| format!(": {reason}"))
                .unwrap_or_else(|| " (defaultBrainId in settings.json)".to_string());
            checks.ok(
                "brain",
                format!("runs use brain {:?} ({}){why}", brain.id, brain.name),
            );
            brain
        }
        Err(err) => {
            checks.error(
                "brain",
                err.to_string(),
                format!(
                    "set defaultBrainId in {} to an existing brain, or fix brains.json",
                    home.settings_path().display()
                ),
            );
            return;
        }
    };
    // Which roles use each model, in first-use order.
    let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut note = |model: String, user: String| {
        if !uses.contains_key(&model) {
            order.push(model.clone());
        }
        uses.entry(model).or_default().push(user);
    };
    for model in brain.router_policy().chain() {
        note(model, "planner".into());
    }
    for role in Role::ALL {
        for model in brain.policy(role).chain() {
            note(model, role.as_str().to_string());
        }
    }
    let mut usable: BTreeMap<String, bool> = BTreeMap::new();
    // Why each unusable model cannot answer, for the roles line.
    let mut why: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut embedded_missing = false;
    for model_id in &order {
        let users = uses
            .get(model_id)
            .map(|u| {
                if u.len() > 4 {
                    format!("{} and {} more", u[..3].join(", "), u.len() - 3)
                } else {
                    u.join(", ")
                }
            })
            .unwrap_or_default();
        let id = format!("model:{model_id}");
        let Some(definition) = models.iter().find(|m| &m.id == model_id) else {
            checks.warn(
                id,
                format!(
                    "{model_id} (used by {users}) is not in the model catalogue; it is skipped"
                ),
                format!(
                    "add {model_id} to {} or change the brain",
                    home.models_path().display()
                ),
            );
            usable.insert(model_id.clone(), false);
            why.insert(model_id.clone(), "not in the model catalogue");
            continue;
        };
        if definition.is_local() {
            // A run fetches a missing default model first, but until it is on disk (or in the
            // machine cache) no role on it can run: offline, a run fails for lack of it.
            let found = braincode_llm_local::resolve_model_path(definition, &home.models_dir());
            match &found {
                Ok(path) => checks.ok(
                    id,
                    format!("{model_id} (local) found at {}", path.display()),
                ),
                Err(_) if definition.path.is_none() => {
                    embedded_missing = true;
                    checks.warn(
                        id,
                        format!("{model_id} (local, used by {users}) is not pulled yet"),
                        "braincode models pull",
                    );
                    why.insert(model_id.clone(), "the embedded model is not pulled yet");
                }
                Err(err) => {
                    checks.warn(id, err.to_string(), "fix its `path` in models.json");
                    why.insert(model_id.clone(), "its model file is missing");
                }
            }
            usable.insert(model_id.clone(), found.is_ok());
            continue;
        }
        match braincode_runtime::find_credential(
            home,
            &definition.provider,
            definition.api_key_env.as_deref(),
        ) {
            // A subscription login counts as a credential (it is renewed when a run uses it).
            Ok(Some(ProviderCredential::Subscription(login, _))) => {
                checks.ok(
                    id,
                    format!(
                        "{model_id}: {login} subscription login for {} from auth.json",
                        definition.provider
                    ),
                );
                usable.insert(model_id.clone(), true);
            }
            Ok(Some(ProviderCredential::ApiKey(found))) => {
                let source = match &found.source {
                    KeySource::AuthFile => "auth.json".to_string(),
                    KeySource::Env(name) => format!("${name}"),
                };
                checks.ok(
                    id,
                    format!(
                        "{model_id}: API key for {} from {source}",
                        definition.provider
                    ),
                );
                usable.insert(model_id.clone(), true);
            }
            Ok(None) if braincode_llm::is_keyless(definition) => {
                checks.ok(
                    id,
                    format!("{model_id}: a local endpoint, no API key needed"),
                );
                usable.insert(model_id.clone(), true);
            }
            Ok(None) => {
                let var = definition
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| braincode_config::provider_env_var(&definition.provider));
                checks.warn(
                    id,
                    format!(
                        "{model_id} (used by {users}): no API key for provider {}",
                        definition.provider
                    ),
                    format!(
                        "braincode auth set {}   (or export {var}=...)",
                        definition.provider
                    ),
                );
                usable.insert(model_id.clone(), false);
                why.insert(model_id.clone(), "no API key");
            }
            Err(SubscriptionError::Config(err)) => {
                checks.config_error(&id, &err);
                usable.insert(model_id.clone(), false);
                why.insert(model_id.clone(), "its credentials cannot be read");
            }
            Err(err) => {
                checks.warn(
                    id,
                    err.to_string(),
                    format!("braincode auth login {}", definition.provider),
                );
                usable.insert(model_id.clone(), false);
                why.insert(model_id.clone(), "its credentials cannot be read");
            }
        }
    }
    // A role whose whole chain is unusable cannot run at all.
    let mut dead: Vec<String> = Vec::new();
    let mut causes: Vec<String> = Vec::new();
    let mut judge = |name: &str, chain: Vec<String>| {
        if chain
            .iter()
            .any(|m| usable.get(m).copied().unwrap_or(false))
        {
            return true;
        }
        dead.push(name.to_string());
        for model in chain {
            let cause = format!(
                "{model}: {}",
                why.get(&model).copied().unwrap_or("unusable")
            );
            if !causes.contains(&cause) {
                causes.push(cause);
            }
        }
        false
    };
    // An image-generation model answers no text turn: a text role cannot count on it.
    let text_only = |chain: Vec<String>| -> Vec<String> {
        chain
            .into_iter()
            .filter(|id| !models.iter().any(|m| &m.id == id && m.is_image_model()))
            .collect()
    };
    let mut alive = usize::from(judge("planner", text_only(brain.router_policy().chain())));
    for role in Role::ALL {
        if matches!(role, Role::ImageMaker | Role::Pet) {
            continue;
        }
        alive += usize::from(judge(role.as_str(), text_only(brain.policy(role).chain())));
    }
    check_image_maker(home, &brain, models, checks);
    if dead.is_empty() {
        checks.ok("roles", "every role has at least one usable model");
        return;
    }
    let which = if alive == 0 {
        "no role can run".to_string()
    } else {
        format!("these roles cannot run: {}", dead.join(", "))
    };
    let fix = if embedded_missing {
        crate::commands::run::GET_A_MODEL.to_string()
    } else {
        "add the missing API keys (braincode auth set <provider>) or pick another brain in settings.json".to_string()
    };
    checks.error(
        "roles",
        format!(
            "{which} — every model they use is unusable ({})",
            causes.join("; ")
        ),
        fix,
    );
}

/// Whether imageMaker can generate images, and which text roles name an image model.
fn check_image_maker(
    home: &Home,
    brain: &braincode_brain::BrainModel,
    models: &[ModelDefinition],
    checks: &mut Checks,
) {
    let mut misbound: Vec<String> = Vec::new();
    let text_roles = std::iter::once(("planner".to_string(), brain.router_policy().chain())).chain(
        Role::ALL
            .into_iter()
            .filter(|role| *role != Role::ImageMaker)
            .map(|role| (role.as_str().to_string(), brain.policy(role).chain())),
    );
    for (role, chain) in text_roles {
        for id in chain {
            if models.iter().any(|m| m.id == id && m.is_image_model()) {
                misbound.push(format!("{role} → {id}"));
            }
        }
    }
    if !misbound.is_empty() {
        checks.warn(
            "roles:image-models",
            format!(
                "text roles name image-generation models, which cannot answer a text turn and are skipped: {}",
                misbound.join(", ")
            ),
            "bind image models (api openai-images) to imageMaker only; give these roles text models",
        );
    }
    let policy = brain.policy(Role::ImageMaker);
    let selection = braincode_runtime::image_candidates_in(policy, models, &|d| {
        match braincode_runtime::find_credential(home, &d.provider, d.api_key_env.as_deref()) {
            Ok(Some(ProviderCredential::ApiKey(found))) => Some(found.key.expose().to_string()),
            Ok(Some(ProviderCredential::Subscription(_, entry))) => Some(entry.credentials.access),
            Ok(None) | Err(_) => None,
        }
    });
    match selection.first() {
        Some(candidate) => checks.ok(
            "imageMaker",
            format!(
                "imageMaker can generate images with {} (provider {})",
                candidate.definition.id, candidate.definition.provider
            ),
        ),
        None => checks.warn(
            "imageMaker",
            format!(
                "imageMaker cannot generate images: {}",
                selection.error_message("imageMaker")
            ),
            format!(
                "add a model with \"api\": \"openai-images\" (e.g. openai/gpt-image-2) to {}, bind it to imageMaker, and add its provider's key",
                home.models_path().display()
            ),
        ),
    }
}
