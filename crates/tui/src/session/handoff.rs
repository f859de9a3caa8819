//! `/handoff [focus]`: the session's handoff, made in the background (the model summarizer,
//! when settings.json asks for it, may take seconds) and shown in the info panel.

use super::Session;

impl Session {
    /// `/handoff [focus]`: the session's bounded summary (the fresh one, or a new one by the
    /// configured summarizer, appended), shown, for `@@<id>` in a later session. Made in the
    /// background: the model summarizer may take seconds.
    pub(super) fn handoff(&mut self, focus: Option<&str>) {
        if self.running.is_some() {
            self.note("a request is running: /handoff once it has answered");
            return;
        }
        let id = self.session_id.clone();
        let home = self.options.home.clone();
        let options = braincode_runtime::HandoffOptions {
            focus: focus.map(str::to_string),
            summarizer: None,
            brain_id: self.brain.clone(),
        };
        let info = self.info_tx.clone();
        self.info = Some(vec!["writing the handoff…".into()]);
        tokio::spawn(async move {
            let lines = match braincode_runtime::make_handoff(&home, &id, &options).await {
                Ok(made) => {
                    let mut lines = vec![if made.reused {
                        format!("handoff of session {id} (fresh; @@{id} inlines it):")
                    } else {
                        format!(
                            "handoff by {} written to session {id} (@@{id} inlines it):",
                            made.summarizer
                        )
                    }];
                    if let Some(reason) = made.fallback {
                        lines.push(format!("! {reason}: the heuristic summary was written"));
                    }
                    lines.extend(made.summary.lines().map(str::to_string));
                    lines
                }
                Err(err) => vec![format!(
                    "no handoff for session {id}: {err} (a session has a journal once a request ran)"
                )],
            };
            let _ = info.send(lines);
        });
    }
}
