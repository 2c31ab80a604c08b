//! `fetch_trend_signals` and `search_trend_signals`: the public trend-signal dataset.

use std::time::Duration;

use async_trait::async_trait;
use harmonia_contracts::Code;
use harmonia_contracts::domain::TrendSignal;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_contracts::tool::Provenance;
use harmonia_store::Store;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::outcome::{Fail, Found, dataset, record};
use super::read::{every, read};
use super::{Limit, NovaTool, TREND_TIMEOUT};
use crate::data::{TREND_SIGNALS, public};

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

#[async_trait]
impl NovaTool for FetchTrendSignals {
    const NAME: &'static str = "fetch_trend_signals";
    const DESCRIPTION: &'static str = "Public trend signals, strongest first.";
    const DEADLINE: Duration = TREND_TIMEOUT;
    type Args = FetchArgs;

    async fn run(&self, store: &dyn Store, _: &WorkspaceId, args: FetchArgs) -> Result<Found, Fail> {
        let all = read(Self::DEADLINE, || signals(store)).await?;
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

#[async_trait]
impl NovaTool for SearchTrendSignals {
    const NAME: &'static str = "search_trend_signals";
    const DESCRIPTION: &'static str = "Public trend signals matching a query.";
    const DEADLINE: Duration = TREND_TIMEOUT;
    type Args = SearchArgs;

    async fn run(&self, store: &dyn Store, _: &WorkspaceId, args: SearchArgs) -> Result<Found, Fail> {
        let terms = terms(&args.query)?;
        let all = read(Self::DEADLINE, || signals(store)).await?;
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

/// Every public signal, strongest first (ties in id order). The whole dataset is read, page
/// by page, so that its size is reported truthfully.
async fn signals(store: &dyn Store) -> Result<Vec<TrendSignal>, Fail> {
    let mut all: Vec<TrendSignal> = every(store, &public(), TREND_SIGNALS).await?;
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
