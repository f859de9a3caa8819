//! braincode-runtime.
