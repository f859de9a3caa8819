//! The Brain Model schema (`brains.json`): presets as written, and brains once resolved.
//!
//! Presets are partial (a child `extends` a parent and overrides some fields); a
//! [`BrainModel`] is complete, with a policy for every one of the 15 roles. Every struct
//! refuses unknown fields, so a typo such as `fallbackModelId` is reported instead of being
//! silently ignored.

use std::collections::BTreeMap;

use braincode_protocol::{Role, ThinkingLevel};
use serde::{Deserialize, Deserializer, Serialize};

use crate::budget::BrainBudget;

/// An image-generation model a role may use (only `imageMaker` uses it today).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageModelRef {
    /// Provider name (its credential key in auth.json).
    pub provider: String,
    /// The model name sent on the wire.
    pub model_id: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Endpoint base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Wire protocol (`openai-images`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
}

/// Which models a role runs on, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPolicy {
    /// The preferred model (an id in models.json).
    pub model_id: String,
    /// Models tried in order when the preferred one is unusable or fails.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallback_model_ids: Vec<String>,
    /// Reasoning effort (`off` when not set).
    #[serde(default)]
    pub thinking_level: ThinkingLevel,
    /// Replaces the built-in role prompt when it is non-empty after trimming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Image-generation model, for roles that produce images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_model: Option<ImageModelRef>,
    /// The MCP servers this role may use (names in mcp.json; `"*"` = every server no role
    /// claims). A server named here belongs to the roles that name it: roles without a list
    /// never see it. `None` = every unclaimed server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
}

impl ModelPolicy {
    /// A policy on one model with no fallbacks.
    pub fn new(model_id: &str, thinking_level: ThinkingLevel) -> Self {
        ModelPolicy {
            model_id: model_id.to_string(),
            fallback_model_ids: Vec::new(),
            thinking_level,
            system_prompt: None,
            image_model: None,
            mcp_servers: None,
        }
    }

    /// The same policy with these fallbacks.
    pub fn with_fallbacks(mut self, fallbacks: &[&str]) -> Self {
        self.fallback_model_ids = fallbacks.iter().map(|id| (*id).to_string()).collect();
        self
    }

    /// The candidate chain: the model, then its fallbacks; trimmed, empty ids dropped,
    /// duplicates removed (first occurrence kept).
    pub fn chain(&self) -> Vec<String> {
        let mut chain: Vec<String> = Vec::with_capacity(1 + self.fallback_model_ids.len());
        for id in std::iter::once(&self.model_id).chain(&self.fallback_model_ids) {
            let id = id.trim();
            if !id.is_empty() && !chain.iter().any(|seen| seen == id) {
                chain.push(id.to_string());
            }
        }
        chain
    }

    /// The custom system prompt, if one is set and non-empty after trimming.
    pub fn custom_system_prompt(&self) -> Option<&str> {
        self.system_prompt
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
    }
}

/// A policy as written in a preset: every field optional, merged over the parent's.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartialModelPolicy {
    /// Overrides `modelId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// Replaces the whole fallback list (not appended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_model_ids: Option<Vec<String>>,
    /// Overrides `thinkingLevel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    /// Overrides `systemPrompt` (an empty string restores the built-in prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Overrides `imageModel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_model: Option<ImageModelRef>,
    /// Overrides `mcpServers` (the whole list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
}

impl PartialModelPolicy {
    /// Shallow-merges these fields over `base`.
    pub fn merge_over(&self, base: &ModelPolicy) -> ModelPolicy {
        ModelPolicy {
            model_id: self
                .model_id
                .clone()
                .unwrap_or_else(|| base.model_id.clone()),
            fallback_model_ids: self
                .fallback_model_ids
                .clone()
                .unwrap_or_else(|| base.fallback_model_ids.clone()),
            thinking_level: self.thinking_level.unwrap_or(base.thinking_level),
            system_prompt: self
                .system_prompt
                .clone()
                .or_else(|| base.system_prompt.clone()),
            image_model: self
                .image_model
                .clone()
                .or_else(|| base.image_model.clone()),
            mcp_servers: self
                .mcp_servers
                .clone()
                .or_else(|| base.mcp_servers.clone()),
        }
    }

    /// A complete policy, if `modelId` is set (the only field without a default).
    pub fn complete(&self) -> Option<ModelPolicy> {
        let model_id = self.model_id.as_deref()?.trim();
        if model_id.is_empty() {
            return None;
        }
        Some(ModelPolicy {
            model_id: model_id.to_string(),
            fallback_model_ids: self.fallback_model_ids.clone().unwrap_or_default(),
            thinking_level: self.thinking_level.unwrap_or_default(),
            system_prompt: self.system_prompt.clone(),
            image_model: self.image_model.clone(),
            mcp_servers: self.mcp_servers.clone(),
        })
    }
}

impl From<ModelPolicy> for PartialModelPolicy {
    fn from(policy: ModelPolicy) -> Self {
        PartialModelPolicy {
            model_id: Some(policy.model_id),
            fallback_model_ids: Some(policy.fallback_model_ids),
            thinking_level: Some(policy.thinking_level),
            system_prompt: policy.system_prompt,
            image_model: policy.image_model,
            mcp_servers: policy.mcp_servers,
        }
    }
}

/// One policy per role: the resolved `roles` object of a brain (all 15 keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)] // One field per role; `Role` documents each.
pub struct RolePolicies {
    pub route_brain: ModelPolicy,
    pub frontend: ModelPolicy,
    pub backend: ModelPolicy,
    pub designer: ModelPolicy,
    pub image_maker: ModelPolicy,
    pub dba: ModelPolicy,
    pub devops: ModelPolicy,
    pub security: ModelPolicy,
    pub qa: ModelPolicy,
    pub review: ModelPolicy,
    pub summarize: ModelPolicy,
    pub oracle: ModelPolicy,
    pub librarian: ModelPolicy,
    pub rush: ModelPolicy,
    pub pet: ModelPolicy,
}

impl RolePolicies {
    /// Every role on the same policy.
    pub fn uniform(policy: &ModelPolicy) -> Self {
        Self::from_fn(|_| policy.clone())
    }

    /// Builds the policies role by role.
    pub fn from_fn(mut policy_for: impl FnMut(Role) -> ModelPolicy) -> Self {
        RolePolicies {
            route_brain: policy_for(Role::RouteBrain),
            frontend: policy_for(Role::Frontend),
            backend: policy_for(Role::Backend),
            designer: policy_for(Role::Designer),
            image_maker: policy_for(Role::ImageMaker),
            dba: policy_for(Role::Dba),
            devops: policy_for(Role::Devops),
            security: policy_for(Role::Security),
            qa: policy_for(Role::Qa),
            review: policy_for(Role::Review),
            summarize: policy_for(Role::Summarize),
            oracle: policy_for(Role::Oracle),
            librarian: policy_for(Role::Librarian),
            rush: policy_for(Role::Rush),
            pet: policy_for(Role::Pet),
        }
    }

    /// The policy of `role`.
    pub fn get(&self, role: Role) -> &ModelPolicy {
        match role {
            Role::RouteBrain => &self.route_brain,
            Role::Frontend => &self.frontend,
            Role::Backend => &self.backend,
            Role::Designer => &self.designer,
            Role::ImageMaker => &self.image_maker,
            Role::Dba => &self.dba,
            Role::Devops => &self.devops,
            Role::Security => &self.security,
            Role::Qa => &self.qa,
            Role::Review => &self.review,
            Role::Summarize => &self.summarize,
            Role::Oracle => &self.oracle,
            Role::Librarian => &self.librarian,
            Role::Rush => &self.rush,
            Role::Pet => &self.pet,
        }
    }

    /// The policy of `role`, mutably.
    pub fn get_mut(&mut self, role: Role) -> &mut ModelPolicy {
        match role {
            Role::RouteBrain => &mut self.route_brain,
            Role::Frontend => &mut self.frontend,
            Role::Backend => &mut self.backend,
            Role::Designer => &mut self.designer,
            Role::ImageMaker => &mut self.image_maker,
            Role::Dba => &mut self.dba,
            Role::Devops => &mut self.devops,
            Role::Security => &mut self.security,
            Role::Qa => &mut self.qa,
            Role::Review => &mut self.review,
            Role::Summarize => &mut self.summarize,
            Role::Oracle => &mut self.oracle,
            Role::Librarian => &mut self.librarian,
            Role::Rush => &mut self.rush,
            Role::Pet => &mut self.pet,
        }
    }
}

/// Reads an agent count the way the reference did: any number is accepted, floored when it
/// is at least 1; anything below 1 (or not finite) is stored as 0, which the routing limits
/// treat as "not configured" (1).
fn agent_count<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let raw = f64::deserialize(deserializer)?;
    Ok(if raw.is_finite() && raw >= 1.0 {
        // Saturating float-to-int conversion: absurdly large values become u32::MAX.
        raw.floor() as u32
    } else {
        0
    })
}

fn optional_agent_count<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    agent_count(deserializer).map(Some)
}

/// How the Brain plans and gates work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Routing {
    /// Support workers run at once (and, per mode, the worker budget).
    #[serde(deserialize_with = "agent_count")]
    pub max_parallel_agents: u32,
    /// Stored for compatibility; not used by the planner yet.
    pub prefer_cheap_model_for_simple_tasks: bool,
    /// Stored for compatibility; not used by the planner yet.
    pub escalate_on_uncertainty: bool,
    /// Whether file-editing requests get an independent review worker.
    pub require_review_for_file_edits: bool,
    /// Whether support workers of editing roles write in parallel, each in its own git
    /// worktree, their changes merged back in dependency order (`parallelWriters`; off unless
    /// a brain turns it on).
    #[serde(default)]
    pub parallel_writers: bool,
}

impl Default for Routing {
    fn default() -> Self {
        Routing {
            max_parallel_agents: 2,
            prefer_cheap_model_for_simple_tasks: true,
            escalate_on_uncertainty: true,
            require_review_for_file_edits: true,
            parallel_writers: false,
        }
    }
}

/// Routing fields as written in a preset.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)] // Each field overrides the same field of `Routing`.
pub struct PartialRouting {
    #[serde(
        default,
        deserialize_with = "optional_agent_count",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_parallel_agents: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer_cheap_model_for_simple_tasks: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_on_uncertainty: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_review_for_file_edits: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_writers: Option<bool>,
}

impl PartialRouting {
    /// Shallow-merges these fields over `base`.
    pub fn merge_over(&self, base: &Routing) -> Routing {
        Routing {
            max_parallel_agents: self.max_parallel_agents.unwrap_or(base.max_parallel_agents),
            prefer_cheap_model_for_simple_tasks: self
                .prefer_cheap_model_for_simple_tasks
                .unwrap_or(base.prefer_cheap_model_for_simple_tasks),
            escalate_on_uncertainty: self
                .escalate_on_uncertainty
                .unwrap_or(base.escalate_on_uncertainty),
            require_review_for_file_edits: self
                .require_review_for_file_edits
                .unwrap_or(base.require_review_for_file_edits),
            parallel_writers: self.parallel_writers.unwrap_or(base.parallel_writers),
        }
    }
}

/// When the agent loop compacts older conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compaction {
    /// At settings.json `context.compactAtPercent` of the window (or of `maxInputTokens`
    /// when lower).
    #[default]
    Auto,
    /// Never automatically (`off` is accepted too).
    #[serde(alias = "off")]
    Manual,
    /// At 70% of the `auto` threshold.
    Aggressive,
}

/// What workers may share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// One isolated task context per worker (the only mode implemented).
    #[default]
    Strict,
    /// Reserved: workers share confirmed facts.
    SharedFacts,
}

/// Soft context policy of a brain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextPolicy {
    /// Token budget that triggers compaction.
    pub max_input_tokens: u64,
    /// Compaction strategy.
    pub compaction: Compaction,
    /// Worker isolation.
    pub isolation: Isolation,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        ContextPolicy {
            max_input_tokens: 120_000,
            compaction: Compaction::Auto,
            isolation: Isolation::Strict,
        }
    }
}

/// Context fields as written in a preset.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(missing_docs)] // Each field overrides the same field of `ContextPolicy`.
pub struct PartialContextPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<Compaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
}

impl PartialContextPolicy {
    /// Shallow-merges these fields over `base`.
    pub fn merge_over(&self, base: &ContextPolicy) -> ContextPolicy {
        ContextPolicy {
            max_input_tokens: self.max_input_tokens.unwrap_or(base.max_input_tokens),
            compaction: self.compaction.unwrap_or(base.compaction),
            isolation: self.isolation.unwrap_or(base.isolation),
        }
    }
}

/// A brain as written in `brains.json`: complete, or partial with `extends`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrainPreset {
    /// Unique id.
    pub id: String,
    /// Parent preset whose resolved fields this one overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extends: Option<String>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the brain is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The routeBrain planner's policy (takes precedence over `roles.routeBrain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner: Option<PartialModelPolicy>,
    /// Per-role policies; keys are role names (an unknown key is an error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<BTreeMap<Role, PartialModelPolicy>>,
    /// Routing overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<PartialRouting>,
    /// Context overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<PartialContextPolicy>,
    /// Hard limits per run (fields override the parent's one by one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BrainBudget>,
}

/// A fully resolved brain: every field present, a policy for each of the 15 roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrainModel {
    /// The id it was selected by.
    pub id: String,
    /// Display name.
    pub name: String,
    /// What the brain is for.
    pub description: String,
    /// The routeBrain planner's policy.
    pub planner: ModelPolicy,
    /// Per-role policies.
    pub roles: RolePolicies,
    /// Routing policy.
    pub routing: Routing,
    /// Context policy.
    pub context: ContextPolicy,
    /// Hard limits per run (none by default).
    #[serde(default)]
    pub budget: BrainBudget,
}

impl BrainModel {
    /// The policy a role runs with.
    pub fn policy(&self, role: Role) -> &ModelPolicy {
        self.roles.get(role)
    }

    /// The policy the routeBrain router runs with (the planner).
    pub fn router_policy(&self) -> &ModelPolicy {
        &self.planner
    }
}

/// The whole `brains.json` document.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrainsDocument {
    /// Every preset.
    pub brains: Vec<BrainPreset>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_trimmed_and_deduplicated() {
        let policy =
            ModelPolicy::new(" a ", ThinkingLevel::Low).with_fallbacks(&["b", "a", "", "b", "c"]);
        assert_eq!(policy.chain(), vec!["a", "b", "c"]);
    }

    #[test]
    fn custom_prompt_must_be_non_empty() {
        let mut policy = ModelPolicy::new("m", ThinkingLevel::Off);
        assert_eq!(policy.custom_system_prompt(), None);
        policy.system_prompt = Some("   ".into());
        assert_eq!(policy.custom_system_prompt(), None);
        policy.system_prompt = Some("  Be terse. ".into());
        assert_eq!(policy.custom_system_prompt(), Some("Be terse."));
    }

    #[test]
    fn compaction_off_means_manual() {
        let parse =
            |text: &str| serde_json::from_str::<Compaction>(text).map_err(|e| e.to_string());
        assert_eq!(parse(r#""off""#), Ok(Compaction::Manual));
        assert_eq!(parse(r#""aggressive""#), Ok(Compaction::Aggressive));
        assert!(parse(r#""sometimes""#).unwrap_err().contains("sometimes"));
    }

    #[test]
    fn typos_are_refused() {
        let err = serde_json::from_str::<PartialModelPolicy>(
            r#"{"modelId": "m", "fallbackModelId": ["x"]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("fallbackModelId"), "{err}");
        let err = serde_json::from_str::<BrainPreset>(r#"{"id": "x", "roles": {"fronted": {}}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("fronted"), "{err}");
        assert!(serde_json::from_str::<PartialRouting>(r#"{"maxParallelAgent": 3}"#).is_err());
    }

    #[test]
    fn agent_counts_are_floored_and_invalid_ones_become_zero() {
        let routing: PartialRouting =
            serde_json::from_str(r#"{"maxParallelAgents": 3.7}"#).unwrap();
        assert_eq!(routing.max_parallel_agents, Some(3));
        let routing: PartialRouting = serde_json::from_str(r#"{"maxParallelAgents": -2}"#).unwrap();
        assert_eq!(routing.max_parallel_agents, Some(0));
        assert!(serde_json::from_str::<PartialRouting>(r#"{"maxParallelAgents": "3"}"#).is_err());
    }

    #[test]
    fn merge_replaces_fallbacks_instead_of_appending() {
        let base = ModelPolicy::new("a", ThinkingLevel::High).with_fallbacks(&["b", "c"]);
        let child = PartialModelPolicy {
            fallback_model_ids: Some(vec!["z".into()]),
            ..PartialModelPolicy::default()
        };
        let merged = child.merge_over(&base);
        assert_eq!(merged.model_id, "a");
        assert_eq!(merged.fallback_model_ids, vec!["z"]);
        assert_eq!(merged.thinking_level, ThinkingLevel::High);
    }
}
