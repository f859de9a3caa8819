//! The test modules, one per former test binary.

mod generation;
mod model_files;
mod prefix_reuse;
mod pull;
mod structured_output;
