//! The one candidate-fallback loop of a run: the router, every worker and the primary try
//! the usable models of their chain in order until one answers. A failure moves on to the
//! next model when its kind allows it (never after a cancellation or an oversized context).

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

/// How trying the candidates ended.
pub(crate) enum Fallback<T> {
    /// A candidate answered.
    Done(T),
    /// The run was cancelled.
    Cancelled,
    /// No candidate answered: every failure, in order (none when there was no candidate).
    Exhausted(Vec<Failure>),
}

/// Tries `attempt` on each candidate in turn (with its 1-based attempt number) until one
/// succeeds; `on_failure` sees each failure as it happens (to journal it, to warn).
pub(crate) async fn each_candidate<T, F, Fut>(
    candidates: &[Candidate],
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
                    will_fallback: error.allows_fallback() && index + 1 < candidates.len(),
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
        let outcome: Fallback<()> =
            each_candidate(&list, |_, _| async { Err(error(ErrorKind::Auth)) }, |_| {}).await;
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
            |_, _| async { Err(AgentError::Cancelled) },
            |_| failures += 1,
        )
        .await;
        assert!(matches!(outcome, Fallback::Cancelled));
        assert_eq!(failures, 0);
    }
}
