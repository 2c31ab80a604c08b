//! What a post may cite, read from the store: the one reader behind the policy step, review and
//! an operator's edit (the rules themselves stay pure functions of what it returns).

use std::collections::{HashMap, HashSet};

use harmonia_agents::eligibility::VerifiedPosts;
use harmonia_agents::research::{may_name_publication, publication_evidence_id};
use harmonia_contracts::domain::{MemoryFact, Publication, ResearchEvidence, Timestamp};
use harmonia_contracts::ids::{EvidenceId, WorkspaceId};
use harmonia_store::{Store, decode_each, scan_all};

use super::Evidence;
use crate::records::{
    AnalysisRecord, MEMORY, PUBLICATIONS, SOURCE_QUOTES, SourceQuote, doc_id, is_source_quote, research_of,
    source_quote_id,
};

/// The evidence `cited` ids resolve to, with its provenance (from its own record), text and,
/// for a moment, where it was said: the analysis's moments (their exact quotes), spans of the
/// source an operator's edit quoted (`q-*`), the job's accepted grounded-search results (the
/// answer spans each page supports, and its address), and the workspace's verified publications
/// (their body; live only when they went to a real platform), and the workspace's remembered
/// facts (`fact-*`: their statement) while the eligibility rule offers them at `now`. An id
/// that resolves to none of them is absent from the map. The workspace's publications are read, page by page so nothing
/// is missed, only when an id can name one ([`may_name_publication`]): most posts cite only
/// moments and search results, and a check then costs the same however many posts the workspace
/// has made.
pub(crate) async fn load<'a>(
    store: &dyn Store,
    workspace: &WorkspaceId,
    analysis: &AnalysisRecord,
    cited: impl IntoIterator<Item = &'a EvidenceId>,
    now: Timestamp,
) -> Result<HashMap<EvidenceId, Evidence>, harmonia_store::Error> {
    let research = research_of(store, workspace, &analysis.job).await?;
    load_with(store, workspace, analysis, &research, cited, now).await
}

/// [`load`], with the job's research results already read by the caller.
pub(crate) async fn load_with<'a>(
    store: &dyn Store,
    workspace: &WorkspaceId,
    analysis: &AnalysisRecord,
    research: &[ResearchEvidence],
    cited: impl IntoIterator<Item = &'a EvidenceId>,
    now: Timestamp,
) -> Result<HashMap<EvidenceId, Evidence>, harmonia_store::Error> {
    let cited: Vec<&EvidenceId> = cited.into_iter().collect();
    let provenance = analysis.analysis.provenance;
    let mut moments: HashMap<EvidenceId, Evidence> = analysis
        .analysis
        .moments
        .iter()
        .map(|m| {
            let said = analysis.said.iter().find(|s| s.evidence_id == m.evidence_id).cloned();
            (m.evidence_id.clone(), Evidence { provenance, text: m.quote.clone(), said, url: None })
        })
        .collect();
    let quotes: Vec<&EvidenceId> =
        cited.iter().copied().filter(|id| is_source_quote(id) && !moments.contains_key(*id)).collect();
    for id in quotes {
        let doc = store.get(workspace, SOURCE_QUOTES, &source_quote_id(&analysis.job, id)).await?;
        if let Some(quote) = doc.map(|d| d.decode::<SourceQuote>()).transpose()? {
            // What the source says is not any model's output.
            let live = harmonia_contracts::tool::Provenance::Live;
            moments.insert(
                id.clone(),
                Evidence { provenance: live, text: quote.moment.quote, said: Some(quote.said), url: None },
            );
        }
    }
    let results: HashMap<&EvidenceId, &ResearchEvidence> = research.iter().map(|r| (&r.evidence_id, r)).collect();
    // A verified publication wins over a search result of the same id, and that over a moment.
    let of_job = |id: &EvidenceId| match results.get(id) {
        Some(result) => Some(Evidence {
            provenance: result.provenance,
            text: result.text(),
            said: None,
            url: Some(result.uri.clone()),
        }),
        None => moments.get(id).cloned(),
    };
    let mut evidence = HashMap::new();
    let mut publication_ids = HashSet::new();
    let mut facts = Vec::new();
    for id in cited {
        if may_name_publication(id) {
            publication_ids.insert(id);
        } else if let Some(found) = of_job(id) {
            evidence.insert(id.clone(), found);
        } else if id.as_str().starts_with(FACT_PREFIX) {
            let doc = store.get(workspace, MEMORY, &doc_id(id)).await?;
            facts.extend(doc.and_then(|d| d.decode::<MemoryFact>().ok()).map(|f| (id, f)));
        }
    }
    if publication_ids.is_empty() && facts.is_empty() {
        return Ok(evidence);
    }
    let publications: Vec<Publication> = decode_each(PUBLICATIONS, &scan_all(store, workspace, PUBLICATIONS).await?);
    // A remembered fact resolves only while the eligibility rule offers it.
    let verified = VerifiedPosts::from_publications(&publications);
    for (id, fact) in facts {
        if verified.is_eligible_memory(&fact, now) {
            evidence.insert(id.clone(), Evidence::text(fact.provenance, fact.text));
        }
    }
    for publication in &publications {
        if let Some(post) = publication.verified_post() {
            let id = publication_evidence_id(post);
            if publication_ids.remove(&id) {
                evidence.insert(id, Evidence::text(publication.provenance(), publication.body.clone()));
            }
        }
    }
    for id in publication_ids {
        if let Some(found) = of_job(id) {
            evidence.insert(id.clone(), found);
        }
    }
    Ok(evidence)
}

/// How every remembered fact's id begins.
const FACT_PREFIX: &str = "fact-";
