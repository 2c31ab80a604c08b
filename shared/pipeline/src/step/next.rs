//! The event that follows the one a step handles.

use harmonia_contracts::event::{EventPayload, Pass, StageEvent};

/// The event following `event` with `payload`: same workspace, job, round and pass, continuing
/// `event`'s trace.
pub fn next_event<P: EventPayload, Q: EventPayload>(event: &StageEvent<P>, payload: Q) -> StageEvent<Q> {
    next_event_in(event, event.pass, payload)
}

/// Like [`next_event`], in another pass (a review sending the draft back for its revision)
/// of the same round.
pub fn next_event_in<P: EventPayload, Q: EventPayload>(event: &StageEvent<P>, pass: Pass, payload: Q) -> StageEvent<Q> {
    StageEvent::in_round(event.workspace.clone(), event.job.clone(), event.round, pass, &event.traceparent, payload)
}

#[cfg(test)]
mod tests {
    use harmonia_contracts::event::{DraftWritten, RevisionRequested};
    use harmonia_contracts::ids::DraftId;
    use harmonia_contracts::trace::TraceParent;

    use super::*;

    #[test]
    fn the_next_event_keeps_workspace_job_and_pass_and_continues_the_trace() {
        let draft: DraftId = "draft-job-1-1".parse().expect("draft");
        let current = StageEvent::new(
            "ws-a".parse().expect("ws"),
            "job-1".parse().expect("job"),
            Pass::FIRST,
            &TraceParent::new_root(),
            DraftWritten { draft: draft.clone(), content_hash: "h".into() },
        );
        let next = next_event_in(&current, Pass::REVISION, RevisionRequested { draft });
        assert_eq!((&next.workspace, &next.job, next.pass), (&current.workspace, &current.job, Pass::REVISION));
        assert_eq!(next.traceparent.trace_id(), current.traceparent.trace_id());
        assert_ne!(next.traceparent.span_id(), current.traceparent.span_id());
        assert_eq!(
            next_event(&current, DraftWritten { draft: current.payload.draft.clone(), content_hash: "h".into() }).pass,
            Pass::FIRST
        );
    }
}
