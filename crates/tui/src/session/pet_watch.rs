//! Asks the brain's pet model what the running request is doing, every few seconds while it
//! runs (spec 1.13). The model is loaded off the event loop when a request starts; each
//! answer (or error) comes back as a message tagged with the request it was for, so a late
//! answer never lands on the next request. No pet model, a hidden panel or animations off
//! mean no calls at all: the pet then speaks from the run's own events.

use std::sync::Arc;
use std::time::Duration;

use braincode_config::Home;
use braincode_protocol::SessionId;
use braincode_runtime::{NoPetModel, PetModel, PetReply, PetSnapshot};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::pet::Pet;

/// What comes back from the background: the loaded model, or an answer.
pub(super) enum PetMessage {
    Loaded(u64, Result<Arc<PetModel>, NoPetModel>),
    Reply(u64, Result<PetReply, String>),
}

/// The pet model's side of one session.
pub(super) struct PetWatch {
    tx: UnboundedSender<PetMessage>,
    /// Bumped when a request starts or ends; messages of another generation are stale.
    generation: u64,
    model: Option<Arc<PetModel>>,
    /// When to ask next (none: not watching).
    next: Option<Instant>,
    /// The call in flight.
    asking: Option<CancellationToken>,
}

impl PetWatch {
    pub(super) fn new(tx: UnboundedSender<PetMessage>) -> Self {
        Self {
            tx,
            generation: 0,
            model: None,
            next: None,
            asking: None,
        }
    }

    /// A request started: load `brain`'s pet model and ask it after one interval.
    pub(super) fn start(&mut self, home: &Home, brain: Option<String>, pet: &Pet) {
        self.stop();
        if !pet.wants_model() {
            return;
        }
        self.next = Some(Instant::now() + pet.poll_interval());
        let generation = self.generation;
        let tx = self.tx.clone();
        let home = home.clone();
        tokio::task::spawn_blocking(move || {
            let loaded = PetModel::load(&home, brain.as_deref(), None).map(Arc::new);
            let _ = tx.send(PetMessage::Loaded(generation, loaded));
        });
    }

    /// The request ended: stop asking, forget the model (the next request may use another
    /// brain).
    pub(super) fn stop(&mut self) {
        self.generation += 1;
        self.model = None;
        self.next = None;
        if let Some(asking) = self.asking.take() {
            asking.cancel();
        }
    }

    /// Whether a timer is set.
    pub(super) fn armed(&self) -> bool {
        self.next.is_some()
    }

    /// When to ask next (far away when not watching: the caller disables the branch).
    pub(super) fn deadline(&self) -> Instant {
        self.next
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))
    }

    /// The timer fired: ask about `snapshot` unless a call is still out, the model is not
    /// loaded yet or the panel is not on screen; then wait one more interval.
    pub(super) fn ask(
        &mut self,
        snapshot: PetSnapshot,
        session: &SessionId,
        visible: bool,
        pet: &Pet,
    ) {
        self.next = Some(Instant::now() + pet.poll_interval());
        let Some(model) = self.model.clone() else {
            return;
        };
        if self.asking.is_some() || !visible {
            return;
        }
        let cancel = CancellationToken::new();
        self.asking = Some(cancel.clone());
        let generation = self.generation;
        let tx = self.tx.clone();
        let session = session.clone();
        tokio::spawn(async move {
            let reply = model.ask(&snapshot, &session, &cancel).await;
            let _ = tx.send(PetMessage::Reply(generation, reply));
        });
    }

    /// Takes one background message.
    pub(super) fn on_message(&mut self, message: PetMessage, pet: &mut Pet) {
        match message {
            PetMessage::Loaded(generation, loaded) if generation == self.generation => match loaded
            {
                Ok(model) => self.model = Some(model),
                Err(NoPetModel(reason)) => {
                    tracing::debug!("no pet model: {reason}");
                    self.next = None;
                }
            },
            PetMessage::Reply(generation, reply) if generation == self.generation => {
                self.asking = None;
                match reply {
                    Ok(reply) => pet.set_model_reply(&reply),
                    Err(reason) => {
                        tracing::debug!("the pet model did not help: {reason}");
                        pet.clear_model_reply();
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply() -> PetReply {
        PetReply {
            status: "reading auth.rs".into(),
            lines: vec!["one file so far".into()],
        }
    }

    #[tokio::test]
    async fn a_late_answer_never_lands_on_the_next_request() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut watch = PetWatch::new(tx);
        let quiet = Pet::new(true);
        let mut pet = quiet.clone();
        let first = watch.generation;
        // The request ends before its pet call answers: the answer is stale.
        watch.stop();
        watch.on_message(PetMessage::Reply(first, Ok(reply())), &mut pet);
        assert_eq!(pet, quiet, "a stale answer is dropped");
        // An answer for the request being watched speaks; an error silences it again.
        watch.on_message(PetMessage::Reply(watch.generation, Ok(reply())), &mut pet);
        assert_ne!(pet, quiet);
        let current = watch.generation;
        watch.on_message(
            PetMessage::Reply(current, Err("timed out".into())),
            &mut pet,
        );
        assert_eq!(pet, quiet, "an error falls back to the run's own events");
    }

    #[tokio::test]
    async fn no_pet_model_means_no_timer_and_animations_off_means_no_start() {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut watch = PetWatch::new(tx);
        let home = Home::at(std::env::temp_dir().join("braincode-pet-watch-no-home"));
        let mut pet = Pet::new(true);
        watch.start(&home, None, &pet);
        assert!(watch.armed());
        let reason = NoPetModel("brain brain has no usable remote pet model".into());
        watch.on_message(PetMessage::Loaded(watch.generation, Err(reason)), &mut pet);
        assert!(!watch.armed(), "nothing to ask: the timer is off");

        watch.start(&home, None, &Pet::new(false));
        assert!(!watch.armed(), "a still pet never calls a model");
    }
}
