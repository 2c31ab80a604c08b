//! The deployable functions, by name.

use harmonia_contracts::event::Stage;
use strum::{Display, EnumString, IntoStaticStr, VariantArray};

/// Every deployable function: one Cloud Run service each, and one binary under `functions/`.
///
/// The names (`analyze`, `deadletter`, …) are the services', the binaries' and the
/// subscriptions' suffixes; Terraform's copy is checked against [`Function::ALL`].
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Display, EnumString, IntoStaticStr, VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum Function {
    /// Accepts sources and creates jobs.
    Ingest,
    /// The `analyze` stage.
    Analyze,
    /// The `strategize` stage.
    Strategize,
    /// The `plan` stage.
    Plan,
    /// The `draft` stage (first draft and revision).
    Draft,
    /// The `review` stage.
    Review,
    /// The `policy` stage.
    Policy,
    /// The `publish` stage.
    Publish,
    /// The `verify` stage.
    Verify,
    /// The operator API.
    Operator,
    /// Records every dead-lettered message.
    Deadletter,
    /// Nova, the read-only liaison.
    Nova,
    /// Hands scheduled posts that are due to publishing (Cloud Scheduler, every minute).
    Dispatch,
}

impl Function {
    /// Every function, in pipeline order.
    pub const ALL: &'static [Function] = <Function as VariantArray>::VARIANTS;

    /// The name (the service's, the binary's and the subscriptions' suffix).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The function that runs `stage`.
    pub const fn of(stage: Stage) -> Function {
        match stage {
            Stage::Ingest => Function::Ingest,
            Stage::Analyze => Function::Analyze,
            Stage::Strategize => Function::Strategize,
            Stage::Operator => Function::Operator,
            Stage::Plan => Function::Plan,
            Stage::Draft => Function::Draft,
            Stage::Review => Function::Review,
            Stage::Policy => Function::Policy,
            Stage::Publish => Function::Publish,
            Stage::Verify => Function::Verify,
        }
    }

    /// Whether this is a pipeline stage served by push deliveries (`analyze` … `verify`).
    pub const fn is_stage(self) -> bool {
        matches!(
            self,
            Function::Analyze
                | Function::Strategize
                | Function::Plan
                | Function::Draft
                | Function::Review
                | Function::Policy
                | Function::Publish
                | Function::Verify
        )
    }

    /// Whether the function only receives pushed messages (a stage or the dead-letter
    /// recorder) rather than requests from people.
    pub const fn is_pushed(self) -> bool {
        self.is_stage() || matches!(self, Function::Deadletter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_only_pipeline_stages_are_stages() {
        for f in Function::ALL {
            assert_eq!(f.as_str().parse::<Function>().ok(), Some(*f));
            assert_eq!(f.to_string(), f.as_str());
        }
        assert_eq!(Function::Deadletter.as_str(), "deadletter");
        assert!("summarize".parse::<Function>().is_err());
        let stages: Vec<&str> = Function::ALL.iter().filter(|f| f.is_stage()).map(|f| f.as_str()).collect();
        assert_eq!(stages, ["analyze", "strategize", "plan", "draft", "review", "policy", "publish", "verify"]);
        assert!(Function::Deadletter.is_pushed() && !Function::Operator.is_pushed() && !Function::Nova.is_pushed());
        for stage in Stage::ALL {
            assert_eq!(Function::of(stage).as_str(), stage.as_str());
        }
    }
}
