//! What a post may cite, read from the store: the one reader behind the policy step and an
//! operator's edit (the rules themselves stay pure functions of what it returns).

use std::collections::HashMap;

use harmonia_agents::research::publication_evidence_id;
use harmonia_contracts::domain::{Publication, ResearchEvidence};
use harmonia_contracts::ids::{EvidenceId, WorkspaceId};
use harmonia_store::{Store, decode_each, scan_all};

use super::Evidence;
use crate::records::{AnalysisRecord, PUBLICATIONS, research_of};

/// The evidence a post may cite, with its provenance (from its own record) and text: the
/// analysis's moments (their exact quotes), the job's accepted grounded-search results (the
/// answer spans each page supports), and every verified publication of the workspace (its
/// body; live only when it went to a real platform). Collections are read page by page, so
/// nothing is missed.
pub(crate) async fn load(
    store: &dyn Store,
    workspace: &WorkspaceId,
    analysis: &AnalysisRecord,
) -> Result<HashMap<EvidenceId, Evidence>, harmonia_store::Error> {
    let research = research_of(store, workspace, &analysis.job).await?;
    load_with(store, workspace, analysis, &research).await
}

/// [`load`], with the job's research results already read by the caller.
pub(crate) async fn load_with(
    store: &dyn Store,
    workspace: &WorkspaceId,
    analysis: &AnalysisRecord,
    research: &[ResearchEvidence],
) -> Result<HashMap<EvidenceId, Evidence>, harmonia_store::Error> {
    let provenance = analysis.analysis.provenance;
    let mut evidence: HashMap<EvidenceId, Evidence> = analysis
        .analysis
        .moments
        .iter()
        .map(|m| (m.evidence_id.clone(), Evidence { provenance, text: m.quote.clone() }))
        .collect();
    for result in research {
        evidence.insert(result.evidence_id.clone(), Evidence { provenance: result.provenance, text: result.text() });
    }
    let publications: Vec<Publication> = decode_each(PUBLICATIONS, &scan_all(store, workspace, PUBLICATIONS).await?);
    for publication in &publications {
        if let Some(post) = publication.verified_post() {
            let text = publication.body.clone();
            evidence.insert(publication_evidence_id(post), Evidence { provenance: publication.provenance(), text });
        }
    }
    Ok(evidence)
}
