//! The `harmonia` command as an operator runs it: exit codes and the words on stderr.

use harmonia_e2e::FunctionProcess;

/// Run `harmonia ARGS` on a fresh embedded data dir; (exit code, stdout, stderr).
async fn harmonia(data_dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let skills = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../skills");
    let out = tokio::process::Command::new(FunctionProcess::cli())
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env("HARMONIA_SKILLS_DIR", skills)
        .output()
        .await
        .expect("run harmonia");
    let text = |b: Vec<u8>| String::from_utf8(b).expect("utf-8");
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[tokio::test]
async fn an_unknown_job_is_not_found_with_exit_1_in_every_command() {
    let dir = harmonia_testkit::temp_dir();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace.toml");
    let (code, _, err) = harmonia(dir.path(), &["workspace", "init", example.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    for args in [
        &["status", "job-nope"][..],
        &["activity", "job-nope"],
        &["approve", "job-nope", "strategy"],
        &["reject", "job-nope", "draft", "--reason", "Off brand."],
    ] {
        let (code, out, err) = harmonia(dir.path(), args).await;
        assert_eq!(code, 1, "{args:?}: {out} {err}");
        assert!(err.contains("[not_found]"), "{args:?}: {err}");
        assert!(!err.contains("Error {") && !err.contains("Some("), "a sentence, not debug formatting: {err}");
    }
}
