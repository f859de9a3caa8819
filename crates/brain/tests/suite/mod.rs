//! The test modules, one per former test binary.

mod brains_json;
mod heuristic;
mod plan;
mod properties;
mod router;
mod router_schema;
mod routing_table;
