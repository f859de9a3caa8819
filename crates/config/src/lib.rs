//! braincode-config.
