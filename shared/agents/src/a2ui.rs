//! Maya's [`Layout`] as A2UI v0.9 messages, in the shape the official renderer accepts.
//!
//! A layout is what the model chose; the messages are what a renderer needs. Three things
//! differ, and this module bridges them:
//! - A v0.9 surface renders the component whose id is `root`, whatever else it is told: the
//!   layout's root becomes `root`, and a non-root component that the model called `root` gets
//!   a fresh id.
//! - A `Card` holds exactly one `child`: a card with a title and children becomes a `Card`
//!   whose child is a `Column` of a heading `Text` and the children.
//! - An entity is an `EntityView` carrying only its typed reference; the host hydrates it.
//!   `EntityView` is the one component Harmonia's catalog adds to the basic catalog.
//!
//! The catalog is `schemas/a2ui/v0_9/catalog.json`, named by [`CATALOG_ID`]; the upstream
//! message and basic-catalog schemas beside it are the renderer package's own, and every
//! layout Maya can produce is validated against them in this crate's tests.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::io::{Component, Layout};

/// The `catalogId` every Harmonia surface names: A2UI v0.9's basic catalog plus `EntityView`.
pub const CATALOG_ID: &str = "harmonia:catalog/v0.9";

/// The A2UI protocol version of the messages.
pub const VERSION: &str = "v0.9";

/// Component ids as the messages spell them: the root is `root`, every other id keeps its
/// name unless it is `root`, and ids this module adds never clash with the layout's.
struct Ids<'a> {
    renamed: HashMap<&'a str, String>,
    taken: HashSet<String>,
}

impl<'a> Ids<'a> {
    fn new(layout: &'a Layout) -> Self {
        let mut ids = Self { renamed: HashMap::new(), taken: layout.components.iter().map(|c| c.id.clone()).collect() };
        ids.taken.insert("root".to_owned());
        for node in &layout.components {
            let id = node.id.as_str();
            let name = if id == layout.root {
                "root".to_owned()
            } else if id == "root" {
                ids.fresh("root")
            } else {
                id.to_owned()
            };
            ids.renamed.insert(id, name);
        }
        ids
    }

    /// The id `id` has in the messages.
    fn of(&self, id: &str) -> String {
        self.renamed.get(id).cloned().unwrap_or_else(|| id.to_owned())
    }

    /// A new id starting with `base`, used by nothing else.
    fn fresh(&mut self, base: &str) -> String {
        let mut n = 1_usize;
        loop {
            let id = format!("{base}-{n}");
            if self.taken.insert(id.clone()) {
                return id;
            }
            n += 1;
        }
    }
}

impl Layout {
    /// The layout as A2UI v0.9 messages (`createSurface`, then `updateComponents`), for the
    /// host to hydrate: see the module docs for how cards, the root and entities are spelled.
    pub fn to_a2ui(&self) -> Vec<Value> {
        let mut ids = Ids::new(self);
        let mut components = Vec::with_capacity(self.components.len());
        for node in &self.components {
            let id = ids.of(&node.id);
            let children = |children: &[String]| children.iter().map(|c| ids.of(c)).collect::<Vec<_>>();
            match &node.component {
                Component::Column { children: c } => {
                    components.push(json!({"id": id, "component": "Column", "children": children(c)}));
                }
                Component::Row { children: c } => {
                    components.push(json!({"id": id, "component": "Row", "children": children(c)}));
                }
                Component::Card { title, children: c } => {
                    let mut inside = children(c);
                    let (body, heading) = (ids.fresh(&format!("{id}-body")), ids.fresh(&format!("{id}-title")));
                    inside.insert(0, heading.clone());
                    components.push(json!({"id": id, "component": "Card", "child": body}));
                    components.push(json!({"id": body, "component": "Column", "children": inside}));
                    components.push(json!({"id": heading, "component": "Text", "text": title, "variant": "h3"}));
                }
                Component::Entity { entity } => {
                    components.push(json!({"id": id, "component": "EntityView", "entity": entity}));
                }
            }
        }
        vec![
            json!({"version": VERSION, "createSurface": {"surfaceId": self.surface_id, "catalogId": CATALOG_ID}}),
            json!({"version": VERSION, "updateComponents": {"surfaceId": self.surface_id, "components": components}}),
        ]
    }
}

#[cfg(test)]
pub(crate) mod tests;
