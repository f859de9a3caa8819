//! Resolving a preset id into a complete [`BrainModel`] by following `extends`.

use braincode_protocol::Role;

use crate::error::BrainError;
use crate::schema::{BrainModel, BrainPreset, RolePolicies};

/// The preset with `id`; a later preset replaces an earlier one with the same id, so user
/// presets appended after the built-ins override them.
fn find<'a>(presets: &'a [BrainPreset], id: &str) -> Option<&'a BrainPreset> {
    presets.iter().rev().find(|preset| preset.id.trim() == id)
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// Resolves brain `id` from `presets`.
///
/// A preset without `extends` must define every field (name, description, planner, a policy
/// with a `modelId` for each of the 15 roles, routing and context; routing and context fields
/// it leaves out take their defaults). A preset with `extends` is merged onto its resolved
/// parent: name and description replace the parent's, each policy is shallow-merged (a
/// child's `fallbackModelIds` replaces the parent's list), routing and context are
/// shallow-merged. When ids repeat, the last preset with that id is used.
///
/// Errors: an unknown id (listing the valid ids), an unknown parent, an inheritance cycle
/// (showing the chain `a -> b -> a`), and an incomplete non-extending preset (naming the
/// missing fields).
pub fn select_brain(presets: &[BrainPreset], id: &str) -> Result<BrainModel, BrainError> {
    let wanted = id.trim();
    let Some(preset) = find(presets, wanted) else {
        let mut valid: Vec<&str> = Vec::new();
        for preset in presets {
            let id = preset.id.trim();
            if !valid.contains(&id) {
                valid.push(id);
            }
        }
        return Err(BrainError::UnknownBrain {
            id: wanted.to_string(),
            valid: if valid.is_empty() {
                "(none defined)".to_string()
            } else {
                valid.join(", ")
            },
        });
    };
    let mut model = resolve(presets, preset, &mut Vec::new())?;
    model.id = wanted.to_string();
    Ok(model)
}

fn resolve(
    presets: &[BrainPreset],
    preset: &BrainPreset,
    chain: &mut Vec<String>,
) -> Result<BrainModel, BrainError> {
    let id = preset.id.trim().to_string();
    chain.push(id.clone());
    let Some(parent_id) = non_empty(preset.extends.as_deref()) else {
        return complete(preset);
    };
    if let Some(start) = chain.iter().position(|seen| seen == parent_id) {
        let mut cycle = chain[start..].to_vec();
        cycle.push(parent_id.to_string());
        return Err(BrainError::Cycle {
            chain: cycle.join(" -> "),
        });
    }
    let parent = find(presets, parent_id).ok_or_else(|| BrainError::UnknownParent {
        parent: parent_id.to_string(),
        child: id,
    })?;
    let base = resolve(presets, parent, chain)?;
    Ok(apply(preset, base))
}

/// Merges a child preset over its resolved parent.
fn apply(preset: &BrainPreset, mut base: BrainModel) -> BrainModel {
    if let Some(name) = non_empty(preset.name.as_deref()) {
        base.name = name.to_string();
    }
    if let Some(description) = non_empty(preset.description.as_deref()) {
        base.description = description.to_string();
    }
    if let Some(planner) = &preset.planner {
        base.planner = planner.merge_over(&base.planner);
    }
    if let Some(roles) = &preset.roles {
        for (role, partial) in roles {
            let merged = partial.merge_over(base.roles.get(*role));
            *base.roles.get_mut(*role) = merged;
        }
    }
    if let Some(routing) = &preset.routing {
        base.routing = routing.merge_over(&base.routing);
    }
    if let Some(context) = &preset.context {
        base.context = context.merge_over(&base.context);
    }
    if let Some(budget) = preset.budget {
        base.budget = base.budget.merged_with(budget);
    }
    base
}

/// Builds a brain from a preset that extends nothing.
fn complete(preset: &BrainPreset) -> Result<BrainModel, BrainError> {
    let mut missing: Vec<String> = Vec::new();
    let name = non_empty(preset.name.as_deref());
    if name.is_none() {
        missing.push("name".into());
    }
    let description = non_empty(preset.description.as_deref());
    if description.is_none() {
        missing.push("description".into());
    }
    let planner = match &preset.planner {
        None => {
            missing.push("planner".into());
            None
        }
        Some(partial) => {
            let policy = partial.complete();
            if policy.is_none() {
                missing.push("planner.modelId".into());
            }
            policy
        }
    };
    let mut role_policies = Vec::new();
    match &preset.roles {
        None => missing.push("roles".into()),
        Some(roles) => {
            for role in Role::ALL {
                match roles.get(&role) {
                    None => missing.push(format!("roles.{role}")),
                    Some(partial) => match partial.complete() {
                        Some(policy) => role_policies.push((role, policy)),
                        None => missing.push(format!("roles.{role}.modelId")),
                    },
                }
            }
        }
    }
    if preset.routing.is_none() {
        missing.push("routing".into());
    }
    if preset.context.is_none() {
        missing.push("context".into());
    }

    match (name, description, planner) {
        (Some(name), Some(description), Some(planner)) if missing.is_empty() => {
            let roles = RolePolicies::from_fn(|role| {
                role_policies
                    .iter()
                    .find(|(r, _)| *r == role)
                    .map_or_else(|| planner.clone(), |(_, policy)| policy.clone())
            });
            Ok(BrainModel {
                id: preset.id.trim().to_string(),
                name: name.to_string(),
                description: description.to_string(),
                planner,
                roles,
                routing: preset
                    .routing
                    .clone()
                    .unwrap_or_default()
                    .merge_over(&Default::default()),
                context: preset
                    .context
                    .clone()
                    .unwrap_or_default()
                    .merge_over(&Default::default()),
                budget: preset.budget.unwrap_or_default(),
            })
        }
        _ => Err(BrainError::Incomplete {
            id: preset.id.trim().to_string(),
            missing: missing.join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::{DEFAULT_BRAIN_ID, default_brains};
    use crate::schema::{PartialModelPolicy, PartialRouting};
    use braincode_protocol::ThinkingLevel;
    use std::collections::BTreeMap;

    fn child(id: &str, extends: &str) -> BrainPreset {
        BrainPreset {
            id: id.into(),
            extends: Some(extends.into()),
            ..BrainPreset::default()
        }
    }

    #[test]
    fn unknown_id_lists_valid_ids() {
        let err = select_brain(&default_brains(), "nope").unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, BrainError::UnknownBrain { .. }));
        assert!(
            text.contains("'nope'") && text.contains("brain, anthropic, openai"),
            "{text}"
        );
    }

    #[test]
    fn missing_parent_names_both_ids() {
        let mut presets = default_brains();
        presets.push(child("mine", "ghost"));
        let err = select_brain(&presets, "mine").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown parent brain id 'ghost' for brain id 'mine'"
        );
    }

    #[test]
    fn cycles_show_the_chain() {
        let presets = vec![child("a", "b"), child("b", "a"), child("c", "a")];
        let err = select_brain(&presets, "a").unwrap_err();
        assert_eq!(
            err,
            BrainError::Cycle {
                chain: "a -> b -> a".into()
            }
        );
        // Entering the cycle from outside shows just the cycle.
        let err = select_brain(&presets, "c").unwrap_err().to_string();
        assert!(err.contains("a -> b -> a"), "{err}");
        let selfish = vec![child("s", "s")];
        assert!(
            select_brain(&selfish, "s")
                .unwrap_err()
                .to_string()
                .contains("s -> s")
        );
    }

    #[test]
    fn incomplete_presets_name_missing_fields() {
        let mut roles = BTreeMap::new();
        roles.insert(Role::Frontend, PartialModelPolicy::default());
        let preset = BrainPreset {
            id: "bare".into(),
            name: Some("Bare".into()),
            roles: Some(roles),
            ..BrainPreset::default()
        };
        let err = select_brain(&[preset], "bare").unwrap_err().to_string();
        assert!(err.starts_with("brain id 'bare' must either extend another brain or define: "));
        for field in [
            "description",
            "planner",
            "roles.frontend.modelId",
            "roles.pet",
            "routing",
            "context",
        ] {
            assert!(err.contains(field), "{field} missing from {err}");
        }
        assert!(!err.contains("name,"), "{err}");
    }

    #[test]
    fn later_presets_replace_earlier_ones_with_the_same_id() {
        let mut presets = default_brains();
        let mut replacement = default_brains().remove(0);
        replacement.name = Some("My Brain".into());
        presets.push(replacement);
        presets.push(child("kid", DEFAULT_BRAIN_ID));
        assert_eq!(
            select_brain(&presets, DEFAULT_BRAIN_ID).unwrap().name,
            "My Brain"
        );
        assert_eq!(select_brain(&presets, "kid").unwrap().name, "My Brain");
        let err = select_brain(&presets, "x").unwrap_err().to_string();
        assert_eq!(err.matches("brain,").count(), 1, "{err}");
    }

    #[test]
    fn children_shallow_merge_over_parents() {
        let mut presets = default_brains();
        let mut roles = BTreeMap::new();
        roles.insert(
            Role::Backend,
            PartialModelPolicy {
                model_id: Some("openai/gpt-5.5".into()),
                fallback_model_ids: Some(vec!["anthropic/claude-sonnet-4-6".into()]),
                system_prompt: Some("  Custom backend prompt. ".into()),
                ..PartialModelPolicy::default()
            },
        );
        presets.push(BrainPreset {
            id: "team".into(),
            extends: Some(DEFAULT_BRAIN_ID.into()),
            name: Some("Team".into()),
            roles: Some(roles),
            routing: Some(PartialRouting {
                max_parallel_agents: Some(5),
                ..PartialRouting::default()
            }),
            ..BrainPreset::default()
        });
        presets.push(child("team2", "team"));
        let brain = select_brain(&presets, "team2").unwrap();
        let parent = select_brain(&presets, DEFAULT_BRAIN_ID).unwrap();
        assert_eq!(brain.id, "team2");
        assert_eq!(brain.name, "Team");
        assert_eq!(brain.description, parent.description);
        let backend = brain.policy(Role::Backend);
        assert_eq!(backend.model_id, "openai/gpt-5.5");
        assert_eq!(
            backend.fallback_model_ids,
            vec!["anthropic/claude-sonnet-4-6"]
        );
        assert_eq!(
            backend.thinking_level,
            parent.policy(Role::Backend).thinking_level
        );
        assert_eq!(brain.policy(Role::Frontend), parent.policy(Role::Frontend));
        assert_eq!(brain.routing.max_parallel_agents, 5);
        assert_eq!(
            brain.routing.require_review_for_file_edits,
            parent.routing.require_review_for_file_edits
        );
        assert_eq!(brain.context, parent.context);
        assert_eq!(brain.planner.thinking_level, ThinkingLevel::Off);
    }
}
