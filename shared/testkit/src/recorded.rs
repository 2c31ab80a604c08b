//! What the recorded LinkedIn and X have in common: the creates they were sent, the posts they
//! hold, the answers a test has them give instead, the tokens they accept, and serving them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use serde_json::Value;

use crate::app::Cut;
use crate::oauth::Grants;

/// An answer to give instead of a create: the status, the recording, and whether the post is
/// made anyway.
pub type Failure = (u16, &'static str, bool);

/// The queue's mark for a create answered as the platform does.
const ANSWERED: Failure = (200, "", true);

/// A recorded platform's state, which a test reads and steers.
#[derive(Clone, Debug)]
pub struct Platform<H> {
    /// Each create's JSON body, as received.
    pub creates: Arc<Mutex<Vec<Value>>>,
    /// The posts made, oldest first.
    pub posts: Arc<Mutex<Vec<H>>>,
    /// Answers to give instead of the next creates, in turn.
    pub failures: Arc<Mutex<VecDeque<Failure>>>,
    /// The tokens it accepts.
    pub grants: Grants,
    cut: Cut,
}

impl<H: Clone> Platform<H> {
    pub(crate) fn new(grants: Grants) -> Self {
        Self { creates: Arc::default(), posts: Arc::default(), failures: Arc::default(), grants, cut: Cut::default() }
    }

    /// Make the next create's post, then cut the connection before its answer.
    pub fn lose_next_answer(&self) {
        self.failures.lock().expect("lock").push_back((0, "", true));
    }

    /// Answer the next create as the platform does (ahead of an answer queued after it).
    pub fn answer_next(&self) {
        self.failures.lock().expect("lock").push_back(ANSWERED);
    }

    /// How many posts it holds.
    pub fn count(&self) -> usize {
        self.posts.lock().expect("lock").len()
    }

    /// Keep `held` as a post; it is returned.
    pub(crate) fn hold(&self, held: H) -> H {
        self.posts.lock().expect("lock").push(held.clone());
        held
    }

    /// A create received (kept in [`Platform::creates`]), and the answer a test asked for
    /// instead of making it, if any: `make` makes the post first when the failure says it is
    /// made anyway (or its answer is to be lost), `answer` gives a recording with a status.
    pub(crate) fn instead(
        &self,
        body: &Value,
        make: impl FnOnce(),
        answer: impl Fn(u16, &'static str) -> Response,
    ) -> Option<Response> {
        self.creates.lock().expect("lock").push(body.clone());
        let (status, name, made) = self.failures.lock().expect("lock").pop_front().filter(|f| *f != ANSWERED)?;
        if made {
            make();
        }
        if status == 0 {
            self.cut.next_answer();
            return Some(StatusCode::INTERNAL_SERVER_ERROR.into_response());
        }
        Some(answer(status, name))
    }

    /// The token endpoint's route: refresh grants against [`Platform::grants`], answered with
    /// the platform's recorded grant (`token.json`) or refusal (`error-invalid-grant.json`).
    pub(crate) fn token_endpoint<S>(&self, recording: fn(&str) -> Value) -> MethodRouter<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        let grants = self.grants.clone();
        axum::routing::post(move |headers: HeaderMap, body: String| async move {
            grants.answer(&headers, &body, recording("token.json"), recording("error-invalid-grant.json"))
        })
    }

    /// Serve `app` on a free local port for the rest of the process; its base URL.
    pub(crate) async fn serve(&self, app: Router) -> String {
        crate::app::serve_for_the_process(app, self.cut.clone()).await
    }
}
