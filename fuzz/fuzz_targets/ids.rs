//! Every id newtype's `FromStr` (and the other constrained values parsed at the edge: the
//! language tag, a posting window's local time, a time-zone name). An id that parses prints
//! as the same text, and `stable` names any text with a valid id, the same one every time.
#![no_main]

use harmonia_contracts::domain::{LanguageTag, LocalTime, TimeZoneName};
use harmonia_contracts::ids::{
    BriefId, DocId, DraftId, EventId, EvidenceId, FactId, JobId, OperatorId, PlanItemId, PostId, SignalId, SnapshotId,
    SourceId, WorkspaceId,
};
use libfuzzer_sys::fuzz_target;

macro_rules! check_ids {
    ($text:expr, $($id:ty),+) => {$(
        if let Ok(id) = $text.parse::<$id>() {
            assert_eq!(id.as_str(), $text);
        }
        let stable = <$id>::stable($text);
        assert!(stable.as_str().parse::<$id>().is_ok(), "a stable id is valid");
        assert_eq!(<$id>::stable($text), stable);
    )+};
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    check_ids!(
        text,
        WorkspaceId,
        JobId,
        SourceId,
        EvidenceId,
        BriefId,
        PlanItemId,
        SnapshotId,
        DraftId,
        OperatorId,
        EventId,
        PostId,
        SignalId,
        FactId,
        DocId
    );
    let _ = text.parse::<LanguageTag>();
    let _ = text.parse::<LocalTime>();
    let _ = text.parse::<TimeZoneName>();
});
