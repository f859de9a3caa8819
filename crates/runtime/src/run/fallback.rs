//! The one candidate-fallback loop: the router, every worker, the primary, the pet and the
//! handoff summarizer try the usable models of their chain in order until one answers. A
//! failure moves on to the next model when the caller's [`StopRule`] allows it; a cancellation
//! always stops.

use braincode_llm::Candidate;

use crate::agent::AgentError;

/// One failed attempt.
pub(crate) struct Failure {
    /// Catalogue id of the model that failed.
    pub model: String,
    /// 1-based attempt.
    pub attempt: u32,
    /// What failed.
    pub error: AgentError,
    /// Whether the next candidate will be tried.
    pub will_fallback: bool,
}

impl Failure {
    /// `model: what failed`, with a model error's own message (no kind, no hint): one item of
    /// a side call's list of reasons.
    pub fn brief(&self) -> String {
        match &self.error {
            AgentError::Model(err) => format!("{}: {}", self.model, err.message),
            other => format!("{}: {other}", self.model),
        }
    }
}

/// How trying the candidates ended.
pub(crate) enum Fallback<T> {
    /// A candidate answered.
    Done(T),
    /// The run was cancelled.
    Cancelled,
    /// No candidate answered: every failure, in order (none when there was no candidate).
    Exhausted(Vec<Failure>),
}

/// Which failures end the chain before its last model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopRule {
    /// A run's agents: an oversized context stops too (a conversation too long for one model
    /// needs a handoff, not the next model).
    Run,
    /// A one-shot side call with its own prompt (the pet, the handoff summarizer): every
    /// failure but a cancellation tries the next model.
    SideCall,
}

impl StopRule {
    /// Whether the next candidate is worth trying after `error`.
    fn falls_back(self, error: &AgentError) -> bool {
        match self {
            StopRule::Run => error.allows_fallback(),
            StopRule::SideCall => match error {
                AgentError::Model(err) => err.kind != braincode_llm::ErrorKind::Cancelled,
                AgentError::ContextTooLarge { .. } => true,
                AgentError::Cancelled => false,
            },
        }
    }
}

/// Tries `attempt` on each candidate in turn (with its 1-based attempt number) until one
/// succeeds; `on_failure` sees each failure as it happens (to journal it, to warn).
pub(crate) async fn each_candidate<T, F, Fut>(
    candidates: &[Candidate],
    rule: StopRule,
    mut attempt: F,
    mut on_failure: impl FnMut(&Failure),
) -> Fallback<T>
where
    // An owned candidate (not a borrowed one): the attempt's future then borrows only what
    // the caller lends it, and stays `Send` for spawned workers.
    F: FnMut(Candidate, u32) -> Fut,
    Fut: std::future::Future<Output = Result<T, AgentError>>,
{
    let mut failures = Vec::new();
    for (index, candidate) in candidates.iter().enumerate() {
        let number = index as u32 + 1;
        match attempt(candidate.clone(), number).await {
            Ok(value) => return Fallback::Done(value),
            Err(AgentError::Cancelled) => return Fallback::Cancelled,
            Err(error) => {
                let failure = Failure {
                    model: candidate.definition.id.clone(),
                    attempt: number,
                    will_fallback: rule.falls_back(&error) && index + 1 < candidates.len(),
                    error,
                };
                on_failure(&failure);
                let stop = !failure.will_fallback;
                failures.push(failure);
                if stop {
                    break;
                }
            }
        }
    }
    Fallback::Exhausted(failures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_llm::{ErrorKind, ModelError};
    use braincode_protocol::ModelDefinition;

    fn candidates(ids: &[&str]) -> Vec<Candidate> {
        ids.iter()
            .map(|id| Candidate {
                definition: ModelDefinition {
                    id: (*id).to_string(),
                    ..braincode_test_support::scripted_model_entry(id, "http://127.0.0.1:9")
                },
                api_key: None,
            })
            .collect()
    }

    fn error(kind: ErrorKind) -> AgentError {
        AgentError::Model(ModelError::new(kind, "boom"))
    }

    #[tokio::test]
    async fn the_next_model_is_tried_until_one_answers() {
        let list = candidates(&["a", "b", "c"]);
        let mut seen = Vec::new();
        let outcome = each_candidate(
            &list,
            StopRule::Run,
            |candidate, attempt| async move {
                if candidate.definition.id == "c" {
                    Ok(attempt)
                } else {
                    Err(error(ErrorKind::Server))
                }
            },
            |failure| seen.push((failure.model.clone(), failure.will_fallback)),
        )
        .await;
        assert!(matches!(outcome, Fallback::Done(3)));
        assert_eq!(seen, [("a".into(), true), ("b".into(), true)]);
    }

    #[tokio::test]
    async fn an_oversized_context_stops_and_the_last_failure_does_not_fall_back() {
        let list = candidates(&["a", "b"]);
        let outcome: Fallback<()> = each_candidate(
            &list,
            StopRule::Run,
            |_, _| async { Err(error(ErrorKind::ContextTooLong)) },
            |_| {},
        )
        .await;
        match outcome {
            Fallback::Exhausted(failures) => {
                assert_eq!(failures.len(), 1);
                assert!(!failures[0].will_fallback);
            }
            _ => panic!("expected exhaustion"),
        }
        let outcome: Fallback<()> = each_candidate(
            &list,
            StopRule::Run,
            |_, _| async { Err(error(ErrorKind::Auth)) },
            |_| {},
        )
        .await;
        match outcome {
            Fallback::Exhausted(failures) => {
                assert_eq!(failures.len(), 2);
                assert!(failures[0].will_fallback && !failures[1].will_fallback);
            }
            _ => panic!("expected exhaustion"),
        }
    }

    #[tokio::test]
    async fn cancellation_stops_at_once() {
        let list = candidates(&["a", "b"]);
        let mut failures = 0;
        let outcome: Fallback<()> = each_candidate(
            &list,
            StopRule::SideCall,
            |_, _| async { Err(AgentError::Cancelled) },
            |_| failures += 1,
        )
        .await;
        assert!(matches!(outcome, Fallback::Cancelled));
        assert_eq!(failures, 0);
    }

    #[tokio::test]
    async fn a_side_call_tries_the_next_model_after_an_oversized_context() {
        let list = candidates(&["a", "b"]);
        let outcome = each_candidate(
            &list,
            StopRule::SideCall,
            |candidate, _| async move {
                match candidate.definition.id.as_str() {
                    "a" => Err(error(ErrorKind::ContextTooLong)),
                    _ => Ok(()),
                }
            },
            |_| {},
        )
        .await;
        assert!(matches!(outcome, Fallback::Done(())));
        let outcome: Fallback<()> = each_candidate(
            &list,
            StopRule::SideCall,
            |_, _| async { Err(error(ErrorKind::Cancelled)) },
            |_| {},
        )
        .await;
        match outcome {
            Fallback::Exhausted(failures) => assert_eq!(failures.len(), 1),
            _ => panic!("expected a stop at the cancellation"),
        }
    }
}
