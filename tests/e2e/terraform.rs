//! Offline checks that keep the Terraform true to the code: the functions, topics and
//! subscriptions it declares are exactly the registry's; every push subscription
//! authenticates with OIDC and (for the pipeline) has a dead-letter policy; no service
//! account holds a primitive role or a role outside the documented table.

use std::collections::BTreeSet;

use harmonia_contracts::event::TOPICS;
use harmonia_pipeline::registry::{Function, ROUTES, SOURCE_UPLOADS};
use serde_json::Value;

/// The roles any identity may be granted (README, "Deploying").
const ALLOWED_ROLES: &[&str] = &[
    "roles/datastore.user",
    "roles/aiplatform.user",
    "roles/cloudtrace.agent",
    "roles/pubsub.publisher",
    "roles/pubsub.subscriber",
    "roles/secretmanager.secretAccessor",
    "roles/run.invoker",
    "roles/storage.objectCreator",
    "roles/storage.objectViewer",
];

/// What the code declares.
struct Code {
    functions: BTreeSet<String>,
    topics: BTreeSet<String>,
    routes: BTreeSet<(String, String, bool)>,
}

fn code() -> Code {
    Code {
        functions: Function::ALL.iter().map(|f| f.as_str().to_owned()).collect(),
        topics: TOPICS.iter().map(|(t, _)| *t).chain([SOURCE_UPLOADS]).map(str::to_owned).collect(),
        routes: ROUTES
            .iter()
            .map(|r| (r.function().as_str().to_owned(), r.topic().to_owned(), r.calls_model()))
            .chain([(Function::Ingest.as_str().to_owned(), SOURCE_UPLOADS.to_owned(), false)])
            .collect(),
    }
}

fn terraform(file: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../terraform").join(file))
        .expect("read terraform")
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)).collect()
}

/// Differences between the code's registry and `registry.tf`.
fn registry_problems(code: &Code, registry_tf: &str) -> Vec<String> {
    let parsed: Value = hcl::from_str(registry_tf).expect("registry.tf parses");
    let locals = &parsed["locals"];
    let mut problems = Vec::new();
    let tf_functions = strings(&locals["functions"]);
    let tf_topics = strings(&locals["topics"]);
    let tf_routes: BTreeSet<(String, String, bool)> = locals["routes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["function"].as_str().unwrap_or("").to_owned(),
                r["topic"].as_str().unwrap_or("").to_owned(),
                r["calls_model"] == true,
            )
        })
        .collect();
    for f in code.functions.symmetric_difference(&tf_functions) {
        problems.push(format!("function {f} is not in both the code and Terraform"));
    }
    for t in code.topics.symmetric_difference(&tf_topics) {
        problems.push(format!("topic {t} is not in both the code and Terraform"));
    }
    for r in code.routes.symmetric_difference(&tf_routes) {
        problems.push(format!("subscription {}.{} is not in both the code and Terraform", r.1, r.0));
    }
    let publishes = locals["publishes"].as_object().cloned().unwrap_or_default();
    for f in &code.functions {
        if !publishes.contains_key(f) {
            problems.push(format!("function {f} has no publish list"));
        }
    }
    problems
}

#[test]
fn terraform_declares_exactly_the_registry() {
    let problems = registry_problems(&code(), &terraform("registry.tf"));
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_stage_added_to_the_code_but_not_to_terraform_is_caught() {
    let mut grown = code();
    grown.functions.insert("summarize".into());
    grown.topics.insert("summary.requested".into());
    grown.routes.insert(("summarize".into(), "summary.requested".into(), true));
    let problems = registry_problems(&grown, &terraform("registry.tf"));
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems.iter().any(|p| p.contains("summarize")));
    // And a route removed from a copy of the Terraform is caught the other way round.
    let copy = terraform("registry.tf")
        .replace("    { function = \"verify\", topic = \"post.published\", calls_model = false },\n", "");
    let problems = registry_problems(&code(), &copy);
    assert!(problems.iter().any(|p| p.contains("post.published.verify")), "{problems:#?}");
}

#[test]
fn push_subscriptions_use_oidc_and_dead_letters_and_roles_are_least_privilege() {
    let main: Value = hcl::from_str(&terraform("main.tf")).expect("main.tf parses");
    let subs = main["resource"]["google_pubsub_subscription"].as_object().expect("subscriptions");
    assert_eq!(subs.len(), 2, "the pipeline's and the dead-letter recorder's");
    for (name, sub) in subs {
        let oidc = &sub["push_config"]["oidc_token"];
        assert!(
            oidc["service_account_email"].is_string() && oidc["audience"].is_string(),
            "{name} pushes with an OIDC token"
        );
        assert!(sub["retry_policy"].is_object(), "{name} has a retry policy");
    }
    let pipeline = &subs["push"];
    assert!(pipeline["dead_letter_policy"]["dead_letter_topic"].is_string(), "pipeline subscriptions dead-letter");
    let attempts = harmonia_pipeline::registry::Timing::CLOUD.max_attempts;
    assert_eq!(pipeline["dead_letter_policy"]["max_delivery_attempts"], attempts, "as the registry provisions them");

    let mut roles = Vec::new();
    for (kind, resources) in main["resource"].as_object().expect("resources") {
        if kind.ends_with("_iam_member") || kind.ends_with("_iam_binding") || kind.ends_with("_iam_policy") {
            assert!(!kind.ends_with("_iam_policy"), "{kind}: authoritative policies are not used");
            for (name, r) in resources.as_object().expect("resources") {
                roles.push((format!("{kind}.{name}"), r["role"].as_str().unwrap_or("").to_owned()));
            }
        }
    }
    assert!(roles.len() >= 8);
    for (resource, role) in roles {
        assert!(
            !matches!(role.as_str(), "roles/owner" | "roles/editor" | "roles/viewer"),
            "{resource} grants a primitive role"
        );
        assert!(ALLOWED_ROLES.contains(&role.as_str()), "{resource} grants {role}, outside the documented table");
    }
}

#[test]
fn the_container_build_copies_every_function_binary() {
    let dockerfile =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../infra/Dockerfile"))
            .expect("Dockerfile");
    let listed: BTreeSet<String> = dockerfile
        .lines()
        .find_map(|l| l.trim().strip_prefix("&& for f in ").or_else(|| l.trim().strip_prefix("for f in ")))
        .and_then(|rest| rest.split_once("; do"))
        .map(|(names, _)| names.split_whitespace().map(str::to_owned).collect())
        .expect("the Dockerfile's function loop");
    assert_eq!(listed, code().functions);
    // The image profile (stripped, thin LTO), not position-independent, for Cloud Run's
    // platform named as the target (so the flags reach the binaries only), for cook and build
    // alike so no dependency is compiled twice; the skills are compiled into the binaries, so
    // none is copied or pointed at.
    assert!(
        dockerfile.contains(r#"ENV HARMONIA_TARGET=x86_64-unknown-linux-gnu RUSTFLAGS="-C relocation-model=static""#)
    );
    assert!(
        dockerfile
            .contains(r#"cargo chef cook --profile image --target "$HARMONIA_TARGET" --locked --workspace --bins"#)
    );
    assert!(
        dockerfile.contains(r#"cargo build --profile image --target "$HARMONIA_TARGET" --locked --workspace --bins"#)
    );
    assert!(dockerfile.contains(r#"cp "target/$HARMONIA_TARGET/image/harmonia-$f""#));
    assert!(dockerfile.contains("USER nonroot") && dockerfile.contains("distroless"));
    assert!(!dockerfile.contains("HARMONIA_SKILLS_DIR"), "the image runs the skills it was built with");
}

/// The `for_each` expressions of a service's dynamic blocks named `block`, in order.
fn dynamic_for_each(container_or_template: &Value, block: &str) -> Vec<String> {
    let blocks = &container_or_template["dynamic"][block];
    let all: Vec<&Value> = match blocks {
        Value::Array(items) => items.iter().collect(),
        Value::Null => Vec::new(),
        one => vec![one],
    };
    all.iter().map(|b| b["for_each"].as_str().unwrap_or("").to_owned()).collect()
}

#[test]
fn channel_credentials_reach_only_the_connector_users_and_policy_is_told_where_posts_go() {
    let registry: Value = hcl::from_str(&terraform("registry.tf")).expect("registry.tf parses");
    let locals = &registry["locals"];
    let connector_users = strings(&locals["connector_users"]);
    let publishing_users = strings(&locals["publishing_users"]);
    // Publish sends, verify reads back, dispatch reads engagement and public trends.
    assert_eq!(connector_users, BTreeSet::from(["publish".to_owned(), "verify".to_owned(), "dispatch".to_owned()]));
    // Policy runs in its own function and again on an operator's edit: both must judge a
    // draft against the channels the connector users will publish to, not the sandbox.
    for f in ["policy", "operator"].iter().map(|s| s.to_string()).chain(connector_users.iter().cloned()) {
        assert!(publishing_users.contains(&f), "{f} is not told HARMONIA_PUBLISHING");
    }

    let main: Value = hcl::from_str(&terraform("main.tf")).expect("main.tf parses");
    let main_locals = &main["locals"];
    let readers = main_locals["channel_readers"].as_str().expect("channel_readers is an expression");
    assert!(readers.contains("local.connector_users"), "channel secrets are granted to the connector users: {readers}");
    let publishing = main_locals["publishing"].as_str().expect("publishing is an expression");
    assert!(!publishing.contains("secret"), "the declaration carries no credential: {publishing}");
    let channel_reader = &main["resource"]["google_secret_manager_secret_iam_member"]["channel_reader"];
    assert_eq!(channel_reader["for_each"], "${local.channel_readers}");
    assert_eq!(channel_reader["role"], "roles/secretmanager.secretAccessor");

    let template = &main["resource"]["google_cloud_run_v2_service"]["function"]["template"];
    let volumes = dynamic_for_each(template, "volumes");
    let channel_volumes: Vec<_> = volumes.iter().filter(|e| e.contains("var.channel_accounts")).collect();
    assert_eq!(channel_volumes.len(), 1, "{volumes:?}");
    assert!(channel_volumes[0].contains("contains(local.connector_users, each.value)"), "{volumes:?}");
    let containers = &template["containers"];
    let mounts = dynamic_for_each(containers, "volume_mounts");
    let channel_mounts: Vec<_> = mounts.iter().filter(|e| e.contains("var.channel_accounts")).collect();
    assert_eq!(channel_mounts.len(), 1, "{mounts:?}");
    assert!(channel_mounts[0].contains("contains(local.connector_users, each.value)"), "{mounts:?}");
    let envs = dynamic_for_each(containers, "env");
    assert!(
        envs.iter()
            .any(|e| e.contains("contains(local.publishing_users, each.value)") && e.contains("local.publishing")),
        "{envs:?}"
    );
    // The secrets directory is part of the connector settings, which only connector users get.
    let connector_env = main_locals["connector_env"].as_str().expect("connector_env is an expression");
    assert!(connector_env.contains("HARMONIA_CHANNEL_SECRETS"), "{connector_env}");
    assert!(
        envs.iter()
            .any(|e| e.contains("contains(local.connector_users, each.value)") && e.contains("local.connector_env")),
        "{envs:?}"
    );
}

#[test]
fn cloud_scheduler_ticks_the_dispatcher_every_minute_with_oidc_and_only_it_may_invoke_it() {
    let registry: Value = hcl::from_str(&terraform("registry.tf")).expect("registry.tf parses");
    let locals = &registry["locals"];
    assert_eq!(strings(&locals["scheduled_functions"]), BTreeSet::from(["dispatch".to_owned()]));
    assert_eq!(strings(&locals["publishes"]["dispatch"]), BTreeSet::from(["draft.approved".to_owned()]));

    let main: Value = hcl::from_str(&terraform("main.tf")).expect("main.tf parses");
    let job = &main["resource"]["google_cloud_scheduler_job"]["dispatch"];
    assert_eq!(job["schedule"], "* * * * *", "every minute");
    let target = &job["http_target"];
    assert_eq!(target["http_method"], "POST");
    assert_eq!(target["uri"], "${google_cloud_run_v2_service.function[\"dispatch\"].uri}/dispatch");
    let oidc = &target["oidc_token"];
    assert_eq!(oidc["service_account_email"], "${google_service_account.scheduler.email}");
    assert_eq!(oidc["audience"], "${google_cloud_run_v2_service.function[\"dispatch\"].uri}");

    // The scheduler's account invokes the dispatcher and nothing else; the push invoker does
    // not invoke the dispatcher.
    let members = main["resource"]["google_cloud_run_v2_service_iam_member"].as_object().expect("invoker grants");
    let scheduler = &members["scheduler_invoker"];
    assert_eq!(scheduler["for_each"], "${toset(local.scheduled_functions)}");
    assert_eq!(
        (scheduler["role"].as_str(), scheduler["member"].as_str()),
        (Some("roles/run.invoker"), Some("serviceAccount:${google_service_account.scheduler.email}"))
    );
    for (name, grant) in members {
        if name != "scheduler_invoker" {
            assert!(!grant["member"].as_str().unwrap_or("").contains("scheduler"), "{name} grants the scheduler more");
        }
    }
    let stage_functions = main["locals"]["stage_functions"].as_str().expect("stage_functions is an expression");
    assert!(
        stage_functions.contains("local.scheduled_functions"),
        "the push invoker's list leaves the dispatcher out: {stage_functions}"
    );
    let apis = main["locals"]["required_apis"].as_str().unwrap_or_default().to_owned() + &main["locals"].to_string();
    assert!(apis.contains("cloudscheduler.googleapis.com"), "the Cloud Scheduler API is enabled");
}

#[test]
fn the_operator_function_reaches_nova_as_itself_and_only_its_service_skips_invoker_iam_for_browsers() {
    let main: Value = hcl::from_str(&terraform("main.tf")).expect("main.tf parses");
    let service = &main["resource"]["google_cloud_run_v2_service"]["function"];
    assert_eq!(service["invoker_iam_disabled"], "${each.value == \"operator\" && var.operator_console}");
    let envs = dynamic_for_each(&service["template"]["containers"], "env");
    assert!(
        envs.iter().any(|e| e.contains("each.value == \"operator\"") && e.contains("local.public_urls[\"nova\"]")),
        "the operator function is told Nova's URL: {envs:?}"
    );
    let grant = &main["resource"]["google_cloud_run_v2_service_iam_member"]["operator_asks_nova"];
    assert_eq!(grant["name"], "${google_cloud_run_v2_service.function[\"nova\"].name}");
    assert_eq!(
        (grant["role"].as_str(), grant["member"].as_str()),
        (Some("roles/run.invoker"), Some("serviceAccount:${google_service_account.function[\"operator\"].email}"))
    );
}
