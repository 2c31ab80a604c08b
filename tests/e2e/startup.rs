//! Start-up refuses an invalid configuration: a real function binary, run as a child process
//! with one bad variable, exits non-zero at once with a typed error naming the variable.

use std::process::Stdio;
use std::time::Duration;

use harmonia_e2e::FunctionProcess;

/// Run `harmonia-policy` with `vars` on top of a valid embedded configuration; its exit status
/// and stderr.
async fn start_policy(vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = harmonia_testkit::temp_dir();
    let mut command = tokio::process::Command::new(FunctionProcess::binary("policy"));
    command
        .env_clear()
        .env("GOOGLE_CLOUD_PROJECT", "startup-test")
        .env("HARMONIA_STORE", format!("sqlite:{}", dir.path().join("h.db").display()))
        .env("HARMONIA_BIND", "127.0.0.1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in vars {
        command.env(k, v);
    }
    let child = command.spawn().expect("spawn harmonia-policy");
    // A refused configuration exits before anything starts; a started server would not exit,
    // so the bound only turns a regression into a failure instead of a hang.
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("a refused configuration exits promptly")
        .expect("wait");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[tokio::test]
async fn invalid_settings_stop_start_up_naming_the_variable() {
    for (variable, value) in
        [("PORT", "abc"), ("HARMONIA_STEP_LEASE_SECS", "-1"), ("HARMONIA_TOPIC_PREFIX", "bad prefix!")]
    {
        let (code, stderr) = start_policy(&[(variable, value)]).await;
        assert_eq!(code, Some(1), "{variable}={value}: {stderr}");
        assert!(stderr.contains(&format!("invalid_config: {variable} ")), "{variable}={value}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
