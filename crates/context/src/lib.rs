//! braincode-context.
