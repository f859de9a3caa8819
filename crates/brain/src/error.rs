//! Errors of Brain Model resolution.

use thiserror::Error;

/// Why a brain id could not be resolved into a [`crate::BrainModel`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BrainError {
    /// No preset has this id.
    #[error(
        "unknown brain id '{id}'; valid brain ids: {valid} (set defaultBrainId in settings.json to one of them, or add the brain to brains.json)"
    )]
    UnknownBrain {
        /// The requested id.
        id: String,
        /// The ids that exist, comma-separated.
        valid: String,
    },
    /// A preset extends an id no preset has.
    #[error("unknown parent brain id '{parent}' for brain id '{child}'")]
    UnknownParent {
        /// The missing parent id.
        parent: String,
        /// The preset that names it in `extends`.
        child: String,
    },
    /// Following `extends` comes back to a preset already on the chain.
    #[error(
        "brain inheritance cycle: {chain} (remove one of these `extends` links in brains.json)"
    )]
    Cycle {
        /// The chain, e.g. `a -> b -> a`.
        chain: String,
    },
    /// A preset without `extends` lacks fields a resolved brain needs.
    #[error("brain id '{id}' must either extend another brain or define: {missing}")]
    Incomplete {
        /// The incomplete preset.
        id: String,
        /// The missing fields, comma-separated (e.g. `description, roles.pet`).
        missing: String,
    },
}
