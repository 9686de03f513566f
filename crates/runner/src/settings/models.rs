//! A model mix as the settings hold it (docs/cli.md, "Model mixes").

use bench_core::{ModelMix, ModelSelection, ModelWeight};
use serde::Serialize;

/// A model mix as the settings hold it: the models with their weights, and the selection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixSettings {
    /// The models, in order, with their weights when given.
    pub models: Vec<ModelWeight>,
    /// How each request's model is chosen.
    pub selection: ModelSelection,
}

impl MixSettings {
    /// The mix of a run whose `random` selection draws from `seed`, for `shard` when sharded.
    pub fn mix(&self, seed: u64, shard: Option<bench_core::Shard>) -> ModelMix {
        // Checked when the settings were resolved.
        let mix = ModelMix::new(&self.models, Some(self.selection), seed)
            .unwrap_or_else(|e| unreachable!("a resolved mix is valid: {e}"));
        match shard {
            Some(s) => mix.for_shard(s.index, s.count),
            None => mix,
        }
    }
}
