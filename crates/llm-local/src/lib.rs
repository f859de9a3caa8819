//! braincode-llm-local.
