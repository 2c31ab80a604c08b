//! Maya's A2UI layout: the deterministic validation the runtime applies to it
//! (`validate::maya`: unique ids, children and root exist, entities only from the catalog)
//! and its rendering as A2UI v0.9 messages. The layout is built with `arbitrary` from a small
//! alphabet of ids (one of them `root`, which the rendering must rename when it is not the
//! root), so that references resolve often enough to reach every check; a layout the
//! validator accepts renders as a surface whose ids are unique, one of which is `root`, and
//! whose every child reference names a component.
#![no_main]

use std::collections::HashSet;

use arbitrary::Arbitrary;
use harmonia_agents::io::{A2uiVersion, Component, ComponentNode, EntityKind, EntityRef, Layout, MayaInput};
use harmonia_agents::validate;
use harmonia_contracts::tool::Provenance;
use libfuzzer_sys::fuzz_target;

/// Ids are `c0`..`c6` and `root` (components) and `e0`..`e7` (entities).
fn id(prefix: char, n: u8) -> String {
    if prefix == 'c' && n % 8 == 7 { "root".to_owned() } else { format!("{prefix}{}", n % 8) }
}

#[derive(Arbitrary, Debug)]
enum Kind {
    Job,
    Source,
    Draft,
    Plan,
}

impl Kind {
    fn entity(&self) -> EntityKind {
        match self {
            Kind::Job => EntityKind::Job,
            Kind::Source => EntityKind::Source,
            Kind::Draft => EntityKind::Draft,
            Kind::Plan => EntityKind::Plan,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Node {
    Column(Vec<u8>),
    Row(Vec<u8>),
    Card(String, Vec<u8>),
    Entity(Kind, u8),
}

#[derive(Arbitrary, Debug)]
struct Input {
    surface: String,
    root: u8,
    nodes: Vec<(u8, Node)>,
    catalog: Vec<(Kind, u8)>,
}

fuzz_target!(|input: Input| {
    let children = |ids: &[u8]| ids.iter().map(|n| id('c', *n)).collect::<Vec<_>>();
    let entity = |kind: &Kind, n: u8| EntityRef { kind: kind.entity(), id: id('e', n) };
    let components: Vec<ComponentNode> = input
        .nodes
        .iter()
        .map(|(n, node)| ComponentNode {
            id: id('c', *n),
            component: match node {
                Node::Column(ids) => Component::Column { children: children(ids) },
                Node::Row(ids) => Component::Row { children: children(ids) },
                Node::Card(title, ids) => Component::Card { title: title.clone(), children: children(ids) },
                Node::Entity(kind, n) => Component::Entity { entity: entity(kind, *n) },
            },
        })
        .collect();
    let layout = Layout {
        version: A2uiVersion::V09,
        surface_id: input.surface,
        root: id('c', input.root),
        components,
        provenance: Provenance::Mock,
    };
    let maya = MayaInput {
        catalog: input.catalog.iter().map(|(kind, n)| entity(kind, *n)).collect(),
        view: "job_view".into(),
    };
    if validate::maya(&maya, &layout).is_ok() {
        let ids: HashSet<&str> = layout.components.iter().map(|c| c.id.as_str()).collect();
        assert!(ids.contains(layout.root.as_str()));
        let messages = layout.to_a2ui();
        assert_eq!(messages.len(), 2);
        let rendered = messages[1]["updateComponents"]["components"].as_array().expect("components");
        let names: Vec<&str> = rendered.iter().filter_map(|c| c["id"].as_str()).collect();
        let unique: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "unique ids");
        assert!(unique.contains("root"), "a root");
        for c in rendered {
            let children = c["children"].as_array().into_iter().flatten().filter_map(|v| v.as_str());
            for child in children.chain(c["child"].as_str()) {
                assert!(unique.contains(child), "{child} names a component");
            }
        }
        // The layout survives its JSON form, as the runtime reads it back from the model.
        let json = serde_json::to_value(&layout).expect("a layout serialises");
        assert_eq!(serde_json::from_value::<Layout>(json).ok(), Some(layout));
    }
});
