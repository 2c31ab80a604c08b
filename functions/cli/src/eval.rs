//! `harmonia eval`: how well the configured model does each role's work, what it costs and how
//! long it takes. A folder of sources (`--sources DIR`; default the bundled examples) runs
//! through the model, each up to the draft gate with its strategy approved as an operator
//! would, in a throwaway data dir under a workspace configuration (`--config FILE`; default the
//! demo brand's, `examples/workspace.toml`): nothing is published and nothing of the command's
//! own data dir is read or written.
//!
//! It reports, per role, the invocations, the share that passed their contract on the first
//! answer and after the runtime's corrective turns, the repairs, every miss by code, the tokens
//! and the invocation latency (p50, p95); per source, whether it reached the draft gate, where
//! it stopped if not, its tokens and (with `--prices FILE`) its estimated cost.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use harmonia_contracts::domain::{
    ActivityOutcome, ActivityRecord, ApprovalSubject, Decision, Job, JobStatus, Operation,
};
use harmonia_contracts::ids::{JobId, WorkspaceId};
use harmonia_contracts::{Code, Error, Role};
use harmonia_local::Local;
use harmonia_pipeline::activity::percentile;
use harmonia_pipeline::formats::{self, Format};
use harmonia_pipeline::gates::{self, DecisionRequest};
use harmonia_pipeline::steps::ingest;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::app::Output;

/// How long one source may take to reach the draft gate.
const JOB_TIMEOUT: Duration = Duration::from_secs(600);

/// The bundled examples, the sources evaluated when no folder is named.
const BUNDLED: [(&str, &str); 3] = [
    ("launch-talk.json", include_str!("../../../examples/launch-talk.json")),
    ("ranger-briefing.srt", include_str!("../../../examples/ranger-briefing.srt")),
    ("trail-maintenance.vtt", include_str!("../../../examples/trail-maintenance.vtt")),
];

/// A price table (`--prices FILE`): US dollars per million tokens, by model name.
///
/// ```toml
/// [models."gpt-4.1-mini"]
/// input_per_million = 0.40
/// output_per_million = 1.60
/// ```
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceTable {
    models: BTreeMap<String, Price>,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Price {
    input_per_million: f64,
    output_per_million: f64,
}

impl Price {
    fn cost(self, input: u64, output: u64) -> f64 {
        (input as f64 * self.input_per_million + output as f64 * self.output_per_million) / 1_000_000.0
    }
}

/// The price of `model` in the table at `path`: `invalid_request` naming what is wrong.
fn price(path: &Path, model: &str) -> Result<Price, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(Code::NotFound, format!("The price table {} cannot be read.", path.display())).with_cause(e)
    })?;
    let table: PriceTable = toml::from_str(&text).map_err(|_| {
        Error::new(
            Code::InvalidRequest,
            "The price table must be TOML with a [models.\"NAME\"] table per model holding input_per_million and output_per_million (US dollars).",
        )
    })?;
    let price = table.models.get(model).copied().ok_or_else(|| {
        Error::new(Code::InvalidRequest, format!("The price table has no prices for the model {model}."))
    })?;
    let valid = |p: f64| p.is_finite() && p >= 0.0;
    if !valid(price.input_per_million) || !valid(price.output_per_million) {
        return Err(Error::new(Code::InvalidRequest, "Prices must be zero or more US dollars per million tokens."));
    }
    Ok(price)
}

/// The sources to evaluate: (name, bytes), in name order.
fn sources(dir: Option<&Path>) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let Some(dir) = dir else {
        return Ok(BUNDLED.iter().map(|(name, text)| ((*name).to_owned(), text.as_bytes().to_vec())).collect());
    };
    let unreadable = || Error::new(Code::NotFound, format!("The folder {} cannot be read.", dir.display()));
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|_| unreadable())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && Format::from_path(&p.to_string_lossy()).is_some())
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(Error::new(
            Code::InvalidRequest,
            format!("The folder {} holds no source (.json, .vtt or .srt files).", dir.display()),
        ));
    }
    found
        .into_iter()
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let bytes = std::fs::read(&p)
                .map_err(|e| Error::new(Code::NotFound, format!("The source {name} cannot be read.")).with_cause(e))?;
            Ok((name, bytes))
        })
        .collect()
}

/// One source's run.
#[derive(Debug, Serialize)]
struct JobResult {
    source: String,
    job: Option<JobId>,
    reached_draft_gate: bool,
    stopped_at: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: Option<f64>,
}

/// One role's figures.
#[derive(Debug, Default, Serialize)]
struct RoleResult {
    invocations: u32,
    first_try_pass_rate: f64,
    after_repair_pass_rate: f64,
    repairs: u32,
    failures: BTreeMap<String, u32>,
    input_tokens: u64,
    output_tokens: u64,
    latency_ms_p50: Option<f64>,
    latency_ms_p95: Option<f64>,
}

/// Each role's figures over `records` (every job's activity).
fn roles(records: &[ActivityRecord]) -> BTreeMap<&'static str, RoleResult> {
    let mut out = BTreeMap::new();
    for role in Role::ALL {
        let mine: Vec<&ActivityRecord> =
            records.iter().filter(|r| r.agent == role && r.operation != Operation::ToolCall).collect();
        let invocations: Vec<&ActivityRecord> =
            mine.iter().copied().filter(|r| matches!(r.operation, Operation::Invoke | Operation::Route)).collect();
        if mine.is_empty() {
            continue;
        }
        let n = u32::try_from(invocations.len()).unwrap_or(u32::MAX);
        let passed = |r: &&&ActivityRecord| r.outcome == ActivityOutcome::Success;
        let first = invocations.iter().filter(passed).filter(|r| r.repairs == 0).count();
        let after = invocations.iter().filter(passed).count();
        let rate = |k: usize| if n == 0 { 0.0 } else { k as f64 / f64::from(n) };
        let mut failures: BTreeMap<String, u32> = BTreeMap::new();
        for r in &invocations {
            for code in &r.repaired {
                *failures.entry(code.as_str().to_owned()).or_default() += 1;
            }
            if let ActivityOutcome::Failure { code } = r.outcome {
                *failures.entry(code.as_str().to_owned()).or_default() += 1;
            }
        }
        let mut latency: Vec<f64> = invocations.iter().map(|r| r.duration_us as f64 / 1000.0).collect();
        latency.sort_by(f64::total_cmp);
        out.insert(
            role.as_str(),
            RoleResult {
                invocations: n,
                first_try_pass_rate: rate(first),
                after_repair_pass_rate: rate(after),
                repairs: invocations.iter().map(|r| r.repairs).sum(),
                failures,
                input_tokens: mine.iter().map(|r| u64::from(r.usage.input_tokens)).sum(),
                output_tokens: mine.iter().map(|r| u64::from(r.usage.output_tokens)).sum(),
                latency_ms_p50: percentile(&latency, 0.50),
                latency_ms_p95: percentile(&latency, 0.95),
            },
        );
    }
    out
}

/// Drive `job` to the draft gate, approving its strategy as the operator at this machine.
/// The job where it rests, or the code that stopped it.
async fn to_draft_gate(env: &Local, ws: &WorkspaceId, job: &JobId) -> Result<Job, Error> {
    loop {
        let current = env.drive(ws, job, false, JOB_TIMEOUT, |_| {}).await?;
        if current.status != JobStatus::AwaitingStrategyApproval {
            return Ok(current);
        }
        let version = gates::current_version(&env.env, ws, &current, ApprovalSubject::Strategy).await?;
        let request = DecisionRequest {
            job: job.clone(),
            operator: "eval".parse()?,
            subject: ApprovalSubject::Strategy,
            decision: Decision::Approved,
            subject_hash: version,
            trace: None,
        };
        gates::decide(&env.env, ws, request).await?.finished()?;
    }
}

/// Why a job that did not reach the draft gate stopped: its failure's code, or the status it
/// rests at.
fn stopped_at(job: &Job) -> String {
    match (&job.failure, job.status) {
        (Some(f), _) => f.code.as_str().to_owned(),
        (None, JobStatus::PolicyBlocked) => Code::PolicyViolation.as_str().to_owned(),
        (None, other) => other.as_str().to_owned(),
    }
}

/// The workspace the evaluation runs in: configured from `config` (a workspace configuration
/// file), or the demo brand's.
async fn workspace(env: &Local, config: Option<&Path>) -> Result<WorkspaceId, Error> {
    let Some(path) = config else { return env.workspace().await };
    let text = std::fs::read_to_string(path).map_err(|_| {
        Error::new(Code::NotFound, format!("The workspace configuration {} cannot be read.", path.display()))
    })?;
    let config = harmonia_contracts::domain::WorkspaceConfig::from_toml(&text)?;
    let ws: WorkspaceId = "eval".parse()?;
    harmonia_pipeline::workspace::init(&*env.env.store, &ws, config, &"eval".parse()?).await?;
    env.prepare(&ws).await?;
    Ok(ws)
}

/// `harmonia eval [--sources DIR] [--config FILE] [--prices FILE]`, on `env` (a throwaway data
/// dir).
pub(crate) async fn eval(
    env: &Local,
    out: &Output,
    sources_dir: Option<&Path>,
    config: Option<&Path>,
    prices: Option<&Path>,
) -> Result<(), Error> {
    let model = env.model.name().to_owned();
    let price = prices.map(|p| price(p, &model)).transpose()?;
    let sources = sources(sources_dir)?;
    let ws = workspace(env, config).await?;
    out.say(&format!(
        "Evaluating {model} ({}) on {} source(s), each to the draft gate; nothing is published.",
        env.model.provider(),
        sources.len()
    ));
    let mut jobs = Vec::new();
    let mut records: Vec<ActivityRecord> = Vec::new();
    for (n, (name, bytes)) in sources.iter().enumerate() {
        let title = Path::new(name).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let format = Format::from_path(name).ok_or_else(|| Error::from_code(Code::SourceMalformed))?;
        let ingested = match formats::parse(bytes, format, &title, "en") {
            Ok(input) => ingest(&env.env, &ws, input, None, None).await,
            Err(e) => Err(e),
        };
        let job = match ingested {
            Ok(job) => job,
            Err(e) => {
                out.say(&format!("  [{}/{}] {name}: refused at ingest ({})", n + 1, sources.len(), e.code));
                jobs.push(JobResult {
                    source: name.clone(),
                    job: None,
                    reached_draft_gate: false,
                    stopped_at: Some(e.code.as_str().to_owned()),
                    input_tokens: 0,
                    output_tokens: 0,
                    cost_usd: price.map(|_| 0.0),
                });
                continue;
            }
        };
        let reached = to_draft_gate(env, &ws, &job.id).await;
        // The job's activity as it stands now: a step a stalled job retries later is not
        // counted.
        let mine = harmonia_pipeline::detail::activity(&env.env, &ws, &job.id).await?;
        let (input, output) =
            mine.iter().filter(|r| r.operation != Operation::ToolCall).fold((0u64, 0u64), |(i, o), r| {
                (i + u64::from(r.usage.input_tokens), o + u64::from(r.usage.output_tokens))
            });
        let (reached_draft_gate, stopped) = match reached {
            Ok(rests) if rests.status == JobStatus::AwaitingDraftApproval => (true, None),
            Ok(rests) => (false, Some(stopped_at(&rests))),
            Err(e) => (false, Some(e.code.as_str().to_owned())),
        };
        out.say(&format!(
            "  [{}/{}] {name}: {} ({input} input and {output} output tokens)",
            n + 1,
            sources.len(),
            match &stopped {
                None => "reached the draft gate".to_owned(),
                Some(code) => format!("stopped at {code}"),
            }
        ));
        records.extend(mine);
        jobs.push(JobResult {
            source: name.clone(),
            job: Some(job.id.clone()),
            reached_draft_gate,
            stopped_at: stopped,
            input_tokens: input,
            output_tokens: output,
            cost_usd: price.map(|p| p.cost(input, output)),
        });
    }
    let roles = roles(&records);
    out.say("");
    for line in role_lines(&roles) {
        out.say(&format!("  {line}"));
    }
    out.say("");
    for line in job_lines(&jobs) {
        out.say(&format!("  {line}"));
    }
    if price.is_none() {
        out.say("");
        out.say("No price table was given (--prices FILE): tokens only.");
    }
    out.value(&json!({ "model": model, "provider": env.model.provider(), "roles": roles, "jobs": jobs }));
    Ok(())
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

fn millis(ms: Option<f64>) -> String {
    match ms {
        Some(m) if m < 10.0 => format!("{m:.1}"),
        Some(m) => format!("{m:.0}"),
        None => "-".into(),
    }
}

/// The roles' table.
fn role_lines(roles: &BTreeMap<&'static str, RoleResult>) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<9} {:>11} {:>9} {:>13} {:>7} {:>10} {:>8} {:>7} {:>7}  {}",
        "ROLE",
        "INVOCATIONS",
        "FIRST TRY",
        "AFTER REPAIRS",
        "REPAIRS",
        "TOKENS IN",
        "OUT",
        "P50 MS",
        "P95 MS",
        "MISSES"
    )];
    // In the pipeline's order.
    for role in Role::ALL {
        let Some(r) = roles.get(role.as_str()) else { continue };
        let misses: Vec<String> = r.failures.iter().map(|(code, n)| format!("{code} {n}")).collect();
        lines.push(format!(
            "{:<9} {:>11} {:>9} {:>13} {:>7} {:>10} {:>8} {:>7} {:>7}  {}",
            role.as_str(),
            r.invocations,
            percent(r.first_try_pass_rate),
            percent(r.after_repair_pass_rate),
            r.repairs,
            r.input_tokens,
            r.output_tokens,
            millis(r.latency_ms_p50),
            millis(r.latency_ms_p95),
            if misses.is_empty() { "-".to_owned() } else { misses.join(", ") }
        ));
    }
    lines
}

/// The sources' table.
fn job_lines(jobs: &[JobResult]) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<28} {:>10}  {:<24} {:>10} {:>8} {:>10}",
        "SOURCE", "DRAFT GATE", "STOPPED AT", "TOKENS IN", "OUT", "COST USD"
    )];
    for j in jobs {
        lines.push(format!(
            "{:<28} {:>10}  {:<24} {:>10} {:>8} {:>10}",
            j.source,
            if j.reached_draft_gate { "reached" } else { "no" },
            j.stopped_at.as_deref().unwrap_or("-"),
            j.input_tokens,
            j.output_tokens,
            j.cost_usd.map(|c| format!("{c:.4}")).unwrap_or_else(|| "-".into())
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), Some(10.0));
        assert_eq!(percentile(&values, 0.95), Some(19.0));
        assert_eq!(percentile(&[7.0], 0.95), Some(7.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn a_price_table_prices_its_model_and_refuses_what_it_cannot_read() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("prices.toml");
        std::fs::write(&file, "[models.\"gpt-4.1-mini\"]\ninput_per_million = 0.4\noutput_per_million = 1.6\n")
            .expect("write");
        let p = price(&file, "gpt-4.1-mini").expect("priced");
        assert!((p.cost(1_000_000, 500_000) - 1.2).abs() < 1e-9);
        assert_eq!(price(&file, "other").map(|_| ()).expect_err("refused").code, Code::InvalidRequest);
        std::fs::write(&file, "[models.m]\ninput_per_million = -1\noutput_per_million = 1\n").expect("write");
        assert_eq!(price(&file, "m").map(|_| ()).expect_err("refused").code, Code::InvalidRequest);
        std::fs::write(&file, "not toml [").expect("write");
        assert_eq!(price(&file, "m").map(|_| ()).expect_err("refused").code, Code::InvalidRequest);
    }
}
