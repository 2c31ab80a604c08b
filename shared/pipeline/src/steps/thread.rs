//! Publishing a thread: its posts in order, each replying to the one before, each under its
//! own idempotency key (the publication's, with the post's position), each recorded as it is
//! made. A post begun without a receipt (the process died between its call and its record) is
//! read back by its key before it is made, so a resumed thread neither repeats nor skips one.

use harmonia_connectors::{Connector, Found, Lookup, Outgoing, Posted, ReplyTo, Sent};
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Publication, ReceiptOutcome, ThreadPost, VerificationOutcome};
use harmonia_contracts::event::{DraftApproved, StageEvent};
use harmonia_contracts::ids::{DocId, PostId, WorkspaceId};
use harmonia_contracts::tool::Provenance;
use harmonia_store::encode;

use super::read::read_back;
use crate::Env;
use crate::records::{PUBLICATIONS, doc_id};
use crate::step;

/// The posts of a thread of `posts`, under the publication key `key`.
pub(crate) fn parts(key: &str, posts: &[String]) -> Vec<ThreadPost> {
    posts
        .iter()
        .enumerate()
        .map(|(n, body)| ThreadPost {
            body: body.clone(),
            idempotency_key: format!("{key}/{}", n + 1),
            begun: false,
            receipt: None,
        })
        .collect()
}

/// The stored publication of `publication`'s thread, kept as it is made: the version it is at,
/// which each write checks and moves on (a writer the step does not know of is a conflict).
struct Kept<'a> {
    env: &'a Env,
    ws: &'a WorkspaceId,
    id: DocId,
    version: u64,
}

impl<'a> Kept<'a> {
    /// The stored publication of `publication`, at its version now.
    async fn of(env: &'a Env, ws: &'a WorkspaceId, publication: &Publication) -> Result<Self, step::Error> {
        let id = doc_id(&publication.draft);
        let stored = env.store.get(ws, PUBLICATIONS, &id).await?.ok_or_else(|| step::Error::fail(Code::NotFound))?;
        Ok(Self { env, ws, id, version: stored.version })
    }

    /// Keep `publication` as it stands now (each post's progress, before and after its call).
    async fn keep(&mut self, publication: &Publication) -> Result<(), step::Error> {
        let data = encode(publication)?;
        self.version =
            harmonia_store::update(&*self.env.store, self.ws, PUBLICATIONS, &self.id, data, self.version).await?;
        Ok(())
    }
}

/// The post a thread's part was made as, when its receipt says it was.
fn made(part: &ThreadPost) -> Option<Posted> {
    Posted::applied(part.receipt.as_ref()?)
}

/// Make the thread's posts that are not made yet, in order. The outcome is the first post's
/// (the thread's own) once every post is made; a refusal of any post is the thread's refusal.
/// An answer lost for a post leaves it begun, and the step is tried again: it reads that post
/// back before going on.
pub(crate) async fn publish(
    env: &Env,
    connector: &dyn Connector,
    event: &StageEvent<DraftApproved>,
    mut publication: Publication,
    provenance: Provenance,
) -> Result<(Publication, ReceiptOutcome), step::Error> {
    let ws = &event.workspace;
    let mut kept = Kept::of(env, ws, &publication).await?;
    let mut made_so_far: Vec<Posted> = Vec::new();
    for n in 0..publication.thread.len() {
        if let Some(posted) = made(&publication.thread[n]) {
            made_so_far.push(posted);
            continue;
        }
        let part = publication.thread[n].clone();
        let reply = made_so_far
            .first()
            .zip(made_so_far.last())
            .map(|(root, parent)| ReplyTo { root: root.clone(), parent: parent.clone() });
        let outgoing = Outgoing {
            idempotency_key: part.idempotency_key.clone(),
            platform: publication.platform,
            body: part.body.clone(),
            provenance,
            reply,
        };
        let lookup = Lookup::key(ws, &part.idempotency_key).sent(&part.body, publication.claim.claimed_at);
        let already = match part.begun {
            true => read_back(connector, lookup).await?,
            false => {
                publication.thread[n].begun = true;
                kept.keep(&publication).await?;
                Found::Missing
            }
        };
        let sent = match already {
            Found::Post { post, record, .. } => Sent::Applied(Posted { post, url: None, record }),
            Found::Missing => connector.send(ws, &outgoing).await,
        };
        let outcome = match super::publish::outcome_of(sent) {
            // Begun and unanswered: the step runs again and reads it back first.
            ReceiptOutcome::Unknown => {
                return Err(step::Error::Retry(harmonia_contracts::Error::from_code(Code::PublishOutcomeUnknown)));
            }
            outcome => outcome,
        };
        publication.thread[n].receipt = Some(outcome.clone());
        kept.keep(&publication).await?;
        match made(&publication.thread[n]) {
            Some(posted) => made_so_far.push(posted),
            None => return Ok((publication, outcome)),
        }
    }
    let first = publication.thread.first().and_then(|p| p.receipt.clone()).unwrap_or(ReceiptOutcome::Unknown);
    Ok((publication, first))
}

/// Read back every post of a thread by what its receipt names: each must hold its text (and on
/// the AT Protocol be the record its receipt names) and reply to the post before it (the first
/// to none). The thread is verified as its first post.
pub(crate) async fn verify(
    connector: &dyn Connector,
    ws: &WorkspaceId,
    publication: &Publication,
) -> Result<VerificationOutcome, step::Error> {
    let mut before: Option<PostId> = None;
    for part in &publication.thread {
        let Some(made) = made(part) else { return Ok(VerificationOutcome::Missing) };
        let lookup = Lookup::key(ws, &part.idempotency_key)
            .posted(Some(&made.post))
            .sent(&part.body, publication.claim.claimed_at);
        match read_back(connector, lookup).await? {
            // On the AT Protocol the record read back must be the one the receipt names.
            Found::Post { post, body, replying_to, record }
                if body == part.body
                    && replying_to == before
                    && made.record.as_ref().is_none_or(|r| record.as_ref() == Some(r)) =>
            {
                before = Some(post);
            }
            Found::Post { post, .. } => return Ok(VerificationOutcome::Mismatch { post }),
            Found::Missing => return Ok(VerificationOutcome::Missing),
        }
    }
    match publication.thread.first().and_then(made) {
        Some(first) => Ok(VerificationOutcome::Verified { post: first.post }),
        None => Ok(VerificationOutcome::Missing),
    }
}
