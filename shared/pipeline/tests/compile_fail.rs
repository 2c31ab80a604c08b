//! Wiring the compiler refuses. A step is implemented on the payload it consumes and takes its
//! stage from the registry's binding of that payload, so a step cannot complete another
//! stage than its topic's; what remains to get wrong is a payload no stage consumes, and
//! neither a route for one nor a completion of one compiles. Nor can a route be written by
//! hand to point a step at another topic.

#[test]
fn a_route_for_a_payload_without_a_step_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/ui/route_without_a_step.rs");
}

#[test]
fn completing_a_payload_no_stage_consumes_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/ui/complete_an_unconsumed_payload.rs");
}

#[test]
fn a_route_to_the_wrong_topic_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/route_to_wrong_topic.rs");
    cases.compile_fail("tests/ui/route_repointed.rs");
}
