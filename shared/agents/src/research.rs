//! Research tools (Noni, Nimi) and the collections they read.
//!
//! - `search_verified_publications`: the tenant's own posts that have an applied receipt and a
//!   successful read-back verification — nothing else — with one record-level evidence id each.
//! - `google_search`: a grounded web search that the runtime runs as its own child invocation
//!   (its own span and activity record, operation `research`), isolated from the asking
//!   role's session. Its query is bound to the request: the model only picks which of the
//!   request's own fields to search for ([`Binding`]), never the words. The answer's grounding
//!   metadata is validated ([`accept`]): every support names a returned chunk, every chunk is
//!   https, every segment lies within the answer and matches it. Each page that supports a
//!   span becomes a [`ResearchEvidence`] record with a `web-*` id: citable in this invocation
//!   (the runtime records it in the trace), and persisted with the invocation's accepted
//!   output so that policy resolves it later. The offline model answers with
//!   `provenance: mock` results.
//!
//! Which memory facts reach Nimi and Ryan is decided by [`crate::eligibility`].

use async_trait::async_trait;
use chrono::Utc;
use harmonia_contracts::Role;
use harmonia_contracts::domain::{Publication, ResearchEvidence};
use harmonia_contracts::ids::{EvidenceId, JobId, PostId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Collection, decode_each, scan_all};
use serde_json::{Value, json};

use crate::model::{FunctionDeclaration, Grounding, ModelRequest, ModelResponse, Part, Speaker, Turn};
use crate::tools::{Tool, ToolContext, ToolFailure};

/// Publication records, one per approved draft (written by the publish and verify stages).
pub const PUBLICATIONS: Collection = Collection::new("publications");
/// Memory-bank facts.
pub const MEMORY: Collection = Collection::new("memory_facts");

fn query_arg(args: &Value) -> Result<String, ToolFailure> {
    let q = args.get("query").and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if q.is_empty() || q.chars().count() > 200 { Err(ToolFailure::InvalidArguments) } else { Ok(q.to_owned()) }
}

/// The evidence id of a verified post (`pub-<post>`, shortened stably if the post id is long):
/// what the search returns and what policy accepts as live evidence.
pub fn publication_evidence_id(post: &PostId) -> EvidenceId {
    EvidenceId::stable(&format!("{PUBLICATION_PREFIX}{post}"))
}

/// How every [`publication_evidence_id`] begins (a shortened one keeps its readable start).
const PUBLICATION_PREFIX: &str = "pub-";

/// Whether `id` can be a [`publication_evidence_id`]: one that does not begin as they all do
/// names no publication, so a reader need not look for it among them.
pub fn may_name_publication(id: &EvidenceId) -> bool {
    id.as_str().starts_with(PUBLICATION_PREFIX)
}

/// `search_verified_publications(query, limit)`.
pub struct SearchVerifiedPublications;

#[async_trait]
impl Tool for SearchVerifiedPublications {
    fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: crate::tools::names::SEARCH_VERIFIED_PUBLICATIONS.into(),
            description:
                "Read-only: this workspace's published posts that were applied and verified, matching a query.".into(),
            parameters: json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": 200},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10}},
                "required": ["query"], "additionalProperties": false}),
        }
    }

    async fn call(&self, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure> {
        let query = query_arg(args)?.to_lowercase();
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(5).clamp(1, 10);
        let limit = usize::try_from(limit).unwrap_or(5);
        let docs = scan_all(ctx.store, ctx.workspace, PUBLICATIONS).await.map_err(crate::tools::unavailable)?;
        let terms: Vec<&str> = query.split_whitespace().collect();
        let mut results = Vec::new();
        let mut evidence = Vec::new();
        for publication in decode_each::<Publication>(PUBLICATIONS, &docs) {
            let Some(post) = publication.verified_post() else { continue };
            let body = publication.body.to_lowercase();
            if !terms.iter().any(|t| body.contains(t)) {
                continue;
            }
            let evidence_id = publication_evidence_id(post);
            results.push(json!({"evidence_id": evidence_id, "post": post, "platform": publication.platform, "body": publication.body}));
            evidence.push(evidence_id);
            if results.len() == limit {
                break;
            }
        }
        Ok(json!({"results": results, "evidence": evidence}))
    }
}

/// The grounded web search's name, in an allow-list and in the trace.
pub const GOOGLE_SEARCH: &str = crate::tools::names::GOOGLE_SEARCH;

/// The longest query sent (characters); a longer field is cut at a word.
const QUERY_MAX: usize = 200;

/// The most spans one result keeps.
const SPANS_MAX: usize = 20;

/// What a role's search may be about: named fields of its own request, never text the model
/// writes. Nimi searches for the source's title; Noni for the brief's key message, angle or
/// audience. A field the instruction detector flags is not offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    fields: Vec<(&'static str, String)>,
}

impl Binding {
    /// A binding to `fields` of a request (name, text): a field that is empty or that the
    /// instruction detector flags is not offered.
    pub fn new(fields: &[(&'static str, &str)]) -> Self {
        let fields = fields
            .iter()
            .filter(|(_, text)| !text.trim().is_empty() && harmonia_contracts::untrusted::flagged(text).is_none())
            .map(|(name, text)| (*name, query_text(text)))
            .collect();
        Self { fields }
    }

    /// The query for `about` (a field name), or for the first field when the model named
    /// none; `None` for a field this request does not have.
    pub fn query(&self, about: Option<&str>) -> Option<&str> {
        match about {
            None => self.fields.first(),
            Some(name) => self.fields.iter().find(|(field, _)| *field == name),
        }
        .map(|(_, query)| query.as_str())
    }
}

/// `text` on one line, cut at a word to at most [`QUERY_MAX`] characters.
fn query_text(text: &str) -> String {
    let words = text.split_whitespace();
    let mut out = String::new();
    for word in words {
        let len = out.chars().count() + usize::from(!out.is_empty()) + word.chars().count();
        if len > QUERY_MAX {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        // One word longer than the limit: cut it.
        out = text.trim().chars().take(QUERY_MAX).collect();
    }
    out
}

/// The declaration the model sees: it chooses which field of its request to search for.
pub fn declaration() -> FunctionDeclaration {
    FunctionDeclaration {
        name: GOOGLE_SEARCH.into(),
        description: "Grounded public web search about a field of this request (the source's title; the brief's \
            key_message, angle or audience). Returns pages with evidence ids and the answer spans each supports."
            .into(),
        parameters: json!({"type": "object", "properties": {
            "about": {"type": "string", "enum": ["title", "key_message", "angle", "audience"]}},
            "additionalProperties": false}),
    }
}

/// The child's request: the query alone (no brief, no evidence, no session), grounded.
pub fn request(role: Role, query: &str) -> ModelRequest {
    ModelRequest {
        role,
        system_instruction: "Answer the query in at most three sentences using only the search results.".into(),
        turns: vec![Turn { speaker: Speaker::User, parts: vec![Part::Text(query.to_owned())] }],
        tools: std::sync::Arc::from([]),
        response_schema: std::sync::Arc::new(json!({"type": "string"})),
        grounded_search: true,
    }
}

/// Why a grounded answer was refused (logged by name; the answer itself never is).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// The answer came without grounding metadata.
    #[error("the answer has no grounding metadata")]
    Ungrounded,
    /// A chunk's address is not an https URL with a host (or is longer than 2,048 bytes).
    #[error("a source is not an https address")]
    NotHttps,
    /// A support names no chunk, or a chunk the search did not return.
    #[error("a support names a chunk the search did not return")]
    UnknownChunk,
    /// A segment is empty, outside its text part, or not on character boundaries.
    #[error("a segment lies outside the answer")]
    OutsideAnswer,
    /// A segment's reported text differs from the answer at its offsets.
    #[error("a segment's text differs from the answer")]
    TextDiffers,
    /// No span of the answer rests on any page.
    #[error("nothing in the answer is supported")]
    Unsupported,
}

/// One accepted page: its address, title and the spans of the answer it supports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The https address.
    pub uri: String,
    /// Its title (at most 300 characters).
    pub title: String,
    /// The answer's spans it supports, in answer order, without repeats.
    pub supported: Vec<String>,
}

/// Validate a grounded answer's metadata against the answer and accept each page that
/// supports a span.
pub fn accept(response: &ModelResponse) -> Result<Vec<Accepted>, Rejected> {
    let grounding: &Grounding = response.grounding.as_ref().ok_or(Rejected::Ungrounded)?;
    let texts: Vec<&str> =
        response.parts.iter().filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None }).collect();
    if !grounding.chunks.iter().all(|c| is_https(&c.uri)) {
        return Err(Rejected::NotHttps);
    }
    let mut spans: Vec<Vec<String>> = vec![Vec::new(); grounding.chunks.len()];
    for support in &grounding.supports {
        if support.chunks.is_empty() || support.chunks.iter().any(|i| *i >= grounding.chunks.len()) {
            return Err(Rejected::UnknownChunk);
        }
        let text = texts.get(support.part).ok_or(Rejected::OutsideAnswer)?;
        let span = (support.start < support.end)
            .then(|| text.get(support.start..support.end))
            .flatten()
            .ok_or(Rejected::OutsideAnswer)?;
        if support.text.as_deref().is_some_and(|reported| reported != span) {
            return Err(Rejected::TextDiffers);
        }
        let span = span.trim();
        if span.is_empty() {
            continue;
        }
        for i in &support.chunks {
            let list = &mut spans[*i];
            if list.len() < SPANS_MAX && !list.iter().any(|s| s == span) {
                list.push(span.to_owned());
            }
        }
    }
    let accepted: Vec<Accepted> = grounding
        .chunks
        .iter()
        .zip(spans)
        .filter(|(_, supported)| !supported.is_empty())
        .map(|(chunk, supported)| Accepted {
            uri: chunk.uri.clone(),
            title: chunk.title.chars().take(300).collect(),
            supported,
        })
        .collect();
    if accepted.is_empty() { Err(Rejected::Unsupported) } else { Ok(accepted) }
}

fn is_https(uri: &str) -> bool {
    uri.len() <= 2048
        && url::Url::parse(uri).is_ok_and(|u| u.scheme() == "https" && u.host_str().is_some_and(|h| !h.is_empty()))
}

/// The records of `accepted` pages, found for `role` of `job` by `query`.
pub fn records(
    accepted: Vec<Accepted>,
    job: &JobId,
    role: Role,
    query: &str,
    provenance: Provenance,
) -> Vec<ResearchEvidence> {
    let now = Utc::now();
    accepted
        .into_iter()
        .map(|a| ResearchEvidence {
            evidence_id: ResearchEvidence::id_for(&a.uri, &a.supported),
            job: job.clone(),
            role,
            query: query.to_owned(),
            uri: a.uri,
            title: a.title,
            supported: a.supported,
            provenance,
            retrieved_at: now,
        })
        .collect()
}

/// What the asking role sees of accepted results: the answer, each page with its evidence id
/// and the spans it supports, and the evidence ids (recorded in the trace).
pub fn answer(response: &ModelResponse, found: &[ResearchEvidence], provenance: Provenance) -> Value {
    let summary: String =
        response.parts.iter().filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None }).collect();
    let sources: Vec<Value> = found
        .iter()
        .map(|r| json!({"evidence_id": r.evidence_id, "uri": r.uri, "title": r.title, "supported": r.supported}))
        .collect();
    let evidence: Vec<&EvidenceId> = found.iter().map(|r| &r.evidence_id).collect();
    json!({"summary": summary, "sources": sources, "evidence": evidence, "provenance": provenance})
}
