//! The test modules, one per former test binary.

mod agent_loop;
mod approval_gate;
mod hooks;
mod mcp_runs;
mod mcp_third_party;
mod orchestrator;
mod pet_model;
mod router_request;
mod subscription;
mod writers;
mod writers_bad_cases;
mod writers_checks;
mod writers_sparse;
mod writers_start;
