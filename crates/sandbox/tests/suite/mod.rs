//! The test modules, one per former test binary.

mod attacks;
mod lifecycle;
