//! Turns queued behind a running one: a queued turn that is cancelled or dropped before it starts
//! leaves the conversation as it was, and still ends its event stream with turn_end (cancelled).

use std::time::Duration;

use contenox::{CancellationToken, Client, Event, Message, Outcome, RunOptions, ScriptEntry};

const HANG: Duration = Duration::from_secs(30);

/// A client whose first answer stalls until its turn is cancelled, then answers "later".
fn stalling_client() -> Client {
    let stall = ScriptEntry {
        stall: true,
        ..Default::default()
    };
    Client::builder()
        .script(vec![stall, ScriptEntry::text("later")])
        .builtins(Vec::<String>::new())
        .build()
        .unwrap()
}

fn user_prompts(client: &Client) -> Vec<String> {
    client
        .transcript()
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User { .. } => Some(m.text().into_owned()),
            _ => None,
        })
        .collect()
}

/// Wait until the first turn holds the client (its model request is out).
async fn until_requested(run: &mut contenox::Run) {
    tokio::time::timeout(HANG, async {
        while let Some(e) = run.next_event().await {
            if e.kind() == "request" {
                return;
            }
        }
        panic!("the first turn ended early");
    })
    .await
    .expect("no request event");
}

#[tokio::test]
async fn a_cancelled_queued_turn_leaves_the_conversation_unchanged() {
    let client = stalling_client();
    let mut first = client.stream("first").unwrap();
    until_requested(&mut first).await;

    let mut second = client.stream("second").unwrap();
    second.cancel();
    let events = tokio::time::timeout(HANG, async {
        let mut events = Vec::new();
        while let Some(e) = second.next_event().await {
            events.push(e);
        }
        events
    })
    .await
    .expect("the cancelled queued turn did not end while the first one runs");
    let kinds: Vec<&str> = events.iter().map(Event::kind).collect();
    assert_eq!(kinds, ["turn_start", "turn_end"]);
    assert!(matches!(
        &events[1],
        Event::TurnEnd {
            outcome: Outcome::Cancelled,
            ..
        }
    ));
    let result = second.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(!result
        .transcript
        .messages
        .iter()
        .any(|m| *m == Message::user("second")));

    first.cancel();
    assert_eq!(first.result().await.unwrap().outcome, Outcome::Cancelled);
    assert_eq!(user_prompts(&client), ["first"]);
    // The client goes on normally.
    let third = client.run("third").await.unwrap();
    assert_eq!(third.outcome, Outcome::Done);
    assert_eq!(user_prompts(&client), ["first", "third"]);
}

#[tokio::test]
async fn a_dropped_queued_run_leaves_the_conversation_unchanged() {
    let client = stalling_client();
    let mut first = client.stream("first").unwrap();
    until_requested(&mut first).await;
    drop(client.stream("second").unwrap());
    first.cancel();
    first.result().await.unwrap();
    // Turns run in order: once this one is done, the dropped one has had its chance.
    let third = tokio::time::timeout(HANG, client.run("third"))
        .await
        .expect("the third turn hung")
        .unwrap();
    assert_eq!(third.outcome, Outcome::Done);
    assert_eq!(user_prompts(&client), ["first", "third"]);
}

#[tokio::test]
async fn a_turn_whose_token_is_cancelled_before_it_runs_appends_nothing() {
    let client = stalling_client();
    let token = CancellationToken::new();
    token.cancel();
    let result = client
        .run_with("never", RunOptions::default().cancel(token))
        .await
        .unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(client.transcript().messages.is_empty());
}
