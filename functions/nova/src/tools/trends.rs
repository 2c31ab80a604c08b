//! `fetch_trend_signals` and `search_trend_signals`: the trend signals the workspace imported.

use harmonia_contracts::Code;
use harmonia_contracts::domain::TrendSignal;
use harmonia_contracts::tool::Provenance;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::outcome::{Fail, Found, dataset, record};
use super::read::Reads;
use super::{Limit, NovaTool};

/// Longest search query, in characters.
pub const MAX_QUERY_CHARS: usize = 200;

/// Public trend signals, strongest first.
#[derive(Clone, Copy, Debug, Default)]
pub struct FetchTrendSignals;

/// Arguments of `fetch_trend_signals`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchArgs {
    /// How many signals to return, strongest first.
    #[serde(default)]
    pub limit: Limit,
}

impl NovaTool for FetchTrendSignals {
    type Args = FetchArgs;

    async fn run(&self, reads: Reads<'_>, args: FetchArgs) -> Result<Found, Fail> {
        let all = signals(reads).await?;
        let total = all.len();
        answer(all.into_iter().take(args.limit.get()).collect(), total)
    }
}

/// Public trend signals whose topic or summary contains any word of a query.
#[derive(Clone, Copy, Debug, Default)]
pub struct SearchTrendSignals;

/// Arguments of `search_trend_signals`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words to look for in a signal's topic and summary; a signal matching any word is found.
    #[schemars(length(min = 1, max = 200))]
    pub query: String,
    /// How many matching signals to return, strongest first.
    #[serde(default)]
    pub limit: Limit,
}

impl NovaTool for SearchTrendSignals {
    type Args = SearchArgs;

    async fn run(&self, reads: Reads<'_>, args: SearchArgs) -> Result<Found, Fail> {
        let terms = terms(&args.query)?;
        let all = signals(reads).await?;
        let total = all.len();
        let found = all.into_iter().filter(|s| matches(s, &terms)).take(args.limit.get()).collect();
        answer(found, total)
    }
}

/// The lower-cased words of a query of 1-200 characters (after trimming).
fn terms(query: &str) -> Result<Vec<String>, Fail> {
    let query = query.trim();
    if query.is_empty() || query.chars().count() > MAX_QUERY_CHARS {
        return Err(Fail::code(Code::InvalidQuery, "The query must be non-empty text of at most 200 characters."));
    }
    Ok(query.to_lowercase().split_whitespace().map(str::to_owned).collect())
}

fn matches(signal: &TrendSignal, terms: &[String]) -> bool {
    let hay = format!("{} {}", signal.topic, signal.summary).to_lowercase();
    terms.iter().any(|t| hay.contains(t.as_str()))
}

/// Every signal the workspace imported, strongest first (ties in id order), once the caller
/// may read the workspace. The whole dataset is read, page by page, so that its size is
/// reported truthfully.
async fn signals(reads: Reads<'_>) -> Result<Vec<TrendSignal>, Fail> {
    reads.workspace().await?;
    let mut all: Vec<TrendSignal> = reads.trend_signals().await?;
    // Stable: `every` reads in id order, which breaks ties.
    all.sort_by_key(|s| std::cmp::Reverse(s.score));
    Ok(all)
}

/// The envelope data of `found` out of `total` signals, each citable, plus the dataset.
fn answer(found: Vec<TrendSignal>, total: usize) -> Result<Found, Fail> {
    let mut evidence = found.iter().map(|s| record(s.id.as_str(), s.provenance)).collect::<Result<Vec<_>, _>>()?;
    if !found.is_empty() {
        evidence.push(dataset("dataset-trend-signals", found.iter().any(|s| s.provenance == Provenance::Mock))?);
    }
    let items: Vec<Value> = found.iter().map(item).collect();
    Ok(Found::new([("count", json!(items.len())), ("signals", Value::Array(items)), ("dataset_size", json!(total))])
        .cite(evidence))
}

fn item(s: &TrendSignal) -> Value {
    json!({"evidence_id": s.id, "topic": s.topic, "summary": s.summary, "source": s.source, "url": s.url,
           "score": s.score, "observed_at": s.observed_at, "provenance": s.provenance})
}
