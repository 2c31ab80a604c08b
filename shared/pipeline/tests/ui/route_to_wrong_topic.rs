// Writing a route by hand that sends `source.ingested` to the draft stage: a route's topic and
// stage come only from `Route::of::<Payload>()`, so none can be written by hand.

use harmonia_contracts::event::{EventPayload, ItemSelected, SourceIngested};
use harmonia_pipeline::registry::Route;

fn main() {
    let _route = Route { topic: SourceIngested::TOPIC, ..Route::of::<ItemSelected>() };
}
