//! The deployable functions, by name: the stages' from the one declaration of the stages
//! ([`harmonia_contracts::with_stages!`]), and three more.

use harmonia_contracts::event::Stage;
use strum::{Display, EnumString, IntoStaticStr, VariantArray};

macro_rules! functions {
    ($( $(#[$doc:meta])* $name:ident : $how:ident $($model:ident)?; )*) => {
        /// Every deployable function: one Cloud Run service each, and one binary under
        /// `functions/`: one per stage ([`harmonia_contracts::with_stages!`], where each is
        /// declared), then the dead-letter recorder, Nova and the dispatcher.
        ///
        /// The names (`analyze`, `deadletter`, …) are the services', the binaries' and the
        /// subscriptions' suffixes; Terraform's copy is checked against [`Function::ALL`].
        #[derive(
            Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Display, EnumString, IntoStaticStr, VariantArray,
        )]
        #[strum(serialize_all = "snake_case")]
        pub enum Function {
            $( $(#[$doc])* $name, )*
            /// Records every dead-lettered message.
            Deadletter,
            /// Nova, the read-only liaison.
            Nova,
            /// Hands scheduled posts that are due to publishing (Cloud Scheduler, every minute).
            Dispatch,
        }

        impl Function {
            /// The function that runs `stage`.
            pub const fn of(stage: Stage) -> Function {
                match stage {
                    $( Stage::$name => Function::$name, )*
                }
            }

            /// Whether this is a pipeline stage served by push deliveries (`analyze` … `verify`).
            pub const fn is_stage(self) -> bool {
                match self {
                    $( Function::$name => functions!(@pushed $how), )*
                    Function::Deadletter | Function::Nova | Function::Dispatch => false,
                }
            }
        }
    };
    (@pushed pushed) => { true };
    (@pushed $other:ident) => { false };
}

harmonia_contracts::with_stages!(functions);

impl Function {
    /// Every function, in pipeline order.
    pub const ALL: &'static [Function] = <Function as VariantArray>::VARIANTS;

    /// The name (the service's, the binary's and the subscriptions' suffix).
    pub fn as_str(self) -> &'static str {
        self.into()
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
