//! [`Client::resume`]: a suspended turn goes on, with the answers to its pending asks (the
//! checkpoint and the turn's durable state are `crate::durable`'s).

use tokio::sync::mpsc::unbounded_channel;

use crate::client::Client;
use crate::durable::{config_digest, Answers, CallState, Checkpoint, Durable};
use crate::error::{Error, Result};
use crate::event::TurnResult;
use crate::gate::Answer;
use crate::run::{Run, RunOptions};
use crate::tool::{Allowlist, EventSink};
use crate::turn::{resume_turn, TurnSetup};

impl Client {
    /// Go on with a turn that ended [`Outcome::Suspended`](crate::Outcome::Suspended), from its
    /// result's `checkpoint`, with `answers` to its `pending` requests keyed by call id (a
    /// request left unanswered is asked again through this client's `wait_for`, with what is
    /// left of its time). Any client with the same config can resume it, in any process; the
    /// conversation becomes the checkpoint's. Resolves as [`Client::run`] does.
    ///
    /// The gate runs again first: a policy or `before_tool` that now denies wins, and an answer
    /// stands in for the human's ask only while the gate asks the same (same call id, same
    /// request digest). An ask past its deadline is denied with
    /// [`ASK_TIMEOUT_DENIAL`](crate::ASK_TIMEOUT_DENIAL). Results recorded before the turn
    /// suspended are replayed, not run again. A call whose tool spec changed, or any call not
    /// yet run when the config (model, system prompt, tools, schema) changed, fails closed: an
    /// error result, not run.
    ///
    /// `Err(`[`Error::Checkpoint`]`)` before anything runs when the checkpoint is not one, was
    /// written by a newer engine, does not match its digest, was already resumed on this
    /// client, or when an answer names a call that is not waiting (a wrong id, or one already
    /// answered); [`Error::Closed`] when the client is closed.
    pub async fn resume(&self, checkpoint: &str, answers: Answers) -> Result<TurnResult> {
        self.resume_with(checkpoint, answers, RunOptions::default())
            .await
    }

    /// [`Client::resume`] with an outside cancel token (`options.cancel`; the run's other
    /// options are the checkpoint's, and giving any is refused).
    pub async fn resume_with(
        &self,
        checkpoint: &str,
        answers: Answers,
        options: RunOptions,
    ) -> Result<TurnResult> {
        let (cp, durable, setup) = self.prepare_resume(checkpoint, answers, &options)?;
        let (cancel, _link) = self.turn_token(&options);
        Ok(resume_turn(
            self.state().clone(),
            cp,
            durable,
            setup,
            cancel,
            EventSink::discard(),
        )
        .await)
    }

    /// [`Client::resume`] as a [`Run`]: events as they happen (from `turn_start`, with the
    /// turn's first prompt; results replayed from the checkpoint emit no event again), cancel,
    /// result.
    pub fn resume_stream(&self, checkpoint: &str, answers: Answers) -> Result<Run> {
        self.resume_stream_with(checkpoint, answers, RunOptions::default())
    }

    /// [`Client::resume_stream`] with an outside cancel token.
    pub fn resume_stream_with(
        &self,
        checkpoint: &str,
        answers: Answers,
        options: RunOptions,
    ) -> Result<Run> {
        let (cp, durable, setup) = self.prepare_resume(checkpoint, answers, &options)?;
        let (cancel, link) = self.turn_token(&options);
        let (tx, rx) = unbounded_channel();
        let turn = resume_turn(
            self.state().clone(),
            cp,
            durable,
            setup,
            cancel.clone(),
            EventSink::new(tx),
        );
        let turn = async move {
            let _link = link;
            turn.await
        };
        Ok(Run::spawn(turn, rx, cancel))
    }

    /// Open and check the checkpoint and the answers, and claim it on this client: refused
    /// before anything changes.
    fn prepare_resume(
        &self,
        text: &str,
        answers: Answers,
        options: &RunOptions,
    ) -> Result<(Checkpoint, Durable, TurnSetup)> {
        self.check_open()?;
        let refuse = |why: String| Err(Error::Checkpoint(why));
        if options.allow.is_some()
            || options.max_turns.is_some()
            || options.settings.is_some()
            || options.output_schema.is_some()
            || options.output_retries.is_some()
        {
            return Err(Error::config(
                "a resume takes only `cancel` and `traceparent` from its options: the run's \
                 other options are the checkpoint's"
                    .into(),
            ));
        }
        let cp = Checkpoint::open(text)?;
        let waiting: Vec<&str> = cp
            .calls
            .iter()
            .filter(|c| matches!(c, CallState::Asked { .. }))
            .map(CallState::call_id)
            .collect();
        for (id, answer) in &answers {
            if matches!(answer, Answer::Suspend) {
                return refuse(format!(
                    "the answer for {id} is suspend: resume with an answer, or leave the call \
                     out to be asked again"
                ));
            }
            if waiting.contains(&id.as_str()) {
                continue;
            }
            let state = cp.calls.iter().find(|c| c.call_id() == id);
            return refuse(if let Some(CallState::Done { .. }) = state {
                format!("call {id} was already answered: its result is in the checkpoint")
            } else if let Some(CallState::Approved { .. }) = state {
                format!(
                    "call {id} was already approved: its approval is in the checkpoint (it \
                     runs after the calls waiting: {})",
                    waiting.join(", ")
                )
            } else {
                format!(
                    "no call {id} is waiting for an answer in this checkpoint (waiting: {})",
                    waiting.join(", ")
                )
            });
        }
        let config = self.state().config();
        if !config.takes_images() {
            let images: usize = cp
                .transcript
                .messages
                .iter()
                .map(|m| m.images().count())
                .sum();
            if images > 0 {
                return refuse(format!(
                    "its conversation holds {images} image(s), but this client's model takes \
                     none (its `images` option is false)"
                ));
            }
        }
        let run = cp.run.clone();
        // The run's options were accepted when the turn began; one this client refuses now
        // is the checkpoint's fault (edited and resealed, or another client's).
        let not_run = |e: Error| Error::Checkpoint(format!("its run options do not apply ({e})"));
        let run_options = RunOptions {
            allow: match &run.allow {
                Some(patterns) => Some(Allowlist::new(patterns).map_err(not_run)?),
                None => None,
            },
            max_turns: run.max_turns,
            settings: run.settings.clone(),
            output_schema: run.output_schema.clone(),
            output_retries: run.output_retries,
            cancel: None,
            traceparent: None,
        };
        let settings = self.run_settings(&run_options).map_err(not_run)?;
        let output = self.run_output(&run_options).map_err(not_run)?;
        if !self.state().claim_checkpoint(&cp.turn_id, cp.seq) {
            return refuse(format!(
                "it was already resumed on this client (turn {}, suspension {}): an answer is \
                 applied once; resume the checkpoint the turn's latest suspension returned",
                cp.turn_id, cp.seq
            ));
        }
        let durable = Durable::resumed(&cp, answers, &config_digest(config));
        let setup = TurnSetup {
            allow: run_options.allow,
            max_turns: run_options.max_turns,
            settings,
            output,
            output_retries: run_options.output_retries,
            record: run,
            // The host's current span at resume (telemetry on): a trace of its own.
            trace_parent: crate::client::trace_parent(options),
            ..TurnSetup::default()
        };
        Ok((cp, durable, setup))
    }
}
