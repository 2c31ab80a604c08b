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

/// The coordinator: routes one task to its specialist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Harmonia;

/// The analyst: evidence moments and qualified angles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nimi;

/// The strategist: objective, audience, voice and briefs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ryan;

/// The editorial planner: the approved strategy as a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Temi;

/// The copywriter: one post for the selected item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noni;

/// The editor: the seven-dimension review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dara;

/// The presenter: A2UI layouts of catalog entities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Maya;

/// The read-only liaison: operators' questions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nova;

impl Role for Harmonia {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Harmonia;
    const TASK: Option<Task> = None;
    type Input = HarmoniaInput;
    type Output = RoutingDecision;

    /// The one specialist the task belongs to, and one of those offered.
    fn validate(input: &HarmoniaInput, decision: &RoutingDecision, _: Seen<'_>) -> Result<(), Miss> {
        if decision.specialist != input.task.specialist() || !input.specialists.contains(&decision.specialist) {
            return Err(Code::RoutingMismatch.into());
        }
        Ok(())
    }
}

impl Role for Nimi {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Nimi;
    const TASK: Option<Task> = Some(Task::Analyze);
    type Input = NimiInput;
    type Output = Analysis;

    fn validate(input: &NimiInput, output: &Analysis, seen: Seen<'_>) -> Result<(), Miss> {
        validate::nimi(input, output, seen.researched)
    }

    /// The source's title.
    fn research(input: &NimiInput) -> Option<Binding> {
        Some(Binding::new(&[("title", input.source.title.as_str())]))
    }
}

impl Role for Ryan {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Ryan;
    const TASK: Option<Task> = Some(Task::Strategize);
    type Input = RyanInput;
    type Output = Strategy;

    fn validate(input: &RyanInput, output: &Strategy, _: Seen<'_>) -> Result<(), Miss> {
        validate::ryan(input, output)
    }
}

impl Role for Temi {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Temi;
    const TASK: Option<Task> = Some(Task::Plan);
    type Input = TemiInput;
    type Output = Plan;

    fn validate(input: &TemiInput, output: &Plan, _: Seen<'_>) -> Result<(), Miss> {
        validate::temi(input, output)
    }

    fn snapshot(input: &TemiInput) -> Option<&SnapshotId> {
        Some(&input.snapshot_id)
    }
}

impl Role for Noni {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Noni;
    const TASK: Option<Task> = Some(Task::Draft);
    type Input = NoniInput;
    type Output = DraftOutput;

    fn validate(input: &NoniInput, output: &DraftOutput, seen: Seen<'_>) -> Result<(), Miss> {
        validate::noni(input, output, seen.researched)
    }

    /// The brief's key message, angle or audience.
    fn research(input: &NoniInput) -> Option<Binding> {
        let brief = &input.brief;
        Some(Binding::new(&[
            ("key_message", brief.key_message.as_str()),
            ("angle", brief.angle.as_str()),
            ("audience", brief.audience.as_str()),
        ]))
    }
}

impl Role for Dara {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Dara;
    const TASK: Option<Task> = Some(Task::Review);
    type Input = DaraInput;
    type Output = ReviewOutput;

    fn validate(input: &DaraInput, output: &ReviewOutput, _: Seen<'_>) -> Result<(), Miss> {
        Ok(validate::dara(input, output)?)
    }
}

impl Role for Maya {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Maya;
    const TASK: Option<Task> = Some(Task::Present);
    type Input = MayaInput;
    type Output = Layout;

    fn validate(input: &MayaInput, output: &Layout, _: Seen<'_>) -> Result<(), Miss> {
        Ok(validate::maya(input, output)?)
    }
}

impl Role for Nova {
    const ID: harmonia_contracts::Role = harmonia_contracts::Role::Nova;
    const TASK: Option<Task> = Some(Task::Answer);
    type Input = NovaInput;
    type Output = Answer;

    /// Against the real skill and tool sequence.
    fn validate(_: &NovaInput, output: &Answer, seen: Seen<'_>) -> Result<(), Miss> {
        Ok(validate::nova(output, seen.steps)?)
    }
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
