//! braincode-test-support.
