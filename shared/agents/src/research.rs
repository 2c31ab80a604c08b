//! Research tools (Noni, Nimi) and the collections they read.
//!
//! - `search_verified_publications`: the tenant's own posts that have an applied receipt and a
//!   successful read-back verification — nothing else — with one record-level evidence id each.
//! - `google_search`: an isolated, request-bound child invocation with Gemini's grounded search.
//!   Its grounding metadata is validated (at least one https source) before anything is
//!   returned; each source gets an evidence id that the runtime records in the trace, so a
//!   claim may cite it in this invocation only. The offline model answers with
//!   `provenance: mock` sources.
//!
//! Which memory facts reach Nimi and Ryan is decided by [`crate::eligibility`].

use std::sync::Arc;

use async_trait::async_trait;
use harmonia_contracts::domain::Publication;
use harmonia_contracts::ids::{EvidenceId, PostId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::{Collection, decode_each, scan_all};
use serde_json::{Value, json};
use sha2::Digest;

use crate::model::{FunctionDeclaration, Model, ModelRequest, Part, Speaker, Turn};
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
    EvidenceId::stable(&format!("pub-{post}"))
}

/// `search_verified_publications(query, limit)`.
pub struct SearchVerifiedPublications;

#[async_trait]
impl Tool for SearchVerifiedPublications {
    fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: "search_verified_publications".into(),
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
        let docs = scan_all(ctx.store, ctx.workspace, PUBLICATIONS).await.map_err(|_| ToolFailure::Unavailable)?;
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

/// `google_search(query)`: grounded search in an isolated child invocation.
pub struct GroundedSearch {
    model: Arc<dyn Model>,
}

impl GroundedSearch {
    /// Search through `model` (Gemini for live results; the offline model answers mock ones).
    pub fn new(model: Arc<dyn Model>) -> Self {
        Self { model }
    }
}

#[async_trait]
impl Tool for GroundedSearch {
    fn declaration(&self) -> FunctionDeclaration {
        FunctionDeclaration {
            name: "google_search".into(),
            description: "Grounded public web search bound to this request; returns sources with evidence ids.".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string", "minLength": 1, "maxLength": 200}},
                "required": ["query"], "additionalProperties": false}),
        }
    }

    async fn call(&self, _ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure> {
        let query = query_arg(args)?;
        // The child sees only the query: no brief, no evidence, no session.
        let request = ModelRequest {
            role: harmonia_contracts::Role::Harmonia,
            system_instruction: "Answer the query in at most three sentences using only the search results.".into(),
            turns: vec![Turn { speaker: Speaker::User, parts: vec![Part::Text(query)] }],
            tools: Vec::new(),
            response_schema: json!({"type": "string"}),
            grounded_search: true,
        };
        // The child call is a model call like any other in the trace and the metrics.
        let response =
            crate::runtime::generate(&*self.model, &request, None).await.map_err(|_| ToolFailure::Unavailable)?;
        let grounding = response.grounding.ok_or(ToolFailure::Unavailable)?;
        let sources: Vec<_> = grounding.sources.iter().filter(|(uri, _)| uri.starts_with("https://")).collect();
        if sources.is_empty() {
            return Err(ToolFailure::Unavailable);
        }
        let summary: String =
            response.parts.iter().filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None }).collect();
        let mut evidence = Vec::new();
        let listed: Vec<Value> = sources
            .iter()
            .map(|(uri, title)| {
                let id = format!("web-{}", &hex::encode(sha2::Sha256::digest(uri.as_bytes()))[..16]);
                evidence.push(id.clone());
                json!({"evidence_id": id, "uri": uri, "title": title})
            })
            .collect();
        let provenance: Provenance = self.model.provenance();
        Ok(json!({"summary": summary, "sources": listed, "evidence": evidence, "provenance": provenance}))
    }
}
