//! The eight roles as types: each binds its input, its output, its contract ([`RoleSpec`]) and
//! its deterministic validator, so that `runtime.run_task::<Nimi>(&seed)` takes a
//! [`NimiInput`] and hands back an [`Analysis`], with nothing read by a string key.
//!
//! The markers are unit types named after the roles ([`Nimi`], [`Dara`], …); the contracts'
//! [`harmonia_contracts::Role`] enum names the same roles as data (in records, routing and
//! telemetry), and [`Role::ID`] ties each marker to its name.

use std::collections::HashSet;

use harmonia_contracts::Code;
use harmonia_contracts::domain::{Analysis, Plan, Strategy};
use harmonia_contracts::ids::{EvidenceId, SnapshotId};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::io::{
    Answer, DaraInput, DraftOutput, HarmoniaInput, Layout, MayaInput, NimiInput, NoniInput, NovaInput, ReviewOutput,
    RoutingDecision, RyanInput, Task, TemiInput,
};
use crate::research::Binding;
use crate::roles::{RoleSpec, spec};
use crate::runtime::Step;
use crate::validate::{self, Miss};

/// What an invocation saw before its answer, for the validator: the evidence ids its tools
/// and searches returned, and its real load and tool sequence.
#[derive(Clone, Copy, Debug)]
pub struct Seen<'a> {
    /// Evidence ids returned in this invocation (citable by its answer only).
    pub researched: &'a HashSet<&'a EvidenceId>,
    /// The steps it took.
    pub steps: &'a [Step],
    /// The answer's strings, read once by the instruction detector.
    pub read: &'a validate::Readings<'a>,
}

/// A role: its typed input, its typed output, its contract and its validator.
pub trait Role: Send + Sync + 'static {
    /// The role's name.
    const ID: harmonia_contracts::Role;
    /// The task it performs (the coordinator's word for it); `None` for the coordinator.
    const TASK: Option<Task>;
    /// What it is given: a projection holding only its allowed context.
    type Input: Serialize + Send + Sync;
    /// What it answers, once parsed and validated.
    type Output: DeserializeOwned + std::fmt::Debug + Send + Sync + 'static;

    /// Its contract: instruction, output key, skill rule, tool allow-list and output schema.
    fn spec() -> &'static RoleSpec {
        spec(Self::ID)
    }

    /// The deterministic checks on an answer beyond its JSON Schema.
    fn validate(input: &Self::Input, output: &Self::Output, seen: Seen<'_>) -> Result<(), Miss>;

    /// The planning snapshot its snapshot tools must read (Temi's), if any.
    fn snapshot(_input: &Self::Input) -> Option<&SnapshotId> {
        None
    }

    /// What its grounded search may be about, for a role with research.
    fn research(_input: &Self::Input) -> Option<Binding> {
        None
    }
}

/// Each role's marker type and its [`Role`]: name, task, input, output, the validator (a
/// function of the input, the parsed output and what the invocation saw) and, for a role with
/// research or snapshot tools, what they are bound to.
macro_rules! roles {
    ($(
        $(#[$doc:meta])*
        $name:ident: $task:expr, $input:ty => $output:ty, $validate:expr $(, { $($extra:tt)* })?;
    )*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name;

        impl Role for $name {
            const ID: harmonia_contracts::Role = harmonia_contracts::Role::$name;
            const TASK: Option<Task> = $task;
            type Input = $input;
            type Output = $output;

            fn validate(input: &$input, output: &$output, seen: Seen<'_>) -> Result<(), Miss> {
                let validate: fn(&$input, &$output, Seen<'_>) -> Result<(), Miss> = $validate;
                validate(input, output, seen)
            }

            $($($extra)*)?
        }
    )*};
}

/// Harmonia's check: the one specialist the task belongs to, and one of those offered.
fn routed(input: &HarmoniaInput, decision: &RoutingDecision) -> Result<(), Miss> {
    if decision.specialist != input.task.specialist() || !input.specialists.contains(&decision.specialist) {
        return Err(Code::RoutingMismatch.into());
    }
    Ok(())
}

roles! {
    /// The coordinator: routes one task to its specialist.
    Harmonia: None, HarmoniaInput => RoutingDecision, |input, decision, _| routed(input, decision);
    /// The analyst: evidence moments and qualified angles. Its searches are about the source's
    /// title.
    Nimi: Some(Task::Analyze), NimiInput => Analysis, |input, out, seen| validate::nimi(input, out, seen), {
        fn research(input: &NimiInput) -> Option<Binding> {
            Some(Binding::new(&[("title", input.source.title.as_str())]))
        }
    };
    /// The strategist: objective, audience, voice and briefs.
    Ryan: Some(Task::Strategize), RyanInput => Strategy, |input, out, seen| validate::ryan(input, out, seen.read);
    /// The editorial planner: the approved strategy as a plan, read from one snapshot.
    Temi: Some(Task::Plan), TemiInput => Plan, |input, out, _| validate::temi(input, out), {
        fn snapshot(input: &TemiInput) -> Option<&SnapshotId> {
            Some(&input.snapshot_id)
        }
    };
    /// The copywriter: one post for the selected item. Its searches are about the brief's key
    /// message, angle or audience.
    Noni: Some(Task::Draft), NoniInput => DraftOutput, |input, out, seen| validate::noni(input, out, seen), {
        fn research(input: &NoniInput) -> Option<Binding> {
            let brief = &input.brief;
            Some(Binding::new(&[
                ("key_message", brief.key_message.as_str()),
                ("angle", brief.angle.as_str()),
                ("audience", brief.audience.as_str()),
            ]))
        }
    };
    /// The editor: the seven-dimension review.
    Dara: Some(Task::Review), DaraInput => ReviewOutput, |input, out, _| Ok(validate::dara(input, out)?);
    /// The presenter: A2UI layouts of catalog entities.
    Maya: Some(Task::Present), MayaInput => Layout, |input, out, _| Ok(validate::maya(input, out)?);
    /// The read-only liaison: operators' questions, checked against the real skill and tool
    /// sequence.
    Nova: Some(Task::Answer), NovaInput => Answer, |_, out, seen| Ok(validate::nova(out, seen)?);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound<R: Role>() -> (harmonia_contracts::Role, Option<Task>) {
        assert_eq!(R::spec().role, R::ID);
        (R::ID, R::TASK)
    }

    #[test]
    fn each_marker_is_bound_to_its_own_name_task_and_spec() {
        let bound = [
            bound::<Harmonia>(),
            bound::<Nimi>(),
            bound::<Ryan>(),
            bound::<Temi>(),
            bound::<Noni>(),
            bound::<Dara>(),
            bound::<Maya>(),
            bound::<Nova>(),
        ];
        assert_eq!(bound.map(|(id, _)| id), harmonia_contracts::Role::ALL);
        for (id, task) in bound {
            assert_eq!(task.map(Task::specialist), (id != harmonia_contracts::Role::Harmonia).then_some(id));
        }
    }
}
