use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

const EXAMPLE: &str = include_str!("../../../../../examples/workspace.toml");

fn example() -> Value {
    toml::from_str(EXAMPLE).expect("the example is TOML")
}

/// The error of `value` (which must be refused): its code and message.
fn refused(value: &Value) -> Error {
    match WorkspaceConfig::from_value(value) {
        Ok(_) => panic!("accepted {value}"),
        Err(e) => e,
    }
}

#[test]
fn the_example_file_is_valid_and_defaults_fill_the_optional_keys() {
    let config = WorkspaceConfig::from_toml(EXAMPLE).expect("valid");
    assert_eq!(config.channels.len(), 4);
    assert_eq!(config.timezone.to_string(), "America/Denver");
    let minimal = r#"
        name = "Riverside Library"
        audience = "Library members"
        voice = "Warm"
        goals = ["More members"]
        call_to_action = "Get a card."
        mode = "production"
        [[channels]]
        platform = "bluesky"
        handle = "@library.example.org"
    "#;
    let config = WorkspaceConfig::from_toml(minimal).expect("valid");
    assert_eq!(config.timezone.to_string(), "UTC");
    assert_eq!((config.cadence.posts_per_week, config.cadence.max_posts_per_day), (3, 1));
    assert_eq!(config.posting_windows.len(), 1);
    assert!(config.link_allow_list.is_empty() && config.banned_phrases.is_empty());
    assert_eq!(config.channels[0].connector, super::super::ConnectorKind::Sandbox);
    assert_eq!(config.channels[0].max_characters, None);
    let instance = format!(
        "{minimal}\n[[channels]]\nplatform = \"mastodon\"\nhandle = \"@library@social.example\"\nmax_characters = 5000\n"
    );
    let config = WorkspaceConfig::from_toml(&instance).expect("a Mastodon limit is accepted");
    assert_eq!(config.channels[1].max_characters, Some(5000));
}

/// One bad file per row: what changes in the valid example, and the path the error must name.
#[test]
fn every_invalid_file_names_its_field_path() {
    type Edit = fn(&mut Value);
    let cases: &[(&str, Edit, &str)] = &[
        ("unknown top-level key", |v| v["colour"] = json!("blue"), "`colour`"),
        ("unknown channel key", |v| v["channels"][1]["colour"] = json!("blue"), "`channels[1].colour`"),
        ("wrong platform", |v| v["channels"][1]["platform"] = json!("myspace"), "`channels[1].platform`"),
        ("wrong connector", |v| v["channels"][0]["connector"] = json!("fax"), "`channels[0].connector`"),
        ("wrong mode", |v| v["mode"] = json!("staging"), "`mode`"),
        ("missing name", |v| drop(v.as_object_mut().map(|o| o.remove("name"))), "`name`"),
        (
            "missing handle",
            |v| drop(v["channels"][2].as_object_mut().map(|o| o.remove("handle"))),
            "`channels[2].handle`",
        ),
        ("empty name", |v| v["name"] = json!(""), "`name`"),
        ("blank name", |v| v["name"] = json!("   "), "`name`"),
        ("blank call to action", |v| v["call_to_action"] = json!(" "), "`call_to_action`"),
        ("name too long", |v| v["name"] = json!("n".repeat(201)), "`name`"),
        ("no goals", |v| v["goals"] = json!([]), "`goals`"),
        ("too many goals", |v| v["goals"] = json!(vec!["g"; 11]), "`goals`"),
        ("blank goal", |v| v["goals"] = json!(["ok", " "]), "`goals[1]`"),
        ("goal not text", |v| v["goals"] = json!(["ok", 3]), "`goals[1]`"),
        ("no channels", |v| v["channels"] = json!([]), "`channels`"),
        ("repeated channel", |v| v["channels"][1] = v["channels"][0].clone(), "`channels[1]`"),
        ("bad zone", |v| v["timezone"] = json!("Mars/Olympus"), "`timezone`"),
        ("zone not text", |v| v["timezone"] = json!(5), "`timezone`"),
        ("bad time", |v| v["posting_windows"][0]["start"] = json!("8am"), "`posting_windows[0].start`"),
        ("hour 24", |v| v["posting_windows"][0]["end"] = json!("24:00"), "`posting_windows[0].end`"),
        ("end before start", |v| v["posting_windows"][0]["end"] = json!("07:00"), "`posting_windows[0].end`"),
        ("bad day", |v| v["posting_windows"][0]["days"] = json!(["mon", "funday"]), "`posting_windows[0].days[1]`"),
        ("repeated day", |v| v["posting_windows"][0]["days"] = json!(["mon", "mon"]), "`posting_windows[0].days`"),
        ("no window days", |v| v["posting_windows"][0]["days"] = json!([]), "`posting_windows[0].days`"),
        ("host with scheme", |v| v["link_allow_list"] = json!(["https://x.org"]), "`link_allow_list[0]`"),
        ("cadence zero", |v| v["cadence"]["posts_per_week"] = json!(0), "`cadence.posts_per_week`"),
        (
            "daily above weekly",
            |v| v["cadence"] = json!({"posts_per_week": 1, "max_posts_per_day": 2}),
            "`cadence.max_posts_per_day`",
        ),
        (
            "channel above cadence",
            |v| v["channels"][0]["max_posts_per_day"] = json!(5),
            "`channels[0].max_posts_per_day`",
        ),
        (
            "character limit off Mastodon",
            |v| v["channels"][0]["max_characters"] = json!(1000),
            "`channels[0].max_characters`",
        ),
        ("character limit zero", |v| v["channels"][0]["max_characters"] = json!(0), "`channels[0].max_characters`"),
        ("blank banned phrase", |v| v["banned_phrases"] = json!(["  "]), "`banned_phrases[0]`"),
    ];
    for (what, edit, path) in cases {
        let mut value = example();
        edit(&mut value);
        let e = refused(&value);
        assert_eq!(e.code, Code::InvalidWorkspaceConfig, "{what}");
        assert!(e.message.contains(path), "{what}: {}", e.message);
    }
}

#[test]
fn enum_errors_list_the_allowed_values_and_never_the_given_one() {
    let mut value = example();
    value["channels"][1]["platform"] = json!("myspace");
    let e = refused(&value);
    assert!(e.message.contains("bluesky") && e.message.contains("linkedin"), "{}", e.message);
    assert!(!e.message.contains("myspace"), "{}", e.message);
}

#[test]
fn toml_syntax_errors_give_line_and_column_without_the_text() {
    let text = "name = \"A\"\naudience = \"secret-audience-text\nvoice = \"v\"\n";
    let e = WorkspaceConfig::from_toml(text).expect_err("not TOML");
    assert_eq!(e.code, Code::InvalidWorkspaceConfig);
    assert!(e.message.contains("line 2"), "{}", e.message);
    assert!(!e.message.contains("secret"), "{}", e.message);
    let unknown_in_table = EXAMPLE.replace("handle = \"field-notes\"", "handle = \"field-notes\"\nfollowers = 3");
    let e = WorkspaceConfig::from_toml(&unknown_in_table).expect_err("unknown key");
    assert!(e.message.contains("`channels[0].followers`"), "{}", e.message);
}

#[test]
fn pointers_become_the_files_own_paths() {
    assert_eq!(field_path("/channels/1/platform"), "channels[1].platform");
    assert_eq!(field_path("/posting_windows/0/days/3"), "posting_windows[0].days[3]");
    assert_eq!(field_path("/cadence/posts_per_week"), "cadence.posts_per_week");
    assert_eq!(field_path("/a~1b/c~0d"), "a/b.c~d");
    assert_eq!(field_path(""), "");
}

proptest! {
    /// Whatever the text, parsing ends in a valid configuration or `invalid_workspace_config`,
    /// and the message never repeats the text.
    #[test]
    fn arbitrary_text_is_refused_with_the_typed_code_and_not_echoed(text in "\\PC{0,200}") {
        let marked = format!("{text}\nzz_marker_Q9 = \"{text}\"");
        match WorkspaceConfig::from_toml(&marked) {
            Ok(_) => prop_assert!(false, "a file with an unknown key was accepted"),
            Err(e) => {
                prop_assert_eq!(e.code, Code::InvalidWorkspaceConfig);
                prop_assert!(!e.message.contains("\""), "{}", e.message);
            }
        }
    }

    /// An unknown key anywhere in a channel is named by its full path.
    #[test]
    fn an_unknown_channel_key_is_named_with_its_index(index in 0usize..4, key in "[a-z]{3,12}_x") {
        let mut value = example();
        value["channels"][index][key.as_str()] = json!(1);
        let e = refused(&value);
        let expected = format!("`channels[{index}].{key}`");
        prop_assert!(e.message.contains(&expected), "{}", e.message);
    }

    /// Any window whose end is not after its start is refused at that window's end.
    #[test]
    fn a_window_ending_before_it_starts_is_refused(start in 1u32..24, before in 0u32..24) {
        let end = before.min(start);
        let mut value = example();
        value["posting_windows"][0]["start"] = json!(format!("{start:02}:00"));
        value["posting_windows"][0]["end"] = json!(format!("{end:02}:00"));
        let e = refused(&value);
        prop_assert!(e.message.contains("`posting_windows[0].end`"), "{}", e.message);
    }
}

#[test]
fn a_configuration_written_as_toml_reads_back_as_the_same_configuration() {
    let held_out = include_str!("../../../../testkit/fixtures/riverside-library.toml");
    for text in [EXAMPLE, held_out] {
        let config = WorkspaceConfig::from_toml(text).expect("valid");
        let written = config.to_toml().expect("TOML");
        assert_eq!(WorkspaceConfig::from_toml(&written).expect("reads back"), config, "{written}");
    }
}
