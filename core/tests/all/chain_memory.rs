//! A chain is hostile input: no chain of bounded size makes a run hold or allocate more than a
//! set multiple of what it is given, whatever it does within its step limit. Random chains
//! (templates that repeat their tasks' outputs, loops, chat tasks on a scripted model) run on
//! a current-thread runtime while a counting allocator measures this thread's heap: its peak
//! above the start, and everything allocated. Without the chain's size caps a template that
//! repeats its own output twice doubles each step (issue 25: 3.7 GB in 30 steps).
//!
//! The allocator counts per thread, so the other tests of this binary, running beside, are not
//! counted; it forwards every call to the system allocator unchanged.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use contenox::chain::Chain;
use contenox::{Client, ScriptEntry};
use proptest::prelude::*;
use serde_json::{json, Value};

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static TOTAL: Cell<usize> = const { Cell::new(0) };
}

fn grew(bytes: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + bytes as isize;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
    let _ = TOTAL.try_with(|t| t.set(t.get().saturating_add(bytes)));
}

fn shrank(bytes: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - bytes as isize));
}

/// The system allocator, counting per thread: live bytes, their peak, all bytes allocated.
struct Counting;

// SAFETY: every call is forwarded to `System` unchanged; only thread-local counters are added
// (const-initialised `Cell`s, which never allocate).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        shrank(layout.size());
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, layout, new_size) };
        if !q.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one run cost this thread: the peak of live bytes above the start, all bytes allocated.
struct Cost {
    peak: usize,
    total: usize,
}

fn measured<R>(f: impl FnOnce() -> R) -> (R, Cost) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let total_before = TOTAL.with(Cell::get);
    let r = f();
    let cost = Cost {
        peak: (PEAK.with(Cell::get) - start).max(0) as usize,
        total: TOTAL.with(Cell::get) - total_before,
    };
    (r, cost)
}

const IDS: [&str; 4] = ["t0", "t1", "t2", "t3"];

/// A piece of a template: text, or a variable (the input or a task's output).
fn piece(tasks: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,24}",
        Just("{{.input}}".to_string()),
        (0..tasks).prop_map(|i| format!("{{{{.{}}}}}", IDS[i])),
    ]
}

fn template(tasks: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(piece(tasks), 0..6).prop_map(|p| p.concat())
}

fn goto(tasks: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just("end".to_string()),
        4 => (0..tasks).prop_map(|i| IDS[i].to_string()),
    ]
}

fn task(tasks: usize, i: usize) -> impl Strategy<Value = Value> {
    (
        0..3usize,
        template(tasks),
        goto(tasks),
        goto(tasks),
        "[a-z]{1,3}",
    )
        .prop_map(move |(kind, text, first, second, when)| {
            let branches = json!([
                {"operator": "contains", "when": when, "goto": first},
                {"operator": "default", "when": "", "goto": second}]);
            match kind {
                0 => json!({"id": IDS[i], "handler": "prompt_to_string",
                            "prompt_template": text, "transition": {"branches": branches}}),
                1 => json!({"id": IDS[i], "handler": "chat_completion",
                            "prompt_template": text, "transition": {"branches": branches}}),
                _ => json!({"id": IDS[i], "handler": "noop",
                            "transition": {"branches": branches}}),
            }
        })
}

/// A chain of 1 to 4 tasks, its step limit and caps, and an input.
fn chain_and_input() -> impl Strategy<Value = (Value, String)> {
    (1..=4usize)
        .prop_flat_map(|n| {
            (
                (0..n).map(|i| task(n, i)).collect::<Vec<_>>(),
                1..=60u32,
                1usize..=64,
                1usize..=64,
                1usize..=256,
                "[a-z]{0,200}",
            )
        })
        .prop_map(
            |(tasks, steps, template_kib, variable_kib, history_kib, input)| {
                let chain = json!({
                    "id": "random",
                    "max_steps": steps,
                    "max_template_bytes": template_kib << 10,
                    "max_variable_bytes": variable_kib << 10,
                    "max_history_bytes": history_kib << 10,
                    "tasks": tasks,
                });
                (chain, input)
            },
        )
}

/// The model's replies: short texts, more than any run asks for.
fn script() -> Vec<ScriptEntry> {
    (0..64)
        .map(|i| ScriptEntry::text(format!("reply {i}")))
        .collect()
}

/// What a run may hold at once: every task's output and the input (variables), a render, what
/// it added to the conversation and the document; times a factor for copies (a task's output
/// is kept, passed on and reported), plus the engine's fixed cost per run.
fn allowed_peak(chain: &Chain, doc_bytes: usize, input: usize) -> usize {
    let l = chain.limits();
    let held = (chain.task_ids().len() + 1) * l.variable_bytes
        + l.template_bytes
        + l.history_bytes
        + doc_bytes
        + input;
    4 * held + FIXED
}

/// What a run may allocate in all: per step, a render and a few copies of a variable.
fn allowed_total(chain: &Chain, doc_bytes: usize, input: usize) -> usize {
    let l = chain.limits();
    let per_step = 4 * (l.template_bytes + 2 * l.variable_bytes) + doc_bytes + input;
    per_step * (chain.max_steps() as usize + 1) + 4 * FIXED
}

/// The engine's own cost of a run (events, the turn's bookkeeping, the transcript's copy):
/// measured at up to about 120 KiB for these chains.
const FIXED: usize = 256 << 10;

fn run(chain: &Chain, input: &str) -> (contenox::TurnResult, Cost) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = Client::builder()
        .script(script())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    let r = measured(|| rt.block_on(client.run_chain(chain, input)).unwrap());
    drop(client);
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_chain_of_bounded_size_allocates_past_a_multiple_of_its_caps(
        (doc, input) in chain_and_input()
    ) {
        let text = doc.to_string();
        let chain = Chain::from_json(&text).unwrap();
        let (result, cost) = run(&chain, &input);
        let (peak, total) = (
            allowed_peak(&chain, text.len(), input.len()),
            allowed_total(&chain, text.len(), input.len()),
        );
        prop_assert!(
            cost.peak <= peak,
            "peak {} > {peak} ({:?}: {:?})", cost.peak, result.outcome, result.error
        );
        prop_assert!(
            cost.total <= total,
            "total {} > {total} ({:?}: {:?})", cost.total, result.outcome, result.error
        );
    }
}

/// The probe, under the default caps: a task that renders its own output twice,
/// looping to itself, within the default step limit. It ends with the error naming the task,
/// holding about what the caps allow (a few MiB), not the gigabytes it asked for.
#[test]
fn the_doubling_chain_holds_what_the_caps_allow() {
    let doc = json!({"id": "doubling", "tasks": [
        {"id": "t1", "handler": "prompt_to_string", "prompt_template": "x{{.t1}}{{.t1}}",
         "transition": {"branches": [{"operator": "default", "when": "", "goto": "t1"}]}}]});
    let chain = Chain::from_value(doc).unwrap();
    let (result, cost) = run(&chain, "");
    eprintln!("DOUBLING peak {} total {}", cost.peak, cost.total);
    let error = result.error.unwrap();
    assert!(
        error.contains("task \"t1\"") && error.contains("max_template_bytes"),
        "{error}"
    );
    // Live at once: the kept output (under 1 MiB) in a few copies and the render being built.
    assert!(cost.peak < 8 << 20, "peak {}", cost.peak);
    assert!(cost.total < 64 << 20, "total {}", cost.total);
    // A control: the measure sees a run's allocations (the last kept output alone is 1 MiB).
    assert!(cost.peak > 1 << 20, "peak {}", cost.peak);
}
