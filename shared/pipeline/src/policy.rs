//! Policy as the pipeline runs it: the rules are [`harmonia_policy`]'s, pure functions of a
//! draft and what it cites; what a post may cite is read from the store here ([`evidence`]), and
//! the adversarial corpus runs the rules through the real entry points (the parsers, the
//! connectors' boundary and a real store), which is why it lives beside them.

pub use harmonia_policy::*;

pub(crate) mod evidence;

#[cfg(test)]
mod corpus;
