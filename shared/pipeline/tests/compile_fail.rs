//! Wiring the compiler refuses: a step whose payload travels on a topic another stage
//! consumes does not compile, so neither does a route to it.

#[test]
fn a_route_to_another_stage_s_topic_does_not_compile() {
    trybuild::TestCases::new().compile_fail("tests/ui/route_to_wrong_topic.rs");
}
