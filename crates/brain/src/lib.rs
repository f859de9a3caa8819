//! braincode-brain.
