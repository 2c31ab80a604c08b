//! What a post may cite, read from the store: the one reader behind the policy step and an
//! operator's edit (the rules themselves stay pure functions of what it returns).

use std::collections::{HashMap, HashSet};

use harmonia_agents::research::{may_name_publication, publication_evidence_id};
use harmonia_contracts::domain::{Publication, ResearchEvidence};
use harmonia_contracts::ids::{EvidenceId, WorkspaceId};
use harmonia_store::{Store, decode_each, scan_all};

use super::Evidence;
use crate::records::{AnalysisRecord, PUBLICATIONS, research_of};

/// The evidence `cited` ids resolve to, with its provenance (from its own record) and text:
/// the analysis's moments (their exact quotes), the job's accepted grounded-search results (the
/// answer spans each page supports), and the workspace's verified publications (their body;
/// live only when they went to a real platform). An id that resolves to none of them is absent
/// from the map. The workspace's publications are read, page by page so nothing is missed, only
/// when an id can name one ([`may_name_publication`]): most posts cite only moments and search
/// results, and a check then costs the same however many posts the workspace has made.
pub(crate) async fn load<'a>(
    store: &dyn Store,
    workspace: &WorkspaceId,
    analysis: &AnalysisRecord,
    cited: impl IntoIterator<Item = &'a EvidenceId>,
) -> Result<HashMap<EvidenceId, Evidence>, harmonia_store::Error> {
    let research = research_of(store, workspace, &analysis.job).await?;
    load_with(store, workspace, analysis, &research, cited).await
}

/// [`load`], with the job's research results already read by the caller.
pub(crate) async fn load_with<'a>(
    store: &dyn Store,
    workspace: &WorkspaceId,
    analysis: &AnalysisRecord,
    research: &[ResearchEvidence],
    cited: impl IntoIterator<Item = &'a EvidenceId>,
) -> Result<HashMap<EvidenceId, Evidence>, harmonia_store::Error> {
    let provenance = analysis.analysis.provenance;
    let moments: HashMap<&EvidenceId, &str> =
        analysis.analysis.moments.iter().map(|m| (&m.evidence_id, m.quote.as_str())).collect();
    let results: HashMap<&EvidenceId, &ResearchEvidence> = research.iter().map(|r| (&r.evidence_id, r)).collect();
    // A verified publication wins over a search result of the same id, and that over a moment.
    let of_job = |id: &EvidenceId| match results.get(id) {
        Some(result) => Some(Evidence { provenance: result.provenance, text: result.text() }),
        None => moments.get(id).map(|quote| Evidence { provenance, text: (*quote).to_owned() }),
    };
    let mut evidence = HashMap::new();
    let mut publication_ids = HashSet::new();
    for id in cited {
        if may_name_publication(id) {
            publication_ids.insert(id);
        } else if let Some(found) = of_job(id) {
            evidence.insert(id.clone(), found);
        }
    }
    if publication_ids.is_empty() {
        return Ok(evidence);
    }
    let publications: Vec<Publication> = decode_each(PUBLICATIONS, &scan_all(store, workspace, PUBLICATIONS).await?);
    for publication in &publications {
        if let Some(post) = publication.verified_post() {
            let id = publication_evidence_id(post);
            if publication_ids.remove(&id) {
                evidence.insert(id, Evidence { provenance: publication.provenance(), text: publication.body.clone() });
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
