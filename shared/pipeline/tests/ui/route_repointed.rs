// Re-pointing the draft stage's route at `source.ingested` after building it: a route's topic is
// read-only.

use harmonia_contracts::event::{EventPayload, ItemSelected, SourceIngested};
use harmonia_pipeline::registry::Route;

fn main() {
    let mut route = Route::of::<ItemSelected>();
    route.topic = SourceIngested::TOPIC;
}
