//! The one conversion of the engine's error kinds to this binding's error classes.
//!
//! The classes are JavaScript's (`lib/errors.ts`: `ConfigurationError`, `ClosedError`, ...; all
//! `ContenoxError`s). At load the TypeScript layer hands over one factory, `(kind, message,
//! detailsJson) => Error`; every error the engine returns is made by it, on the JavaScript
//! thread, so `instanceof` works and `cause` is the engine's cause chain (`details.causes`,
//! outermost first). Before the factory is set, a plain `Error` with the message is thrown.

use napi::bindgen_prelude::{FnArgs, Function, FunctionRef, Unknown};
use napi::{Env, Error, Result};
use napi_derive::napi;
use serde_json::{json, Value};

type Factory = FunctionRef<FnArgs<(String, String, String)>, Unknown<'static>>;

/// Where the factory lives: this module's instance data, one per JavaScript environment.
struct Errors {
    factory: Factory,
}

/// Set the factory that makes the binding's errors (called once by `lib/errors.ts`).
#[napi(ts_args_type = "factory: (kind: string, message: string, detailsJson: string) => Error")]
pub fn set_error_factory(
    env: &Env,
    factory: Function<'_, FnArgs<(String, String, String)>, Unknown<'static>>,
) -> Result<()> {
    let errors = Errors {
        factory: factory.create_ref()?,
    };
    env.set_instance_data(errors, (), |_| {})
}

/// The kind (the engine's kind name, which `lib/errors.ts` maps to its class) and the details
/// of an engine error: the data of the two kinds that carry any, and the cause chain.
fn describe(e: &contenox::Error) -> (&'static str, Value) {
    use contenox::Error as E;
    let causes: Vec<String> = std::iter::successors(std::error::Error::source(e), |c| c.source())
        .map(|c| c.to_string())
        .collect();
    let mut details = match e {
        E::Config(c) => json!({"option": c.option, "value": c.value, "reason": c.reason}),
        E::Http {
            status,
            body,
            retry_after,
        } => json!({"status": status, "body": body,
                    "retryAfter": retry_after.map(|d| d.as_secs_f64())}),
        _ => json!({}),
    };
    details["causes"] = json!(causes);
    (e.kind().as_str(), details)
}

/// An engine error as the binding's error object (thrown or used to reject on return).
pub fn to_js(env: &Env, e: contenox::Error) -> Error {
    let (kind, details) = describe(&e);
    make(env, kind, e.to_string(), details)
}

/// A stepper's refusal (`contenox::step::StepError`) as the binding's `StepError`: a result
/// that does not fit the action waiting, or no action waiting; nothing changed.
pub fn step(env: &Env, e: contenox::step::StepError) -> Error {
    make(env, "step", e.to_string(), json!({"causes": []}))
}

/// The factory's error of `kind` (a plain `Error` before the factory is set).
fn make(env: &Env, kind: &str, message: String, details: Value) -> Error {
    let made = env
        .get_instance_data::<Errors>()
        .ok()
        .flatten()
        .and_then(|errors| errors.factory.borrow_back(env).ok())
        .and_then(|factory| {
            factory
                .call(FnArgs::from((
                    kind.to_string(),
                    message.clone(),
                    details.to_string(),
                )))
                .ok()
        });
    match made {
        Some(object) => Error::from(object),
        None => Error::from_reason(message),
    }
}

/// A misuse the binding itself finds (a value of the wrong shape from JavaScript).
pub fn reason(e: impl std::fmt::Display) -> Error {
    Error::from_reason(e.to_string())
}
