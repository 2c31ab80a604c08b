//! The operator API: the only way human decisions enter Harmonia.
//!
//! Every request carries `Authorization: Bearer <credential>`; the credential names the
//! operator, the workspace and the role, and every read and decision is scoped to that
//! workspace (a job of another workspace is simply `not_found`). Routes marked *admin* answer
//! 403 `forbidden` to an operator. Routes:
//!
//! | method and path | what |
//! | --- | --- |
//! | `GET /healthz` | liveness (no credential) |
//! | `GET /v1/me` | who the credential is: `{"operator","workspace","role"}` |
//! | `GET /v1/jobs` | the workspace's jobs, newest first, and `statuses`: every status a job can have |
//! | `GET /v1/jobs/{job}` | one job and the version awaiting a decision, if any |
//! | `GET /v1/jobs/{job}/detail` | everything stored about the job (`harmonia show --json`): `job`, `source`, `analysis`, `strategy`, `strategy_versions`, `plan`, `selected_item`, `drafts`, `reviews`, `policy`, `awaiting`, `decisions`, `publication`, `retries`, `model_use` |
//! | `GET /v1/jobs/{job}/events` | the job's progress: with `Accept: text/event-stream`, Server-Sent Events (`step`, `decision`, `status`) from its history on, as it moves, until it stops for good ([`events`]); otherwise `{"job","events"}` to poll |
//! | `GET /v1/jobs/{job}/view` | the job view: Maya's A2UI layout over typed references, hydrated from storage |
//! | `GET /v1/activity?job=ID&limit=N&page=P` | the job's activity records (metadata only), paginated |
//! | `GET /v1/workspace/activity?agent=&stage=&outcome=&limit=&page=` | the workspace's latest records (every job's and Nova's), newest first, filtered, with each day's figures ([`harmonia_pipeline::activity`]) |
//! | `POST /v1/jobs/{job}/decisions` | `{"subject":"strategy"|"draft","decision":"approve"|"reject"|"request_changes","version":HASH,"reason"?,"feedback"?}` |
//! | `POST /v1/jobs/{job}/retry` | run the step that failed the job (a model or contract error) again, as the caller → `{"job","retry"}`; 409 `invalid_transition` with the reason otherwise |
//! | `POST /v1/jobs/{job}/edits` | `{"version":HASH,"body":TEXT}`: the operator's next draft version, checked by policy at once |
//! | `GET /v1/schedule` | the approved posts not yet out, soonest first: `{"schedule":[{job, draft, platform, handle, window, due_at, state, dispatched_at?, decisions}]}` (`state`: `scheduled`, `window_passed`, `dispatched`) |
//! | `POST /v1/jobs/{job}/reschedule` | `{"at":RFC3339}`: move the scheduled post to a future time inside one of the workspace's posting windows (else 400 `invalid_request` naming the nearest window) → `{"schedule","job"}` |
//! | `POST /v1/jobs/{job}/publish-now` | publish the scheduled post now → `{"schedule","job"}` |
//! | `POST /v1/jobs/{job}/cancel` | the scheduled post is never published → `{"schedule","job"}`; each of the three is the caller's attributed decision, 409 `invalid_transition` once the publication is claimed |
//! | `GET /v1/workspace` | the workspace's current configuration version, and (`file`) the same configuration as TOML |
//! | `PUT /v1/workspace` | the configuration file (`Content-Type: application/toml`, or its keys as JSON): version 1 (201), the next version (200), or `"changed": false` when equal to the current one |
//! | `POST /v1/sources` | `{"format":"json"|"webvtt"|"srt","content":TEXT,"title"?,"language"?}` → the new job; with an `Idempotency-Key` header a retry returns the same job |
//! | `POST /v1/imports/metrics`, `/v1/imports/signals`, `/v1/imports/calendar` | the file as the body (`text/csv`; signals also `application/json`), stored all-or-nothing |
//! | `GET /v1/jobs/{job}/metrics` | the engagement snapshots of the job's post, read from its platform after verification ([`engagement`]) |
//! | `GET /v1/workspace/memory` | the workspace's remembered facts, with their evidence and whether each is offered now |
//! | `GET /v1/calendar?from=&to=` | the approved posts going out in the range, in UTC and the workspace's time zone (`at`, `at_local`), with the posting windows and the imported calendar entries ([`imports`]) |
//! | `POST /v1/ask` | `{"question"}`: asked of Nova, in the caller's workspace ([`nova`]: forwarded to the Nova function named by `HARMONIA_NOVA_URL`; in the same process under `harmonia serve`); absent when neither |
//! | `POST /v1/operators` | *admin*: `{"name":NAME,"role"?:"operator"|"admin"}` → 201 `{"operator","role","workspace","credential","created_at"}`, the credential shown this once; an active name is 409 `already_exists` |
//! | `GET /v1/operators` | *admin*: `{"operators":[{"operator","role","status":"active"|"revoked","created_at","created_by","revoked_at"?,"revoked_by"?}]}`, never a digest |
//! | `DELETE /v1/operators/{name}` | *admin*: revoke → 200 `{"operator":{…,"status":"revoked"}}`; unknown or revoked 404 `not_found`; the last active admin 409 `last_admin` |
//!
//! Every body is a type of [`harmonia_client::api`], the wire types the typed client reads.
//! Authentication, body rejections, `traceparent` and the error shape are the shared HTTP
//! boundary of `harmonia-http`; `POST /v1/sources` is the ingest function's own handler.
//! Bodies are at most [`MAX_BODY_BYTES`]; errors are `{"error":{code,category,message,retryable}}`
//! with the status `harmonia_http::status_of` gives the code; an unknown path is a JSON 404
//! (`unknown_route`) and a wrong method a JSON 405 (`method_not_allowed`).

mod detail;
mod engagement;
pub mod events;
mod imports;
#[cfg(feature = "cloud")]
pub mod nova;
mod operators;
mod routes;
mod schedule;
mod view;
mod workspace;

pub use harmonia_auth::{Credentials, Identity, Role};
/// The bodies of the decision and edit routes (the typed client sends the same types).
pub use harmonia_client::api::{DecisionBody, EditBody};
/// What the routes share: the backends and who may call. It is the ingest function's state,
/// since the operator API serves the ingest function's `submit` handler too.
pub use harmonia_ingest::IngestState as OperatorState;
pub use harmonia_ingest::MAX_BODY_BYTES;
pub use routes::{app, app_with};

#[cfg(test)]
mod events_tests;
#[cfg(test)]
mod rounds_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod workspace_tests;
