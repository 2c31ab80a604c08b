use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::io::{A2uiVersion, ComponentNode, EntityKind, EntityRef, Layout, MayaInput};
use harmonia_contracts::tool::Provenance;

const MESSAGES: &str = include_str!("../../../../schemas/a2ui/v0_9/upstream/server_to_client.json");
const COMMON: &str = include_str!("../../../../schemas/a2ui/v0_9/upstream/common_types.json");
const BASIC: &str = include_str!("../../../../schemas/a2ui/v0_9/upstream/basic_catalog.json");
const HARMONIA: &str = include_str!("../../../../schemas/a2ui/v0_9/catalog.json");

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).expect("a JSON schema")
}

/// A server-to-client message validator with Harmonia's catalog in the slot the message
/// schema leaves for the surface's catalog (`catalog.json` beside it), offline.
fn validator() -> &'static jsonschema::Validator {
    static V: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let (common, basic, harmonia) = (parsed(COMMON), parsed(BASIC), parsed(HARMONIA));
        let registry = jsonschema::Registry::new()
            .add("https://a2ui.org/specification/v0_9/common_types.json", &common)
            .expect("common types")
            .add("https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json", &basic)
            .expect("basic catalog")
            .add("https://a2ui.org/specification/v0_9/catalog.json", &harmonia)
            .expect("Harmonia's catalog")
            .prepare()
            .expect("the registry");
        jsonschema::options().offline().with_registry(&registry).build(&parsed(MESSAGES)).expect("the message schema")
    })
}

fn errors(message: &Value) -> Vec<String> {
    validator().iter_errors(message).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

fn node(id: &str, component: Component) -> ComponentNode {
    ComponentNode { id: id.into(), component }
}

fn entity(kind: EntityKind, id: &str) -> Component {
    Component::Entity { entity: EntityRef { kind, id: id.into() } }
}

fn layout(root: &str, components: Vec<ComponentNode>) -> Layout {
    Layout {
        version: A2uiVersion::V09,
        surface_id: "job-view".into(),
        root: root.into(),
        components,
        provenance: Provenance::Mock,
    }
}

/// The catalog of a layout's entities, so Maya's validator can judge it.
fn catalog_of(layout: &Layout) -> MayaInput {
    let catalog = layout
        .components
        .iter()
        .filter_map(|n| match &n.component {
            Component::Entity { entity } => Some(entity.clone()),
            _ => None,
        })
        .collect();
    MayaInput { catalog, view: "job_view".into() }
}

/// Both messages validate, ids are unique, one is `root`, and every child is a component.
pub(crate) fn assert_valid(layout: &Layout) {
    let messages = layout.to_a2ui();
    assert_eq!(messages.len(), 2);
    for message in &messages {
        assert_eq!(errors(message), Vec::<String>::new(), "{message}");
    }
    let components = messages[1]["updateComponents"]["components"].as_array().expect("components");
    let ids: Vec<&str> = components.iter().filter_map(|c| c["id"].as_str()).collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "ids are unique: {ids:?}");
    assert!(unique.contains("root"), "a component is the root: {ids:?}");
    let referenced = components.iter().flat_map(|c| {
        let children = c["children"].as_array().into_iter().flatten().filter_map(Value::as_str);
        children.chain(c["child"].as_str())
    });
    for child in referenced {
        assert!(unique.contains(child), "{child} is a component: {ids:?}");
    }
}

#[test]
fn the_validator_refuses_what_the_renderer_refuses() {
    let card = json!({"id": "root", "component": "Card", "title": "Draft", "children": ["e"]});
    let update = json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [card]}});
    assert!(!errors(&update).is_empty(), "a card with a title and children, not one child");
    let create = json!({"version": "v0.9", "createSurface": {"surfaceId": "s", "root": "root"}});
    assert!(!errors(&create).is_empty(), "no catalog id, and a root the message has no field for");
    let unknown = json!({"id": "root", "component": "EntityView", "entity": {"kind": "credential", "id": "x"}});
    let update = json!({"version": "v0.9", "updateComponents": {"surfaceId": "s", "components": [unknown]}});
    assert!(!errors(&update).is_empty(), "an entity kind Harmonia does not have");
    let unversioned = json!({"createSurface": {"surfaceId": "s", "catalogId": CATALOG_ID}});
    assert!(!errors(&unversioned).is_empty(), "no version");
}

#[test]
fn a_layout_becomes_a_surface_of_harmonias_catalog_rooted_at_root_with_one_child_per_card() {
    let layout = layout(
        "page",
        vec![
            node("page", Component::Column { children: vec!["card".into(), "root".into()] }),
            node("card", Component::Card { title: "The draft".into(), children: vec!["draft".into()] }),
            node("draft", entity(EntityKind::Draft, "draft-1")),
            // The model's own "root" is not the root: it is renamed, and so is every reference.
            node("root", Component::Row { children: vec!["card-body".into()] }),
            node("card-body", entity(EntityKind::Job, "job-1")),
        ],
    );
    assert_valid(&layout);
    let messages = layout.to_a2ui();
    assert_eq!(
        messages[0],
        json!({"version": "v0.9", "createSurface": {"surfaceId": "job-view", "catalogId": CATALOG_ID}})
    );
    let components = &messages[1]["updateComponents"]["components"];
    assert_eq!(components[0], json!({"id": "root", "component": "Column", "children": ["card", "root-1"]}));
    assert_eq!(components[1], json!({"id": "card", "component": "Card", "child": "card-body-1"}));
    assert_eq!(
        components[2],
        json!({"id": "card-body-1", "component": "Column", "children": ["card-title-1", "draft"]})
    );
    assert_eq!(components[3], json!({"id": "card-title-1", "component": "Text", "text": "The draft", "variant": "h3"}));
    assert_eq!(
        components[4],
        json!({"id": "draft", "component": "EntityView", "entity": {"kind": "draft", "id": "draft-1"}})
    );
    assert_eq!(components[5], json!({"id": "root-1", "component": "Row", "children": ["card-body"]}));
}

#[test]
fn the_catalog_names_every_entity_kind_and_the_reference_bounds() {
    use strum::IntoEnumIterator;
    let harmonia = parsed(HARMONIA);
    assert_eq!(harmonia["catalogId"], CATALOG_ID);
    let view = &harmonia["components"]["EntityView"]["allOf"][2]["properties"]["entity"]["properties"];
    let kinds: Vec<Value> = EntityKind::iter().map(|k| json!(k.as_str())).collect();
    assert_eq!(view["kind"]["enum"], Value::Array(kinds));
    // EntityRef's own bounds (its schemars attributes).
    let reference = serde_json::to_value(schemars::schema_for!(EntityRef)).expect("schema");
    assert_eq!(view["id"]["maxLength"], reference["properties"]["id"]["maxLength"]);
    assert_eq!(view["id"]["minLength"], reference["properties"]["id"]["minLength"]);
    let basic = parsed(BASIC);
    let names = |c: &Value| c.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    let mut expected = names(&basic["components"]);
    expected.push("EntityView".into());
    expected.sort();
    let mut got = names(&harmonia["components"]);
    got.sort();
    assert_eq!(got, expected, "the basic catalog and EntityView");
}

#[test]
fn the_recorded_gemini_layout_validates() {
    let recorded: Value = parsed(include_str!("../../../../tests/recordings/job/gemini/maya.1.json"));
    let text = recorded["candidates"][0]["content"]["parts"][0]["text"].as_str().expect("the layout text");
    let text = text.replace("{{input:/catalog/0/kind}}", "job").replace("{{input:/catalog/1/kind}}", "source");
    let text = text.replace("{{input:/catalog/0/id}}", "job-1").replace("{{input:/catalog/1/id}}", "source-1");
    let layout: Layout = serde_json::from_str(&text).expect("a layout");
    crate::validate::maya(&catalog_of(&layout), &layout).expect("Maya's validator accepts it");
    assert_valid(&layout);
}

/// Any layout Maya's validator accepts: a tree of columns, rows and cards over entities, with
/// ids drawn from a small pool (so "root", "x-body" and "x-title" collide with added ids).
fn layouts() -> impl Strategy<Value = Layout> {
    let ids = prop::sample::select(vec!["root", "a", "a-body", "a-body-1", "a-title", "b", "c", "c-title-1", "d", "e"]);
    let kinds = prop::sample::select(<EntityKind as strum::IntoEnumIterator>::iter().collect::<Vec<_>>());
    (
        prop::collection::hash_set(ids, 1..10),
        prop::collection::vec((0_u8..4, kinds, "[a-z]{1,3}", "[A-Za-z ]{1,20}", any::<prop::sample::Index>()), 10),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(ids, shapes, root)| {
            let ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
            let components = ids
                .iter()
                .enumerate()
                .map(|(n, id)| {
                    // Containers point only at later ids, so the tree has no cycle.
                    let later: Vec<String> = ids[n + 1..].to_vec();
                    let (shape, kind, entity_id, title, pick) = &shapes[n];
                    let children =
                        if later.is_empty() { Vec::new() } else { vec![later[pick.index(later.len())].clone()] };
                    let component = match (shape, later.is_empty()) {
                        (_, true) | (0, _) => entity(*kind, entity_id),
                        (1, _) => Component::Column { children: later },
                        (2, _) => Component::Row { children },
                        _ => Component::Card { title: title.clone(), children },
                    };
                    node(id, component)
                })
                .collect();
            let root = ids[root.index(ids.len())].clone();
            layout(&root, components)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_layout_maya_can_produce_is_a_valid_surface(layout in layouts()) {
        prop_assume!(crate::validate::maya(&catalog_of(&layout), &layout).is_ok());
        assert_valid(&layout);
    }
}
