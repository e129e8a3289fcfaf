//! [`Client::step`]: a turn whose I/O its host does or replays ([`crate::step`]).

use tokio::sync::mpsc::unbounded_channel;

use crate::client::{run_record, trace_parent, Client};
use crate::error::Result;
use crate::prompt::Prompt;
use crate::run::{Run, RunOptions};
use crate::step::{StepOptions, Stepper};
use crate::tool::EventSink;
use crate::turn::{run_turn, TurnSetup};

impl Client {
    /// Start a turn stepped by the host: [`Stepper::next`] gives each model request, tool call
    /// (with its idempotency key `turn_id:call_id`) and ask, and the turn waits until the host
    /// gives its result ([`Stepper::feed`] a recorded one, or [`Stepper::perform`] to do it
    /// now); then [`Action::Done`](crate::step::Action::Done) with the turn's result. A
    /// stepped turn runs its calls one at a time, and an ask's answer cannot suspend it (the
    /// host holds its state). Needs a tokio runtime (the turn is spawned on it).
    ///
    /// A compaction's summary request is an action too
    /// ([`Action::SummaryRequest`](crate::step::Action::SummaryRequest)); a host
    /// [`Compactor`](crate::Compactor) and the lifecycle hooks are called as in `run` (again on
    /// a replay, as the gate's hooks are). Errors as [`Client::stream`].
    pub fn step(&self, prompt: impl Into<Prompt>) -> Result<Stepper> {
        self.step_with(prompt, RunOptions::default(), StepOptions::default())
    }

    /// [`Client::step`] with per-run options and the turn's start state (`step.turn_id`,
    /// `step.clock_ms`: give a recorded stepper's [`Stepper::options`] to replay it).
    pub fn step_with(
        &self,
        prompt: impl Into<Prompt>,
        options: RunOptions,
        step: StepOptions,
    ) -> Result<Stepper> {
        self.check_open()?;
        let prompt = prompt.into();
        prompt.check()?;
        self.check_prompt_images(&prompt)?;
        let settings = self.run_settings(&options)?;
        let output = self.run_output(&options)?;
        let (cancel, link) = self.turn_token(&options);
        let (tx, rx) = unbounded_channel();
        let (seam, stepper) = Stepper::pair(&step);
        let turn = run_turn(
            self.state().clone(),
            prompt,
            TurnSetup {
                allow: options.allow.clone(),
                max_turns: options.max_turns,
                settings,
                output,
                output_retries: options.output_retries,
                record: run_record(&options),
                trace_parent: trace_parent(&options),
                stepped: Some(seam),
                ..TurnSetup::default()
            },
            cancel.clone(),
            EventSink::new(tx),
        );
        let turn = async move {
            let _link = link;
            turn.await
        };
        Ok(stepper(Run::spawn(turn, rx, cancel)))
    }
}
