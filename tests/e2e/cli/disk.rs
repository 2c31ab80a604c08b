//! The embedded default on a disk that fills up or cannot be written: a small tmpfs made by
//! each test (as root; where none can be mounted the test is skipped, and `infra/test.sh`
//! counts and names it in its summary line).

use std::path::{Path, PathBuf};
use std::time::Duration;

use harmonia_e2e::FunctionProcess;
use serde_json::Value;

/// How long one command may take before the test calls it hung (a command on a full disk must
/// end, with whatever it has to say).
const HUNG: Duration = Duration::from_secs(60);

/// A tmpfs of its own, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
    _holder: tempfile::TempDir,
}

impl Tmpfs {
    /// A tmpfs of `size` (as `mount -o size=` reads it), or why none can be mounted here.
    fn mount(size: &str) -> Result<Self, String> {
        let holder = harmonia_testkit::temp_dir();
        let dir = holder.path().join("disk");
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("mount could not run: {e}"))?;
        match out.status.success() {
            true => Ok(Self { dir, _holder: holder }),
            false => Err(format!("cannot mount a tmpfs here: {}", String::from_utf8_lossy(&out.stderr).trim())),
        }
    }

    /// Mount it read-only, or back writable.
    fn remount(&self, how: &str) {
        let out = std::process::Command::new("mount")
            .args(["-o", &format!("remount,{how}")])
            .arg(&self.dir)
            .output()
            .expect("mount");
        assert!(out.status.success(), "remount {how}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Fill it until `leave` bytes are left for writers; the filler file is `fill`.
    fn fill_leaving(&self, leave: u64) {
        let stat = rustix::fs::statvfs(&self.dir).expect("statvfs");
        let free = stat.f_bavail * stat.f_frsize;
        let fill = std::fs::File::create(self.dir.join("fill")).expect("fill");
        // Written, not sized: a tmpfs counts only the pages a file holds.
        let mut left = free.saturating_sub(leave);
        let chunk = vec![0u8; 64 * 1024];
        let mut w = std::io::BufWriter::new(fill);
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            if std::io::Write::write_all(&mut w, &chunk[..n]).is_err() {
                break;
            }
            left -= n as u64;
        }
        let _ = std::io::Write::flush(&mut w);
    }

    /// Free what [`fill_leaving`](Self::fill_leaving) took.
    fn free(&self) {
        std::fs::remove_file(self.dir.join("fill")).expect("free the space");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// The tmpfs, or the test is skipped: it says so where `infra/test.sh` counts it.
fn tmpfs_or_skip(test: &str, size: &str) -> Option<Tmpfs> {
    match Tmpfs::mount(size) {
        Ok(disk) => Some(disk),
        Err(why) => {
            harmonia_testkit::skipped(test, &why);
            None
        }
    }
}

/// `harmonia --data-dir DIR ARGS` that must end within [`HUNG`]; (exit code, stdout, stderr).
async fn harmonia(data_dir: &Path, args: &[&str]) -> (i32, String, String) {
    tokio::time::timeout(HUNG, FunctionProcess::run_cli(data_dir, args, &[], &[]))
        .await
        .unwrap_or_else(|_| panic!("`harmonia {}` did not end within {HUNG:?} on a full disk", args.join(" ")))
}

/// A data dir with the example workspace and one job of a source this test writes, waiting
/// for its strategy's approval: (data dir, job id).
async fn job_waiting_for_strategy(parent: &Path) -> (PathBuf, String) {
    let data = parent.join("data");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace.toml");
    let (code, _, err) = harmonia(&data, &["workspace", "init", example.to_str().expect("path")]).await;
    assert_eq!(code, 0, "{err}");
    let source = parent.join("ferry.vtt");
    std::fs::write(
        &source,
        "WEBVTT\n\n00:00:01.000 --> 00:00:05.000\nThe harbour ferry now leaves every forty minutes on weekdays.\n\n\
         00:00:05.000 --> 00:00:09.500\nRiders told us the early boat saved them twenty minutes a day.\n\n\
         00:00:09.500 --> 00:00:14.000\nTickets bought on the app cost one dollar less than at the pier.\n",
    )
    .expect("source");
    let (code, out, err) =
        harmonia(&data, &["--json", "run", source.to_str().expect("path"), "--title", "Ferry"]).await;
    assert_eq!(code, 0, "{err}");
    let run: Value = serde_json::from_str(out.lines().last().expect("json")).expect("json");
    assert_eq!(run["job"]["status"], "awaiting_strategy_approval", "{run}");
    (data, run["job"]["id"].as_str().expect("id").to_owned())
}

/// The job's status as `status --json` reads it.
async fn status_of(data: &Path, job: &str) -> String {
    let (code, out, err) = harmonia(data, &["--json", "status", job]).await;
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.lines().last().expect("json")).expect("json");
    v["jobs"][0]["job"]["status"].as_str().expect("status").to_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        match entry.file_type().expect("type").is_dir() {
            true => copy_dir(&entry.path(), &target),
            false => {
                std::fs::copy(entry.path(), target).expect("copy");
            }
        }
    }
}

#[tokio::test]
async fn a_full_disk_is_named_a_decision_stored_on_it_exits_0_and_freeing_space_carries_the_job_on() {
    let test = "cli::disk::a_full_disk_is_named_a_decision_stored_on_it_exits_0_and_freeing_space_carries_the_job_on";
    let Some(disk) = tmpfs_or_skip(test, "16m") else { return };
    let work = harmonia_testkit::temp_dir();
    let (original, job) = job_waiting_for_strategy(work.path()).await;
    let data = disk.dir.join("data");

    // Nothing left: a new source and a decision are refused as a full disk, naming the folder,
    // not retryable, and nothing is stored.
    copy_dir(&original, &data);
    disk.fill_leaving(0);
    let source = work.path().join("ferry.vtt");
    let (code, _, err) = harmonia(&data, &["--json", "run", source.to_str().expect("path")]).await;
    assert_eq!(code, 1, "{err}");
    let e: Value = serde_json::from_str(err.trim()).expect("json error");
    assert_eq!((e["error"]["code"].as_str(), e["error"]["retryable"].as_bool()), (Some("storage_full"), Some(false)));
    let message = e["error"]["message"].as_str().expect("message");
    assert!(message.contains(&data.display().to_string()) && message.contains("left"), "{message}");
    let (code, _, err) = harmonia(&data, &["approve", &job, "strategy"]).await;
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error [storage_full]: The disk holding "), "{err}");
    // `status` still answers, from the file as it is, and says why it only reads.
    let (code, out, err) = harmonia(&data, &["status", &job]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("[storage_full]"), "{err}");
    assert!(out.contains("awaiting_strategy_approval"), "{out}");
    disk.free();
    std::fs::remove_dir_all(&data).expect("clean");

    // From nothing to enough: wherever the space runs out, an approval that was stored exits 0
    // (saying what is left undone, and the command that carries it on), and one that was not
    // exits 1 with storage_full. Both happen.
    let (mut recorded_on_full, mut refused) = (0, 0);
    for kib in [0u64, 16, 32, 48, 64, 96, 128, 160, 192, 256, 320, 384, 512, 1024] {
        copy_dir(&original, &data);
        disk.fill_leaving(kib * 1024);
        let (code, out, err) = harmonia(&data, &["approve", &job, "strategy"]).await;
        disk.free();
        let after = status_of(&data, &job).await;
        match code {
            0 => {
                assert!(out.contains("Approved the strategy version"), "{kib} KiB: {out}");
                assert_ne!(after, "awaiting_strategy_approval", "{kib} KiB: exit 0, but nothing was stored");
                if err.contains("[storage_full]") || err.contains("is full") {
                    assert!(err.starts_with("warning: Recorded, but "), "{kib} KiB: {err}");
                    assert!(err.contains(&format!("Run `harmonia status {job}`")), "{kib} KiB: {err}");
                    recorded_on_full += 1;
                }
            }
            _ => {
                assert_eq!(code, 1, "{kib} KiB: {err}");
                assert!(err.contains("[storage_full]"), "{kib} KiB: {err}");
                assert_eq!(after, "awaiting_strategy_approval", "{kib} KiB: refused, yet stored");
                refused += 1;
            }
        }
        // Once there is space again the job carries on to its next gate (a refused approval is
        // simply taken again), and doctor is clean.
        if code != 0 {
            let (code, _, err) = harmonia(&data, &["approve", &job, "strategy"]).await;
            assert_eq!(code, 0, "{kib} KiB, with space again: {err}");
        }
        let after = status_of(&data, &job).await;
        assert_eq!(after, "awaiting_draft_approval", "{kib} KiB: the job did not carry on after space was freed");
        let (code, out, err) = harmonia(&data, &["doctor"]).await;
        assert_eq!(code, 0, "{kib} KiB: {out} {err}");
        assert!(out.contains("integrity: ok"), "{out}");
        std::fs::remove_dir_all(&data).expect("clean");
    }
    assert!(refused > 0, "no amount of space refused the approval");
    assert!(recorded_on_full > 0, "no approval was stored on a disk that then ran out");
}

#[tokio::test]
async fn a_read_only_data_dir_answers_what_only_reads_and_refuses_a_decision() {
    let test = "cli::disk::a_read_only_data_dir_answers_what_only_reads_and_refuses_a_decision";
    let Some(disk) = tmpfs_or_skip(test, "16m") else { return };
    let (data, job) = job_waiting_for_strategy(&disk.dir).await;
    let (code, added, err) = harmonia(&data, &["--json", "operator", "add", "ana", "--admin"]).await;
    assert_eq!(code, 0, "{err}");
    let added: Value = serde_json::from_str(&added).expect("operator json");
    let credential = added["credential"].as_str().expect("credential").to_owned();
    disk.remount("ro");
    for args in [
        &["status"][..],
        &["status", &job],
        &["show", &job],
        &["activity", &job],
        &["schedule"],
        &["doctor"],
        &["ask", "Which jobs are waiting for me?"],
    ] {
        let (code, out, err) = harmonia(&data, args).await;
        assert_eq!(code, 0, "{args:?}: {out} {err}");
        assert!(err.contains("note [storage_read_only]") && err.contains("read-only file system"), "{args:?}: {err}");
    }
    let (_, out, _) = harmonia(&data, &["show", &job]).await;
    assert!(out.contains("Awaiting a decision on the strategy"), "{out}");
    let (_, out, _) = harmonia(&data, &["doctor"]).await;
    assert!(out.contains("integrity: ok") && out.contains("every stored document can be read"), "{out}");
    assert!(out.contains("left behind: nothing"), "{out}");
    let (code, _, err) = harmonia(&data, &["--json", "approve", &job, "strategy"]).await;
    assert_eq!(code, 1, "{err}");
    let e: Value = serde_json::from_str(err.trim()).expect("json error");
    assert_eq!(
        (e["error"]["code"].as_str(), e["error"]["retryable"].as_bool()),
        (Some("storage_read_only"), Some(false))
    );

    // `serve` answers an operator's reads, and refuses their decision with the same code.
    let (mut serve, url) = FunctionProcess::serve_cli(&data, &[], &[], &[]).await;
    let client = harmonia_client::Client::new(&url, harmonia_client::Auth::from_text(&credential)).expect("client");
    let id: harmonia_contracts::ids::JobId = job.parse().expect("job id");
    let read = client.job(&id).await;
    let body = harmonia_client::api::DecisionBody {
        subject: harmonia_contracts::domain::ApprovalSubject::Strategy,
        decision: harmonia_client::api::DecisionKind::Approve,
        version: read.as_ref().ok().and_then(|j| j.awaiting_version.clone()).unwrap_or_default(),
        reason: None,
        feedback: None,
    };
    let decided = client.decide(&id, &body).await;
    serve.kill().await.expect("stop serve");
    let read = read.expect("a read through the API");
    assert_eq!(read.job.status.as_str(), "awaiting_strategy_approval");
    let refused = decided.expect_err("a decision on a read-only data dir");
    assert_eq!(refused.code, harmonia_contracts::Code::StorageReadOnly, "{refused}");

    // Writable again, the same data dir works as before: the decision is taken.
    disk.remount("rw");
    let (code, out, err) = harmonia(&data, &["approve", &job, "strategy"]).await;
    assert_eq!(code, 0, "{out} {err}");
    assert!(!err.contains("note ["), "{err}");
}
