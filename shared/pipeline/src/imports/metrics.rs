//! `harmonia import metrics FILE.csv`: measured post metrics.
//!
//! Columns: `post`, `platform`, `published_at`, `measured_at`, `impressions`, `reactions`,
//! `comments`, `shares`, `clicks`, `source`, `provenance` (required), `job` and `quotes` (optional).
//! One row per post: a post's row replaces its earlier measurement. Stored metrics are never
//! taken as verified on their own; `harmonia_agents::eligibility` decides what counts.

use harmonia_contracts::Error;
use harmonia_contracts::domain::PostMetrics;
use harmonia_contracts::ids::WorkspaceId;
use harmonia_store::Store;

use super::table::{self, Row, Spec};
use super::{Format, ImportKind, Summary, store_all, text};
use crate::records::doc_id;

/// The metrics file's columns.
pub(super) const SPEC: Spec = Spec {
    required: &[
        "post",
        "platform",
        "published_at",
        "measured_at",
        "impressions",
        "reactions",
        "comments",
        "shares",
        "clicks",
        "source",
        "provenance",
    ],
    optional: &["job", "quotes"],
};

/// Every row of a metrics CSV, validated; the first bad row is the error.
pub fn parse(csv: &str) -> Result<Vec<PostMetrics>, Error> {
    table::records(csv, Format::Csv, &SPEC, metric, |m| m.post.clone(), "post")
}

fn metric(row: &Row) -> Result<PostMetrics, Error> {
    let published_at = row.time("published_at")?;
    let measured_at = row.time("measured_at")?;
    if measured_at < published_at {
        return Err(row.invalid("measured_at", "a post is measured after it is published"));
    }
    Ok(PostMetrics {
        post: row.parsed("post", "a post id (letters, digits, `.`, `_`, `:` or `-`, at most 128) is expected")?,
        job: row.get("job").map(|_| row.parsed("job", "a job id is expected")).transpose()?,
        platform: row
            .named("platform", "one of x, linkedin, instagram, threads, bluesky, youtube, tiktok is expected")?,
        published_at,
        measured_at,
        offset: None,
        impressions: Some(row.count("impressions")?),
        reactions: row.count("reactions")?,
        comments: row.count("comments")?,
        shares: row.count("shares")?,
        quotes: row.get("quotes").map(|_| row.count("quotes")).transpose()?,
        clicks: Some(row.count("clicks")?),
        source: row.text("source", 200)?,
        provenance: row.named("provenance", "live or mock is expected")?,
    })
}

/// Validate the whole file, then store every row in one commit (or nothing).
pub async fn import(store: &dyn Store, workspace: &WorkspaceId, bytes: &[u8]) -> Result<Summary, Error> {
    let metrics = parse(text(bytes)?)?;
    let records: Vec<_> = metrics.into_iter().map(|m| (doc_id(&m.post), m)).collect();
    store_all(store, workspace, ImportKind::Metrics, &records).await
}
