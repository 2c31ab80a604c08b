//! The parser over variable tables: every invalid value names its variable.

use std::collections::HashMap;

use secrecy::ExposeSecret;

use super::*;

/// `vars` as the environment, with a blob bucket named unless they name blobs themselves
/// (Firestore state, the default, needs one).
fn parse(vars: &[(&str, &str)]) -> Result<Config, Error> {
    let mut table: HashMap<String, OsString> = vars.iter().map(|(k, v)| ((*k).to_owned(), OsString::from(v))).collect();
    table.entry("HARMONIA_BLOBS".into()).or_insert_with(|| "gcs:harmonia-blobs".into());
    exactly(&table)
}

/// Exactly `table` as the environment.
fn exactly(table: &HashMap<String, OsString>) -> Result<Config, Error> {
    Config::from_lookup(|name| table.get(name).cloned())
}

#[test]
fn blobs_go_to_the_bucket_named_beside_a_sqlite_file_or_nowhere_unnamed() {
    let table = |vars: &[(&str, &str)]| -> HashMap<String, OsString> {
        vars.iter().map(|(k, v)| ((*k).to_owned(), OsString::from(v))).collect()
    };
    let gcs = exactly(&table(&[("HARMONIA_BLOBS", "gcs:harmonia-sources-1")])).expect("gcs");
    assert_eq!(gcs.blobs, BlobBackend::Gcs { bucket: "harmonia-sources-1".into() });
    let folder = exactly(&table(&[("HARMONIA_BLOBS", "folder:/data/blobs")])).expect("folder");
    assert_eq!(folder.blobs, BlobBackend::Folder("/data/blobs".into()));
    let beside = exactly(&table(&[("HARMONIA_STORE", "sqlite:/data/h.db")])).expect("sqlite");
    assert_eq!(beside.blobs, BlobBackend::Folder("/data/blobs".into()));
    // Firestore state with nowhere durable for blobs is refused at start-up, naming the variable.
    let unnamed = exactly(&table(&[])).expect_err("no bucket");
    assert_eq!(unnamed.variable, "HARMONIA_BLOBS");
    assert!(unnamed.expected.contains("gcs:<bucket>"), "{}", unnamed.expected);
    assert_eq!(gcs.sources_bucket, None);
    let sources = exactly(&table(&[("HARMONIA_BLOBS", "gcs:b-1"), ("HARMONIA_SOURCES_BUCKET", "acme-sources")]))
        .expect("sources");
    assert_eq!(sources.sources_bucket.as_deref(), Some("acme-sources"));
    let bad = exactly(&table(&[("HARMONIA_BLOBS", "gcs:b-1"), ("HARMONIA_SOURCES_BUCKET", "gs://acme")]));
    assert_eq!(bad.expect_err("not a bucket name").variable, "HARMONIA_SOURCES_BUCKET");
    for bad in ["s3:bucket", "gcs:", "gcs:Upper", "gcs:gs://b", "folder:", "folder:  "] {
        let e = exactly(&table(&[("HARMONIA_BLOBS", bad)])).expect_err(bad);
        assert_eq!(e.variable, "HARMONIA_BLOBS", "{bad}");
    }
}

fn refused(vars: &[(&str, &str)]) -> &'static str {
    match parse(vars) {
        Ok(_) => panic!("{vars:?} was accepted"),
        Err(e) => e.variable,
    }
}

#[test]
fn nothing_set_is_the_documented_defaults() {
    let c = parse(&[]).expect("defaults");
    assert!(c.require_project().is_err(), "the project has no default");
    assert_eq!((c.port, c.bind.to_string()), (8080, "0.0.0.0".to_owned()));
    assert_eq!(c.store, StoreBackend::Firestore { database: "(default)".into() });
    assert_eq!((&c.model, c.topic_prefix.as_str()), (&ModelBackend::Offline, ""));
    assert!(c.connector.is_none() && c.publishing.is_none(), "no connector of its own, nothing declared");
    assert_eq!((c.log_filter.as_str(), c.log_format), ("info", LogFormat::Text));
    assert_eq!(c.step_lease, Timing::CLOUD.model_ack_deadline);
    assert_eq!(c.model_repairs.get(), 2, "two corrective turns by default");
    assert_eq!(c.model_rpm, None, "no pace but the provider's by default");
    assert_eq!((c.otlp, c.google, c.fault_delay, c.fault_response_hold), (None, None, None, None));
    assert_eq!(c.fault_effect_hold, None);
}

#[test]
fn every_variable_is_parsed_into_its_field() {
    let c = parse(&[
        ("PORT", "9000"),
        ("HARMONIA_BIND", "127.0.0.1"),
        ("GOOGLE_CLOUD_PROJECT", "demo-project"),
        ("HARMONIA_STORE", "sqlite:/tmp/h.db"),
        ("HARMONIA_TOPIC_PREFIX", "test-1."),
        ("HARMONIA_MODEL", "vertex"),
        ("GEMINI_LOCATION", "europe-west4"),
        ("HARMONIA_CONNECTOR", "webhook"),
        ("WEBHOOK_URL", "https://hooks.example.com/harmonia/"),
        ("WEBHOOK_SECRET", "s3cret"),
        ("HARMONIA_PUBLISHING", r#"{"connector":"webhook"}"#),
        ("HARMONIA_GOOGLE_AUDIENCE", "https://operator.example.run.app"),
        ("HARMONIA_GOOGLE_PRINCIPALS", "/secrets/principals.json"),
        ("HARMONIA_SKILLS_DIR", "/app/skills"),
        ("HARMONIA_LOG", "harmonia=debug,info"),
        ("HARMONIA_LOG_FORMAT", "json"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://collector:4318/v1/traces"),
        ("OTEL_SERVICE_NAME", "harmonia-canary"),
        ("HARMONIA_STEP_LEASE_SECS", "20"),
        ("HARMONIA_MODEL_REPAIRS", "0"),
        ("HARMONIA_MODEL_RPM", "60"),
        ("HARMONIA_FAULT_DELAY_MS", "1500"),
        ("HARMONIA_FAULT_EFFECT_HOLD_MS", "250"),
        ("HARMONIA_FAULT_RESPONSE_HOLD_MS", "0"),
    ])
    .expect("valid");
    assert_eq!((c.port, c.require_project().ok()), (9000, Some("demo-project")));
    assert_eq!(c.store, StoreBackend::Sqlite("/tmp/h.db".into()));
    assert_eq!(c.topic_prefix, "test-1.");
    assert_eq!(c.model, ModelBackend::Vertex { location: "europe-west4".into(), model: "gemini-2.5-flash".into() });
    let Some(ConnectorBackend::Webhook { url, secret }) = &c.connector else { panic!("webhook") };
    assert_eq!((url.as_str(), secret.expose_secret()), ("https://hooks.example.com/harmonia", "s3cret"));
    assert!(!format!("{c:?}").contains("s3cret"), "the secret never reaches a log line");
    assert_eq!(c.publishing.map(|p| p.connector), Some(harmonia_contracts::domain::ConnectorKind::Webhook));
    assert_eq!(
        c.google,
        Some(GoogleTokens {
            jwks_url: GOOGLE_JWKS_URL.into(),
            audience: "https://operator.example.run.app".into(),
            principals: "/secrets/principals.json".into()
        })
    );
    assert_eq!(c.log_format, LogFormat::Json);
    assert_eq!(
        c.otlp,
        Some(OtlpExport { endpoint: endpoint("http://collector:4318"), service: Some("harmonia-canary".into()) })
    );
    assert_eq!(c.step_lease, Duration::from_secs(20));
    assert_eq!(c.model_repairs.get(), 0);
    assert_eq!(c.model_rpm.map(std::num::NonZeroU32::get), Some(60));
    assert_eq!(
        (c.fault_delay, c.fault_response_hold, c.fault_effect_hold),
        (Some(Duration::from_millis(1500)), None, Some(Duration::from_millis(250)))
    );
}

#[test]
fn the_issue_examples_name_their_variable() {
    assert_eq!(refused(&[("PORT", "abc")]), "PORT");
    assert_eq!(refused(&[("PORT", "70000")]), "PORT");
    assert_eq!(refused(&[("HARMONIA_STEP_LEASE_SECS", "-1")]), "HARMONIA_STEP_LEASE_SECS");
    assert_eq!(refused(&[("HARMONIA_STEP_LEASE_SECS", "0")]), "HARMONIA_STEP_LEASE_SECS");
    assert_eq!(refused(&[("HARMONIA_TOPIC_PREFIX", "bad prefix!")]), "HARMONIA_TOPIC_PREFIX");
    let e = parse(&[("PORT", "abc")]).err().map(harmonia_contracts::Error::from).expect("refused");
    assert_eq!(e.code, Code::InvalidConfig);
    assert!(e.message.starts_with("PORT "), "{}", e.message);
}

#[test]
fn the_gemini_api_takes_its_key_which_is_never_printed_and_vertex_ai_any_location() {
    let c = parse(&[
        ("HARMONIA_MODEL", "gemini"),
        ("GEMINI_API_KEY", "AIza-secret-key"),
        ("GEMINI_MODEL", "gemini-2.5-pro"),
    ])
    .expect("valid");
    assert_eq!(
        c.model,
        ModelBackend::Gemini {
            model: "gemini-2.5-pro".into(),
            api_key: "AIza-secret-key".into(),
            base_url: "https://generativelanguage.googleapis.com".into()
        }
    );
    assert!(!format!("{c:?}").contains("AIza-secret-key"), "the key never reaches a log line");
    let c = parse(&[
        ("HARMONIA_MODEL", "gemini"),
        ("GEMINI_API_KEY", "AIza-secret-key"),
        ("GEMINI_BASE_URL", "http://127.0.0.1:8089/"),
    ])
    .expect("valid");
    assert!(matches!(c.model, ModelBackend::Gemini { ref base_url, .. } if base_url == "http://127.0.0.1:8089"));
    let c = parse(&[
        ("HARMONIA_MODEL", "openai"),
        ("OPENAI_BASE_URL", "http://localhost:11434/v1/"),
        ("OPENAI_MODEL", "qwen2.5:7b"),
        ("OPENAI_API_KEY", "sk-proj-secret"),
    ])
    .expect("valid");
    assert_eq!(
        c.model,
        ModelBackend::OpenAi {
            base_url: "http://localhost:11434/v1".into(),
            model: "qwen2.5:7b".into(),
            api_key: Some("sk-proj-secret".into())
        }
    );
    assert!(!format!("{c:?}").contains("sk-proj-secret"));
    let c = parse(&[("HARMONIA_MODEL", "openai"), ("OPENAI_MODEL", "gpt-4.1-mini")]).expect("valid");
    assert_eq!(
        c.model,
        ModelBackend::OpenAi {
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4.1-mini".into(),
            api_key: None
        }
    );
    let c = parse(&[("HARMONIA_MODEL", "vertex"), ("GEMINI_LOCATION", "global")]).expect("valid");
    assert_eq!(c.model, ModelBackend::Vertex { location: "global".into(), model: "gemini-2.5-flash".into() });
}

#[test]
fn every_other_invalid_value_names_its_variable() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("HARMONIA_BIND", "localhost:80")], "HARMONIA_BIND"),
        (&[("GOOGLE_CLOUD_PROJECT", "my project")], "GOOGLE_CLOUD_PROJECT"),
        (&[("HARMONIA_STORE", "postgres")], "HARMONIA_STORE"),
        (&[("HARMONIA_STORE", "sqlite:")], "HARMONIA_STORE"),
        (&[("FIRESTORE_DATABASE", "a b")], "FIRESTORE_DATABASE"),
        (&[("HARMONIA_TOPIC_PREFIX", "goog-")], "HARMONIA_TOPIC_PREFIX"),
        (&[("HARMONIA_TOPIC_PREFIX", "1abc")], "HARMONIA_TOPIC_PREFIX"),
        (&[("HARMONIA_MODEL", "gpt")], "HARMONIA_MODEL"),
        (&[("HARMONIA_MODEL_REPAIRS", "6")], "HARMONIA_MODEL_REPAIRS"),
        (&[("HARMONIA_MODEL_RPM", "0")], "HARMONIA_MODEL_RPM"),
        (&[("HARMONIA_MODEL_RPM", "fast")], "HARMONIA_MODEL_RPM"),
        (&[("HARMONIA_MODEL_REPAIRS", "-1")], "HARMONIA_MODEL_REPAIRS"),
        (&[("HARMONIA_MODEL", "vertex"), ("GEMINI_LOCATION", "us central")], "GEMINI_LOCATION"),
        (&[("HARMONIA_MODEL", "vertex"), ("GEMINI_MODEL", "a b")], "GEMINI_MODEL"),
        (&[("HARMONIA_MODEL", "gemini")], "GEMINI_API_KEY"),
        (&[("HARMONIA_MODEL", "openai")], "OPENAI_MODEL"),
        (
            &[("HARMONIA_MODEL", "openai"), ("OPENAI_MODEL", "m"), ("OPENAI_BASE_URL", "localhost:11434")],
            "OPENAI_BASE_URL",
        ),
        (&[("HARMONIA_MODEL", "openai"), ("OPENAI_MODEL", "a model")], "OPENAI_MODEL"),
        (&[("HARMONIA_MODEL", "gemini"), ("GEMINI_API_KEY", " ")], "GEMINI_API_KEY"),
        (&[("HARMONIA_MODEL", "gemini"), ("GEMINI_API_KEY", "a key")], "GEMINI_API_KEY"),
        (
            &[("HARMONIA_MODEL", "gemini"), ("GEMINI_API_KEY", "k"), ("GEMINI_BASE_URL", "generativelanguage")],
            "GEMINI_BASE_URL",
        ),
        (&[("HARMONIA_CONNECTOR", "bluesky")], "HARMONIA_CONNECTOR"),
        (&[("HARMONIA_PUBLISHING", "webhook")], "HARMONIA_PUBLISHING"),
        (
            &[(
                "HARMONIA_PUBLISHING",
                r#"{"connector":"webhook","accounts":[{"platform":"x","handle":"@a","connector":"webhook"}]}"#,
            )],
            "HARMONIA_PUBLISHING",
        ),
        (&[("HARMONIA_CONNECTOR", "webhook"), ("WEBHOOK_SECRET", "s")], "WEBHOOK_URL"),
        (&[("HARMONIA_CONNECTOR", "webhook"), ("WEBHOOK_URL", "ftp://x"), ("WEBHOOK_SECRET", "s")], "WEBHOOK_URL"),
        (&[("HARMONIA_CONNECTOR", "webhook"), ("WEBHOOK_URL", "https://x")], "WEBHOOK_SECRET"),
        (&[("HARMONIA_GOOGLE_JWKS", "https://keys.example.com")], "HARMONIA_GOOGLE_AUDIENCE"),
        (&[("HARMONIA_GOOGLE_AUDIENCE", "https://a")], "HARMONIA_GOOGLE_PRINCIPALS"),
        (&[("HARMONIA_OPERATOR_CREDENTIALS", "/secrets/creds.json")], "HARMONIA_OPERATOR_CREDENTIALS"),
        (
            &[
                ("HARMONIA_GOOGLE_AUDIENCE", "a"),
                ("HARMONIA_GOOGLE_PRINCIPALS", "/p"),
                ("HARMONIA_GOOGLE_JWKS", "/keys.json"),
            ],
            "HARMONIA_GOOGLE_JWKS",
        ),
        (&[("HARMONIA_LOG", "info,[")], "HARMONIA_LOG"),
        (&[("HARMONIA_LOG_FORMAT", "xml")], "HARMONIA_LOG_FORMAT"),
        (&[("HARMONIA_OTLP_ENDPOINT", "collector:4318")], "HARMONIA_OTLP_ENDPOINT"),
        (&[("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url")], "OTEL_EXPORTER_OTLP_ENDPOINT"),
        (
            &[("HARMONIA_OTLP_ENDPOINT", "http://a:4318"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://b:4318")],
            "OTEL_EXPORTER_OTLP_ENDPOINT",
        ),
        (&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://a:4318/traces")], "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        (
            &[
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://a:4318/v1/traces"),
                ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://b:4318/v1/metrics"),
            ],
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        ),
        (&[("OTEL_SERVICE_NAME", "a\u{7}b")], "OTEL_SERVICE_NAME"),
        (&[("HARMONIA_FAULT_DELAY_MS", "soon")], "HARMONIA_FAULT_DELAY_MS"),
        (&[("HARMONIA_FAULT_EFFECT_HOLD_MS", "-5")], "HARMONIA_FAULT_EFFECT_HOLD_MS"),
        (&[("HARMONIA_FAULT_RESPONSE_HOLD_MS", "-5")], "HARMONIA_FAULT_RESPONSE_HOLD_MS"),
    ];
    for (vars, variable) in cases {
        assert_eq!(refused(vars), *variable, "{vars:?}");
    }
}

#[test]
fn per_signal_endpoints_alone_configure_the_collector() {
    let c = parse(&[
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://otel.example.com/v1/traces"),
        ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "https://otel.example.com/v1/metrics"),
    ])
    .expect("valid");
    assert_eq!(c.otlp, Some(OtlpExport { endpoint: endpoint("https://otel.example.com"), service: None }));
}

#[test]
fn blank_values_are_unset_and_non_utf8_values_are_refused() {
    assert_eq!(parse(&[("PORT", "  ")]).expect("blank is unset").port, 8080);
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0x66, 0xff]);
        let e = Config::from_lookup(|name| match name {
            "HARMONIA_LOG" => Some(bad.clone()),
            "HARMONIA_BLOBS" => Some("gcs:harmonia-blobs".into()),
            _ => None,
        })
        .err();
        assert_eq!(e.map(|e| e.variable), Some("HARMONIA_LOG"));
    }
}

proptest::proptest! {
    /// Any text in the three variables of the issue either parses or is refused naming that
    /// variable; nothing panics.
    #[test]
    fn any_value_parses_or_names_its_variable(
        variable in proptest::sample::select(vec!["PORT", "HARMONIA_STEP_LEASE_SECS", "HARMONIA_TOPIC_PREFIX"]),
        value in "\\PC{0,40}",
    ) {
        if let Err(e) = parse(&[(variable, value.as_str())]) {
            proptest::prop_assert_eq!(e.variable, variable);
        }
    }

    /// Every accepted prefix makes valid names for every topic and subscription of the
    /// registry, which panics on an invalid one.
    #[test]
    fn an_accepted_topic_prefix_names_every_registry_resource(prefix in "[a-zA-Z0-9._~+%-]{0,110}") {
        if let Ok(c) = parse(&[("HARMONIA_TOPIC_PREFIX", prefix.as_str())]) {
            let names = std::panic::catch_unwind(|| {
                let topics = harmonia_pipeline::registry::topics(&c.topic_prefix).len();
                let subscriptions = harmonia_pipeline::registry::subscriptions(&c.topic_prefix, Timing::CLOUD).len()
                    + harmonia_pipeline::registry::dead_letter_subscriptions(&c.topic_prefix, Timing::CLOUD).len();
                topics + subscriptions
            });
            proptest::prop_assert!(names.is_ok_and(|n| n > 0), "prefix {prefix:?} was accepted but names are invalid");
        }
    }
}

fn endpoint(url: &str) -> harmonia_telemetry::OtlpEndpoint {
    harmonia_telemetry::OtlpEndpoint::from_var("HARMONIA_OTLP_ENDPOINT", url).expect("a valid endpoint")
}

#[test]
fn the_nova_url_is_an_http_base_url_or_unset() {
    assert_eq!(parse(&[]).expect("unset").nova_url, None);
    let set = parse(&[("HARMONIA_NOVA_URL", "https://harmonia-nova-1.us-central1.run.app/")]).expect("https");
    assert_eq!(set.nova_url.as_deref(), Some("https://harmonia-nova-1.us-central1.run.app"));
    for bad in ["harmonia-nova", "ftp://nova", "https://"] {
        let e = parse(&[("HARMONIA_NOVA_URL", bad)]).expect_err(bad);
        assert_eq!(e.variable, "HARMONIA_NOVA_URL", "{bad}");
    }
}
