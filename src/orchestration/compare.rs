//! Compare: the same request to two (or more) models at once. Each answer is
//! an ordinary turn in its own lane, streaming concurrently with the others;
//! one cancel stops them all. Choosing between the answers (the vote) is the
//! front end's business.

use futures::future::join_all;
use tokio_util::sync::CancellationToken;

use super::chat::run_turn;
use super::{EventSink, TurnContext, TurnOutcome};

/// Run every context concurrently (each reports `TurnStarted` … `TurnFinished`
/// in its own lane); outcomes come back in the contexts' order.
pub async fn run_compare(contexts: Vec<TurnContext>, sink: &EventSink, cancel: CancellationToken) -> Vec<TurnOutcome> {
    join_all(
        contexts
            .into_iter()
            .map(|ctx| run_turn(ctx, sink, cancel.child_token())),
    )
    .await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tokio::time::Instant;

    use super::*;
    use crate::conversation::{Message, Params, TurnMode};
    use crate::orchestration::{OrchestratorEvent, TurnRef, event_channel};
    use crate::protocols::StreamEvent;
    use crate::testkit::{Scripted, ScriptedAdapter};

    fn ctx(lane: u8, adapter: Arc<ScriptedAdapter>) -> TurnContext {
        TurnContext {
            turn: TurnRef {
                turn_id: 4 + u32::from(lane),
                lane,
            },
            endpoint: format!("ep{lane}"),
            model: format!("m{lane}"),
            participant: None,
            mode: TurnMode::Compare,
            adapter,
            messages: vec![Message::user("Same question")],
            params: Params::default(),
            tools: vec![],
        }
    }

    fn paced(words: &[&str], gap: Duration) -> Vec<Scripted> {
        let mut v = vec![];
        for w in words {
            v.push(Scripted::Pause(gap));
            v.push(Scripted::Event(StreamEvent::Text((*w).into())));
        }
        v.push(Scripted::Event(StreamEvent::Finished("stop".into())));
        v
    }

    #[tokio::test(start_paused = true)]
    async fn both_answers_stream_at_the_same_time() {
        let left = ScriptedAdapter::new(vec![paced(&["a1 ", "a2 ", "a3"], Duration::from_secs(1))]);
        let right = ScriptedAdapter::new(vec![paced(&["b1 ", "b2 ", "b3"], Duration::from_secs(1))]);
        let (tx, mut rx) = event_channel();
        let t0 = Instant::now();
        let watch = tokio::spawn(async move {
            let mut order = vec![];
            while let Some(e) = rx.recv().await {
                if let OrchestratorEvent::Stream {
                    turn,
                    event: StreamEvent::Text(t),
                } = e
                {
                    order.push((turn.lane, t, Instant::now().duration_since(t0).as_secs()));
                }
            }
            order
        });
        let out = run_compare(
            vec![ctx(0, left.clone()), ctx(1, right.clone())],
            &tx,
            CancellationToken::new(),
        )
        .await;
        drop(tx);
        // Three seconds in all, not six: the two ran side by side.
        assert_eq!(Instant::now().duration_since(t0), Duration::from_secs(3));
        let texts: Vec<&str> = out.iter().map(|o| o.turn().response.text.as_str()).collect();
        assert_eq!(texts, ["a1 a2 a3", "b1 b2 b3"]);
        assert_eq!(out[1].turn().turn_id, 5);
        assert_eq!(out[1].turn().mode, TurnMode::Compare);
        assert_eq!(
            (out[0].turn().lane, out[1].turn().lane),
            (Some(0), Some(1)),
            "the record keeps the lane"
        );
        let order = watch.await.unwrap();
        let lanes: Vec<(u8, u64)> = order.iter().map(|(l, _, s)| (*l, *s)).collect();
        assert_eq!(lanes, [(0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)], "interleaved");
        assert_eq!(left.requests()[0].messages, right.requests()[0].messages);
    }

    #[tokio::test(start_paused = true)]
    async fn one_cancel_stops_both_and_keeps_their_partial_answers() {
        let slow = |w: &str| paced(&[w, " never"], Duration::from_secs(30));
        let left = ScriptedAdapter::new(vec![
            vec![Scripted::Event(StreamEvent::Text("L".into()))]
                .into_iter()
                .chain(slow(""))
                .collect(),
        ]);
        let right = ScriptedAdapter::new(vec![
            vec![Scripted::Event(StreamEvent::Text("R".into()))]
                .into_iter()
                .chain(slow(""))
                .collect(),
        ]);
        let (tx, _rx) = event_channel();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            c.cancel();
        });
        let out = run_compare(vec![ctx(0, left), ctx(1, right)], &tx, cancel).await;
        assert!(out.iter().all(|o| matches!(o, TurnOutcome::Cancelled(_))));
        assert_eq!(out[0].turn().response.text, "L");
        assert_eq!(out[1].turn().response.text, "R");
    }
}
