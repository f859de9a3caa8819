//! Making sure the embedded model is on disk before a run that needs it.

use braincode_config::Home;
use braincode_llm_local::{PullProgress, ensure_default_model};
use braincode_protocol::Role;
use braincode_runtime::config::{load_brain_presets, load_models, load_settings, select_brain};

/// Pulls the default local model when the selected brain uses it first for some role and it
/// is missing (a model that is only a fallback behind a remote one is not fetched up front).
/// Configuration errors are left for the run itself to report (with file and line); the
/// files are read by the same functions the run's loader (`RunConfig::load`) uses.
pub fn ensure_local_models(home: &Home, brain_id: Option<&str>) -> anyhow::Result<()> {
    let (Ok(settings), Ok(presets), Ok(models)) = (
        load_settings(home),
        load_brain_presets(home),
        load_models(home),
    ) else {
        return Ok(());
    };
    let Ok((_, brain)) = select_brain(home, &presets, &settings, brain_id) else {
        return Ok(());
    };
    let mut chains: Vec<String> = brain.router_policy().chain().into_iter().take(1).collect();
    for role in Role::ALL {
        chains.extend(brain.policy(role).chain().into_iter().take(1));
    }
    let needs_default = models
        .iter()
        .any(|m| m.is_local() && m.path.is_none() && chains.contains(&m.id));
    if !needs_default {
        return Ok(());
    }
    let mut announced = false;
    ensure_default_model(&home.models_dir(), &mut |event| {
        if !announced {
            eprintln!("the embedded local model is not installed yet: fetching it (98 MB, once)");
            announced = true;
        }
        if let PullProgress::Finished { path, .. } = &event {
            eprintln!("installed {}", path.display());
        }
    })
    .map_err(|err| anyhow::anyhow!("{err}"))?;
    Ok(())
}
