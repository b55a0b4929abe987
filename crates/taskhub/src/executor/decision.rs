//! What a remote executor decided in one turn (the protocol's `OrchestratorAction`s, in
//! Taskhub's types). The types live in `taskhub-core` beside the engine that validates them
//! and turns them into history (`OrchestrationSession::finish_turn`); they are re-exported here
//! under their executor-seam names.

pub use taskhub_core::engine::{Decision, OrchestrationDecision, OrchestrationSpan};
