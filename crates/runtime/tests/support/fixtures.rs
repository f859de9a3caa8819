//! Typed configuration and reply fixtures: the test brain, its model catalogue, and the JSON
//! a router, a worker and a reviewer answer with, built from the real protocol types.

use std::collections::{BTreeMap, BTreeSet};

use braincode_brain::{BrainPreset, BrainsDocument, PartialModelPolicy, PartialRouting};
use braincode_protocol::{ModelDefinition, ReviewDecision, ReviewVerdict, Role};
use braincode_test_support::{router_decision_json, scripted_model_entry, worker_result_json};
use serde_json::{Value, json};

/// The id of the test brain (and `settings.defaultBrainId`).
pub const TEST_BRAIN_ID: &str = "test";

/// A base URL nothing listens on: the scripted models never open a connection.
const UNUSED_BASE_URL: &str = "http://127.0.0.1:9/v1";

/// The model id a role gets from [`BrainConfig::per_role`]: `test/<role>`; the router's
/// is `test/router`.
pub fn role_model(role: Role) -> String {
    match role {
        Role::RouteBrain => "test/router".to_string(),
        other => format!("test/{other}"),
    }
}

/// The test brain: a model chain per role and for the planner, written to `brains.json`
/// as a preset extending the built-in `brain`.
#[derive(Debug, Clone, PartialEq)]
pub struct BrainConfig {
    planner: Vec<String>,
    roles: BTreeMap<Role, Vec<String>>,
    max_parallel_agents: u32,
    mcp_servers: BTreeMap<Role, Vec<String>>,
    parallel_writers: bool,
}

impl BrainConfig {
    /// Every role and the planner on its own model ([`role_model`]): requests can be told
    /// apart by model, and the report's worker models say which role ran where.
    pub fn per_role() -> Self {
        Self {
            planner: vec![role_model(Role::RouteBrain)],
            roles: Role::ALL
                .into_iter()
                .map(|role| (role, vec![role_model(role)]))
                .collect(),
            max_parallel_agents: 4,
            mcp_servers: BTreeMap::new(),
            parallel_writers: false,
        }
    }

    /// Every role and the planner on one model.
    pub fn one_model(id: &str) -> Self {
        Self {
            planner: vec![id.to_string()],
            roles: Role::ALL
                .into_iter()
                .map(|role| (role, vec![id.to_string()]))
                .collect(),
            max_parallel_agents: 4,
            mcp_servers: BTreeMap::new(),
            parallel_writers: false,
        }
    }

    /// `role`'s model chain: the first id, then its fallbacks in order.
    pub fn chain(mut self, role: Role, chain: &[&str]) -> Self {
        let chain: Vec<String> = chain.iter().map(|s| (*s).to_string()).collect();
        if role == Role::RouteBrain {
            self.planner = chain.clone();
        }
        self.roles.insert(role, chain);
        self
    }

    /// The MCP servers `role` may use (its policy's `mcpServers`).
    pub fn mcp_servers(mut self, role: Role, servers: &[&str]) -> Self {
        self.mcp_servers
            .insert(role, servers.iter().map(|s| (*s).to_string()).collect());
        self
    }

    /// How many support workers run at once (and the worker budget).
    pub fn max_parallel_agents(mut self, count: u32) -> Self {
        self.max_parallel_agents = count;
        self
    }

    /// Support workers of editing roles write in parallel worktrees (`parallelWriters`).
    pub fn parallel_writers(mut self) -> Self {
        self.parallel_writers = true;
        self
    }

    /// Every model id the brain names, for `models.json`.
    pub fn model_ids(&self) -> BTreeSet<String> {
        self.planner
            .iter()
            .chain(self.roles.values().flatten())
            .cloned()
            .collect()
    }

    /// The `brains.json` document.
    pub fn document(&self) -> BrainsDocument {
        let policy = |chain: &[String]| PartialModelPolicy {
            model_id: chain.first().cloned(),
            fallback_model_ids: Some(chain.iter().skip(1).cloned().collect()),
            ..PartialModelPolicy::default()
        };
        BrainsDocument {
            brains: vec![BrainPreset {
                id: TEST_BRAIN_ID.to_string(),
                extends: Some("brain".to_string()),
                name: Some("Test brain".to_string()),
                planner: Some(policy(&self.planner)),
                roles: Some(
                    self.roles
                        .iter()
                        .map(|(role, chain)| {
                            let mut policy = policy(chain);
                            policy.mcp_servers = self.mcp_servers.get(role).cloned();
                            (*role, policy)
                        })
                        .collect(),
                ),
                routing: Some(PartialRouting {
                    max_parallel_agents: Some(self.max_parallel_agents),
                    parallel_writers: self.parallel_writers.then_some(true),
                    ..PartialRouting::default()
                }),
                ..BrainPreset::default()
            }],
        }
    }
}

/// A catalogue entry for a scripted model (`openai-completions` on an unused loopback URL;
/// the run's client override answers instead).
pub fn scripted_model(id: &str) -> ModelDefinition {
    scripted_model_entry(id, UNUSED_BASE_URL)
}

/// A review reply with `decision`: the worker result fields plus a `ReviewDecision`.
pub fn review_json(decision: ReviewVerdict) -> Value {
    let mut reply = worker_result_json("review-task", "review-parent", "Checked the change.");
    let verdict = ReviewDecision {
        confidence: Some(0.9),
        rationale: Some("the change is minimal and correct".to_string()),
        ..ReviewDecision::of(decision)
    };
    if let (Some(reply), Ok(Value::Object(verdict))) =
        (reply.as_object_mut(), serde_json::to_value(verdict))
    {
        reply.extend(verdict);
    }
    reply
}

/// A router decision that stops the run to ask `question`.
pub fn router_clarification_json(primary: Role, question: &str) -> Value {
    let mut decision = router_decision_json(primary, &[]);
    decision["clarification"] = json!({
        "required": true,
        "reason": "the request does not say what to change",
        "question": question,
        "missing": ["target"],
        "options": [
            {"id": "a", "label": "The token check", "description": "src/token.rs"},
            {"id": "b", "label": "The session table", "description": "migrations"}
        ]
    });
    decision
}
