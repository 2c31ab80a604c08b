// An `analyze` step consuming `draft.written`, the review stage's topic.

use harmonia_contracts::event::{DraftWritten, StageEvent};
use harmonia_pipeline::Env;
use harmonia_pipeline::registry::{Route, stage};
use harmonia_pipeline::step::{self, Step};

#[derive(Default)]
struct Analyze;

impl Step for Analyze {
    type Stage = stage::Analyze;
    type Payload = DraftWritten;

    async fn run(&self, _env: &Env, _event: &StageEvent<DraftWritten>) -> Result<(), step::Error> {
        Ok(())
    }
}

fn main() {
    let _route = Route::of::<Analyze>();
}
