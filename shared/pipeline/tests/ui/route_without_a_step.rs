// A route for `policy.passed`: the human gate before publishing, which no stage consumes, so
// no step can handle it.

use harmonia_contracts::event::PolicyPassed;
use harmonia_pipeline::registry::Route;

fn main() {
    let _route = Route::of::<PolicyPassed>();
}
