//! The one error shape that crosses every boundary, and the table of stable codes.
//!
//! A [`Code`] is stable snake_case text with a fixed [`Category`] and a default `retryable`
//! flag. [`ErrorBody`] is the wire form (`{code, category, message, retryable}`); its message
//! is always text written by Harmonia, never input, model output or a provider body.
//! [`AgentContractError`] is the specialist-boundary failure of the agent runtime.
//! `docs/error-codes.md` is generated from [`Code::ALL`] and checked by a test.

use std::borrow::Cow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::roles::Role;

/// What kind of failure a code is; decides how callers react.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The input is malformed or out of range; resending it unchanged cannot help.
    InvalidInput,
    /// The thing asked for does not exist in the caller's workspace.
    NotFound,
    /// The caller is not authenticated or not allowed.
    Authorization,
    /// A concurrent change won; the caller may re-read and try again.
    Conflict,
    /// The current state does not allow the operation.
    Precondition,
    /// A dependency is unavailable; usually transient.
    Unavailable,
    /// A specialist's output broke its contract.
    Contract,
    /// A deterministic policy rule refused the content.
    Policy,
    /// A defect or corrupted state inside Harmonia.
    Internal,
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal, $cat:ident, $retry:literal, $safe:literal; )*) => {
        /// Every stable error code Harmonia emits. The text never changes once released.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// All codes, in documentation order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The stable snake_case text.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)* }
            }

            /// The category this code always belongs to.
            pub fn category(self) -> Category {
                match self { $(Code::$variant => Category::$cat,)* }
            }

            /// Whether a failure with this code is transient by default.
            pub fn default_retryable(self) -> bool {
                match self { $(Code::$variant => $retry,)* }
            }

            /// A plain sentence safe to show an operator.
            pub fn safe_message(self) -> &'static str {
                match self { $(Code::$variant => $safe,)* }
            }
        }
    };
}

codes! {
    // --- input and identifiers
    /// An identifier is malformed.
    InvalidId = "invalid_id", InvalidInput, false, "The identifier is malformed.";
    /// A search query is empty or too long.
    InvalidQuery = "invalid_query", InvalidInput, false, "The query must be non-empty text of at most 200 characters.";
    /// A bounded number is out of its range.
    OutOfRange = "out_of_range", InvalidInput, false, "A value is outside its allowed range.";
    /// A request body is not the documented shape.
    InvalidRequest = "invalid_request", InvalidInput, false, "The request is not in the documented shape.";
    /// A request or file is larger than the documented limit.
    PayloadTooLarge = "payload_too_large", InvalidInput, false, "The request is larger than the documented limit.";
    /// A document or envelope does not match its type or JSON Schema.
    InvalidDocument = "invalid_document", InvalidInput, false, "A document does not match its schema.";
    /// A tool envelope is in an impossible state (for example both data and error).
    InvalidEnvelope = "invalid_envelope", InvalidInput, false, "A tool envelope is not in a valid state.";
    /// A W3C traceparent header is malformed.
    InvalidTraceparent = "invalid_traceparent", InvalidInput, false, "The traceparent is not a valid W3C trace context.";
    // --- sources
    /// The source has no transcript segment.
    SourceEmptyTranscript = "source_empty_transcript", InvalidInput, false, "The source has no transcript segments.";
    /// A segment or frame has invalid timing (end not after start).
    SourceInvalidTiming = "source_invalid_timing", InvalidInput, false, "A transcript segment ends before or when it starts.";
    /// Transcript segments overlap or are out of order.
    SourceOverlappingSegments = "source_overlapping_segments", InvalidInput, false, "Transcript segments overlap or are out of order.";
    /// A segment, frame or metadata field is empty or invalid.
    SourceInvalidField = "source_invalid_field", InvalidInput, false, "A source field is empty or invalid.";
    /// The source is not valid UTF-8 text.
    SourceNotText = "source_not_text", InvalidInput, false, "The source is not UTF-8 text.";
    /// The source is not valid JSON, WebVTT or SRT, or has unknown fields.
    SourceMalformed = "source_malformed", InvalidInput, false, "The source could not be parsed in its format.";
    // --- workflow state
    /// The job's status does not allow this transition.
    InvalidTransition = "invalid_transition", Precondition, false, "The job is not in a state that allows this step.";
    /// An approval names a version that is no longer current.
    StaleVersion = "stale_version", Precondition, false, "The approved version is no longer the current one.";
    /// A gate already had its three operator rounds (requests for changes or edits); the job
    /// now needs a person.
    RoundsExhausted = "rounds_exhausted", Precondition, false, "This decision already had its three operator rounds; the job now needs a person.";
    /// Not enough measured history to compute an answer.
    InsufficientHistory = "insufficient_history", Precondition, false, "There is not enough measured history yet.";
    // --- storage
    /// The document does not exist in this workspace.
    NotFound = "not_found", NotFound, false, "Nothing with that id exists in this workspace.";
    /// A document with that id already exists.
    AlreadyExists = "already_exists", Conflict, false, "A document with that id already exists.";
    /// An idempotency key was reused with a different request.
    IdempotencyConflict = "idempotency_conflict", Conflict, false, "That idempotency key was already used for a different request.";
    /// A write's precondition (expected version) did not hold.
    PreconditionFailed = "precondition_failed", Conflict, false, "The document changed since it was read.";
    /// A transaction lost to a concurrent one and ran out of attempts.
    TransactionConflict = "transaction_conflict", Conflict, true, "A concurrent change conflicted; try again.";
    /// The state backend could not be reached or failed.
    StoreUnavailable = "store_unavailable", Unavailable, true, "The state store is unavailable.";
    /// Stored data could not be decoded.
    StoreCorrupt = "store_corrupt", Internal, false, "Stored data could not be decoded.";
    /// Blob storage (a bucket, or the data directory's blob folder) could not be reached or
    /// failed.
    BlobUnavailable = "blob_unavailable", Unavailable, true, "Blob storage is unavailable.";
    /// The disk (or the quota) holding the data directory has no space left: ENOSPC or EDQUOT
    /// from the data file, the local queue or the blob folder. The message names the folder and
    /// the space left. Not retryable: the same command fails until space is freed.
    StorageFull = "storage_full", Unavailable, false, "The disk holding the data directory is full; free space there, then run the command again.";
    /// The data file or its folder cannot be written (a read-only mount or no permission): the
    /// commands that only read still answer from it; a change is refused. The message names
    /// the path.
    StorageReadOnly = "storage_read_only", Precondition, false, "The data directory cannot be written; commands that only read still work.";
    /// A stored blob is missing, or is not the bytes its reference names.
    BlobCorrupt = "blob_corrupt", Internal, false, "A stored blob is missing or damaged.";
    // --- events
    /// The event bus could not be reached or failed.
    BusUnavailable = "bus_unavailable", Unavailable, true, "The event bus is unavailable.";
    /// An event's payload could not be decoded as its topic's type.
    EventUndecodable = "event_undecodable", InvalidInput, false, "The event could not be decoded.";
    /// A topic or subscription is not in the registry.
    UnknownTopic = "unknown_topic", InvalidInput, false, "The topic or subscription is not registered.";
    // --- authorization
    /// No valid credential was presented.
    Unauthenticated = "unauthenticated", Authorization, false, "A valid credential is required.";
    /// The credential does not allow this (tool contract code `authorization`).
    Authorization = "authorization", Authorization, false, "The caller is not allowed to read this workspace.";
    /// A Google ID token has expired.
    TokenExpired = "token_expired", Authorization, false, "The ID token has expired.";
    /// A Google ID token was issued for another audience.
    TokenWrongAudience = "token_wrong_audience", Authorization, false, "The ID token was issued for another service.";
    /// A Google ID token was not issued by Google.
    TokenWrongIssuer = "token_wrong_issuer", Authorization, false, "The ID token was not issued by Google.";
    /// A Google ID token's email is not verified.
    TokenEmailUnverified = "token_email_unverified", Authorization, false, "The ID token's email address is not verified.";
    /// A console session's state-changing request without its CSRF token (`X-CSRF-Token`).
    CsrfRejected = "csrf_rejected", Authorization, false, "The request lacks this session's CSRF token.";
    // --- credentials
    /// The caller's role does not allow the action (an operator on an admin-only route).
    Forbidden = "forbidden", Authorization, false, "This action needs an admin credential of the workspace.";
    /// Revoking would leave the workspace without an active admin.
    LastAdmin = "last_admin", Precondition, false, "The workspace's last active admin cannot be revoked.";
    // --- HTTP
    /// No route answers this path.
    UnknownRoute = "unknown_route", NotFound, false, "No resource exists at this path.";
    /// The route exists but not for this HTTP method.
    MethodNotAllowed = "method_not_allowed", InvalidInput, false, "This path does not accept that HTTP method.";
    // --- configuration
    /// A start-up setting is missing or invalid; the message names the variable.
    InvalidConfig = "invalid_config", InvalidInput, false, "A configuration setting is missing or invalid.";
    // --- workspaces
    /// A workspace configuration file is not valid TOML or breaks its schema or rules; the
    /// message names the field path (or line and column).
    InvalidWorkspaceConfig = "invalid_workspace_config", InvalidInput, false, "The workspace configuration is invalid.";
    /// `init` on a workspace that is already configured (use update).
    WorkspaceExists = "workspace_exists", Conflict, false, "The workspace is already configured; update it instead.";
    /// The workspace has no configuration yet (run `harmonia workspace init FILE`).
    WorkspaceNotConfigured = "workspace_not_configured", Precondition, false, "The workspace has no configuration yet; initialise it first.";
    // --- dependencies
    /// A dependency (trend feed, store read, connector) failed.
    DependencyUnavailable = "dependency_unavailable", Unavailable, true, "A dependency is unavailable.";
    /// The operator API could not be reached, or answered with something other than its own
    /// JSON (a proxy's or load balancer's page), after the client's retries.
    ApiUnavailable = "api_unavailable", Unavailable, true, "The operator API could not be reached.";
    // --- agent contracts
    /// A specialist output does not match the role's JSON Schema.
    SchemaViolation = "schema_violation", Contract, false, "The specialist output did not match its schema.";
    /// A required output key is missing from the state delta.
    MissingOutputKey = "missing_output_key", Contract, false, "The specialist did not produce its required output.";
    /// The coordinator routed the task to the wrong specialist.
    RoutingMismatch = "routing_mismatch", Contract, false, "The task was routed to the wrong specialist.";
    /// A model called a tool outside the role's allow-list.
    ToolNotAllowed = "tool_not_allowed", Contract, false, "The specialist called a tool it is not allowed to use.";
    /// Skills or references were loaded missing, twice, out of order or unapproved.
    SkillSequenceInvalid = "skill_sequence_invalid", Contract, false, "The specialist did not load its skills in the required order.";
    /// An output cites an evidence id or entity reference that does not exist.
    EvidenceUnknown = "evidence_unknown", Contract, false, "The output cites evidence that does not exist.";
    /// An output claims approval, publication, scheduling or mutation.
    AuthorityClaimed = "authority_claimed", Contract, false, "The output claims an authority the specialist does not have.";
    /// A claim of Nova's answer is of a kind the tool behind its evidence does not report (a
    /// suggestion resting on a job's status, a status resting on a trend signal).
    ClaimKindMismatch = "claim_kind_mismatch", Contract, false, "A claim's kind does not match the tool its evidence came from.";
    /// A planning read named a snapshot other than the request's.
    SnapshotMismatch = "snapshot_mismatch", Contract, false, "A planning read named a different snapshot.";
    /// A plan breaks a planning rule: a channel outside its brief's or the workspace's, a format
    /// the channel does not publish, a deadline after its window opens, a dependency cycle, or
    /// a brief neither planned nor deferred with a reason.
    PlanInvalid = "plan_invalid", Contract, false, "The plan breaks a planning rule (channel, format, deadline, dependencies or coverage of the briefs).";
    /// An angle's kind is not backed by the evidence it cites (a source angle by moments, a
    /// context angle by research, a performance angle by a verified post, a memory angle by
    /// an eligible fact).
    AngleUnqualified = "angle_unqualified", Contract, false, "An angle's kind is not backed by the evidence it cites.";
    /// A grounded search's metadata does not hold: a support names a chunk the search did not
    /// return, a segment lies outside the answer or differs from it, a source is not https, or
    /// nothing in the answer is supported.
    GroundingInvalid = "grounding_invalid", Unavailable, true, "The web search returned results whose grounding could not be verified.";
    /// A plan item's window is outside the workspace's posting windows for that day.
    PlanOutsideWindows = "plan_outside_windows", Contract, false, "A planned post falls outside the workspace's posting windows.";
    /// An answer says there is no data although a tool returned data.
    FalseNoData = "false_no_data", Contract, false, "The answer says there is no data, but a tool returned data.";
    /// An answer hides or alters a tool error.
    ToolErrorHidden = "tool_error_hidden", Contract, false, "The answer does not report a tool error exactly as it was returned.";
    /// A tool was retried after a non-retryable error, or more than once.
    RetryInvalid = "retry_invalid", Contract, false, "A tool was retried when it must not be, or more than once.";
    /// A claim about one record cites only dataset-level evidence.
    EvidenceLevelMismatch = "evidence_level_mismatch", Contract, false, "A claim about a specific record cites only aggregate evidence.";
    /// An output uses source text the instruction detector flagged (as a moment, a key
    /// message or a claim).
    UntrustedText = "untrusted_text", Contract, false, "The output uses source text flagged as instruction-like.";
    /// The model provider failed (a 5xx status), timed out or could not be reached, after the
    /// client's retries.
    ModelUnavailable = "model_unavailable", Unavailable, true, "The model is unavailable.";
    /// The model provider throttled the calls (HTTP 429), after retries that honoured its
    /// `Retry-After`.
    ModelThrottled = "model_throttled", Unavailable, true, "The model provider is throttling requests; the work is retried later.";
    /// The model provider refused the credentials (HTTP 401 or 403, or an invalid API key).
    ModelAuth = "model_auth", Unavailable, false, "The model provider refused the configured credentials.";
    /// The model provider does not know the configured model (HTTP 404, or an unknown model).
    ModelNotFound = "model_not_found", Unavailable, false, "The model provider does not know the configured model.";
    /// The model provider refused the request as malformed (another 4xx status).
    ModelBadRequest = "model_bad_request", Unavailable, false, "The model provider refused the request as malformed.";
    /// The model refused to answer: a safety block, or a finish reason that refuses.
    ModelRefused = "model_refused", Unavailable, false, "The model refused to answer (a safety block or a refusal).";
    /// The model provider's answer could not be read: not its documented format, cut short, or
    /// over the size limit.
    ModelOutputInvalid = "model_output_invalid", Contract, false, "The model's answer could not be read.";
    /// The job's next model call would pass the workspace's `[model] max_tokens_per_job`: the
    /// job waits where it is, and carries on once the limit is raised.
    BudgetExhausted = "budget_exhausted", Precondition, true, "The job has used the model tokens its workspace allows per job; raise [model] max_tokens_per_job to carry it on.";
    /// A command was stopped by SIGINT or SIGTERM before it finished; what it had in flight
    /// was handed back, and the next command carries on with it.
    Interrupted = "interrupted", Unavailable, true, "The command was interrupted; its work in flight continues with the next command.";
    // --- policy and publishing
    /// Deterministic policy refused the draft.
    PolicyViolation = "policy_violation", Policy, false, "The draft breaks a publishing policy rule.";
    /// The publication outcome could not be confirmed; verification will resolve it.
    PublishOutcomeUnknown = "publish_outcome_unknown", Unavailable, false, "The publishing outcome is unknown until verification.";
    /// The connector refused or failed the publication.
    ConnectorFailed = "connector_failed", Unavailable, true, "The publishing connector failed.";
    /// The platform refused the channel's credentials (a wrong or revoked app password or
    /// token); nothing was posted.
    ConnectorAuth = "connector_auth", Authorization, false, "The platform refused the channel's credentials.";
    /// The platform is rate-limiting the channel (HTTP 429); nothing was posted. The receipt
    /// keeps the time the platform said it allows posting again, when it said one.
    ConnectorThrottled = "connector_throttled", Unavailable, true, "The platform is limiting the channel's posts for now; nothing was posted.";
    /// The platform refused the post as a duplicate of one the account already holds (X's 403
    /// for duplicate content, LinkedIn's `DUPLICATE_POST`); nothing was posted.
    ConnectorDuplicate = "connector_duplicate", Conflict, false, "The platform refused the post as a duplicate of one the channel already holds; nothing was posted.";
    /// The platform refused the post as invalid (HTTP 400 or 422); nothing was posted.
    ConnectorRefused = "connector_refused", InvalidInput, false, "The platform refused the post as invalid; nothing was posted.";
    /// A post resting on mock evidence (or written by the offline model) was sent to a connector
    /// other than the sandbox; refused before any call.
    MockToLiveConnector = "mock_to_live_connector", Policy, false, "Mock evidence cannot be published through a live connector.";
    // --- imports
    /// An imported file is larger than the documented byte or row limit.
    ImportTooLarge = "import_too_large", InvalidInput, false, "The import file is larger than the documented limit.";
    /// An imported file is not UTF-8 CSV or JSON of the documented shape, or has no rows.
    ImportMalformed = "import_malformed", InvalidInput, false, "The import file could not be read in its format.";
    /// An imported CSV lacks a required column; the message names it.
    ImportMissingColumn = "import_missing_column", InvalidInput, false, "The import file lacks a required column.";
    /// An imported CSV has a column the format does not define; the message names it.
    ImportUnknownColumn = "import_unknown_column", InvalidInput, false, "The import file has a column the format does not define.";
    /// A row of an imported file is invalid; the message names its line and column.
    ImportInvalidRow = "import_invalid_row", InvalidInput, false, "A row of the import file is invalid.";
    /// Two rows of an imported file name the same record; the message names both lines.
    ImportDuplicateRow = "import_duplicate_row", InvalidInput, false, "Two rows of the import file name the same record.";
    /// An immutable document already exists under that id with other content.
    ImmutableConflict = "immutable_conflict", Conflict, false, "A different immutable document already exists under that id.";
    // --- everything else
    /// A defect inside Harmonia.
    Internal = "internal", Internal, false, "An internal error occurred.";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Code {
    /// Whether a step that met this code waits rather than fails: the model is unavailable,
    /// or the job's token budget is spent. The job keeps its status and the step runs again
    /// once that is resolved.
    pub fn is_stall(self) -> bool {
        self.is_model() || self == Code::BudgetExhausted
    }

    /// Whether this code is a model provider's failure (`model_*`).
    pub fn is_model(self) -> bool {
        matches!(
            self,
            Code::ModelUnavailable
                | Code::ModelThrottled
                | Code::ModelAuth
                | Code::ModelNotFound
                | Code::ModelBadRequest
                | Code::ModelRefused
                | Code::ModelOutputInvalid
        )
    }

    /// The HTTP status an API answers with for this code: by category, with 401 for a
    /// missing or refused credential, 405 for a wrong method and 413 for an oversized body.
    pub fn http_status(self) -> u16 {
        match (self, self.category()) {
            (Code::PayloadTooLarge | Code::ImportTooLarge, _) => 413,
            (Code::MethodNotAllowed, _) => 405,
            // WebDAV's "Insufficient Storage": not the 503 of an outage that passes by itself.
            (Code::StorageFull, _) => 507,
            (
                Code::Unauthenticated
                | Code::TokenExpired
                | Code::TokenWrongAudience
                | Code::TokenWrongIssuer
                | Code::TokenEmailUnverified,
                _,
            ) => 401,
            (_, Category::InvalidInput) => 400,
            (_, Category::NotFound) => 404,
            (_, Category::Authorization) => 403,
            (_, Category::Conflict | Category::Precondition) => 409,
            (_, Category::Unavailable) => 503,
            (_, Category::Contract) => 502,
            (_, Category::Policy) => 422,
            (_, Category::Internal) => 500,
        }
    }

    /// The Markdown table of every code, as checked in at `docs/error-codes.md`.
    pub fn table_markdown() -> String {
        let mut out = String::from(
            "# Error codes\n\nGenerated from `harmonia_contracts::error::Code` by \
             `cargo run -p harmonia-contracts --bin harmonia-schemas`; a test fails when it drifts.\n\n\
             Every error that crosses a boundary is `{code, category, message, retryable}`. \
             `retryable` is the default for the code; a transient dependency failure may set it \
             true and a permanent one false.\n\n\
             | code | category | retryable | HTTP | message |\n| --- | --- | --- | --- | --- |\n",
        );
        for code in Code::ALL {
            let category = serde_json::to_value(code.category())
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            out.push_str(&format!(
                "| `{}` | `{}` | {} | {} | {} |\n",
                code.as_str(),
                category,
                code.default_retryable(),
                code.http_status(),
                code.safe_message()
            ));
        }
        out
    }
}

/// What caused an [`Error`]: the lower-level error it was made from (a store's, a client's, an
/// I/O error), kept for the logs.
pub type Cause = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A typed error inside Harmonia: a stable code, a safe message and, for the logs only, what
/// caused it. The cause is never part of the wire form ([`Error::body`]) nor of equality: two
/// errors are the same error when their code and message are.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The stable code.
    pub code: Code,
    /// Safe text written by Harmonia (never input or model output).
    pub message: Cow<'static, str>,
    /// What caused it, if it was made from another error: logged (with the request's or the
    /// step's trace), never sent.
    #[source]
    cause: Option<Cause>,
}

impl PartialEq for Error {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message
    }
}

impl Eq for Error {}

impl Error {
    /// An error with a specific safe message.
    pub fn new(code: Code, message: impl Into<Cow<'static, str>>) -> Self {
        Self { code, message: message.into(), cause: None }
    }

    /// An error with the code's standard message.
    pub fn from_code(code: Code) -> Self {
        Self { code, message: Cow::Borrowed(code.safe_message()), cause: None }
    }

    /// The same error, caused by `cause` (kept for the logs).
    pub fn with_cause(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(std::sync::Arc::new(cause));
        self
    }

    /// What caused it, if it was made from another error.
    pub fn cause(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.cause.as_deref()
    }

    /// The chain of causes as one line for a log ("a: b: c"), empty without one. It is for the
    /// operator's logs only: a cause can name a file, a host or a provider's status.
    pub fn cause_chain(&self) -> String {
        let mut chain = Vec::new();
        let mut next = self.cause().map(|c| c as &(dyn std::error::Error + 'static));
        while let Some(cause) = next {
            chain.push(cause.to_string());
            next = cause.source();
        }
        chain.join(": ")
    }

    /// The wire form with the code's default retryability.
    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.code, self.message.clone())
    }
}

/// The wire shape of an error: `{code, category, message, retryable}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, try_from = "RawErrorBody")]
pub struct ErrorBody {
    /// Stable snake_case code.
    pub code: Code,
    /// The code's category (always `code.category()`).
    pub category: Category,
    /// Safe text written by Harmonia.
    pub message: String,
    /// Whether retrying the same request can help.
    pub retryable: bool,
}

/// The unchecked wire form; [`ErrorBody`] accepts it only when the category matches the code.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ErrorBody")]
struct RawErrorBody {
    /// Stable snake_case code.
    code: Code,
    /// The code's category (always the code's own).
    category: Category,
    /// Safe text written by Harmonia.
    #[schemars(length(min = 1))]
    message: String,
    /// Whether retrying the same request can help.
    retryable: bool,
}

impl TryFrom<RawErrorBody> for ErrorBody {
    type Error = String;
    fn try_from(raw: RawErrorBody) -> Result<Self, String> {
        if raw.category != raw.code.category() {
            return Err(format!("category does not match code {}", raw.code));
        }
        if raw.message.trim().is_empty() {
            return Err("error message must not be empty".into());
        }
        Ok(Self { code: raw.code, category: raw.category, message: raw.message, retryable: raw.retryable })
    }
}

impl ErrorBody {
    /// A body with the code's category and default retryability.
    pub fn new(code: Code, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            category: code.category(),
            message: message.into().into_owned(),
            retryable: code.default_retryable(),
        }
    }

    /// The same body with an explicit retryable flag.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }
}

/// A specialist output that broke its contract, as it crosses the coordinator boundary.
///
/// The message is always the code's standard text: model output and validation payloads never
/// become operator-facing text. `schema_path` points into the schema, never into the value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(deny_unknown_fields)]
#[error("{role} {code}: {safe_message}")]
pub struct AgentContractError {
    /// The role whose output failed.
    pub role: Role,
    /// Stable code (one of the `contract` category, or a `model_*` code).
    pub code: Code,
    /// The code's safe operator message.
    pub safe_message: String,
    /// JSON pointer into the role's output schema, when a schema rule failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_path: Option<String>,
}

impl AgentContractError {
    /// A contract error for `role` with the code's standard message.
    pub fn new(role: Role, code: Code) -> Self {
        Self { role, code, safe_message: code.safe_message().to_owned(), schema_path: None }
    }

    /// The same error pointing at a location in the role's output schema.
    pub fn at_schema_path(mut self, path: impl Into<String>) -> Self {
        self.schema_path = Some(path.into());
        self
    }

    /// The wire error body of this failure.
    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.code, self.safe_message.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_kept_for_the_logs_but_never_sent_nor_compared() {
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk /var/lib/harmonia is full");
        let e = Error::new(Code::StoreUnavailable, "The state store is unavailable.").with_cause(io);
        assert_eq!(e.cause_chain(), "disk /var/lib/harmonia is full");
        assert_eq!(
            e,
            Error::new(Code::StoreUnavailable, "The state store is unavailable."),
            "the cause is not compared"
        );
        let wire = serde_json::to_string(&e.body()).expect("json");
        assert!(!wire.contains("/var/lib"), "{wire}");
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(Error::from_code(Code::Internal).cause_chain(), "");
    }
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_snake_case_and_serialize_as_their_text() {
        let mut seen = HashSet::new();
        for code in Code::ALL {
            let text = code.as_str();
            assert!(seen.insert(text), "duplicate {text}");
            assert!(text.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{text}");
            assert_eq!(serde_json::to_value(code).ok(), Some(serde_json::json!(text)));
        }
    }

    #[test]
    fn tool_contract_codes_exist_with_the_spec_categories() {
        assert_eq!(Code::InvalidQuery.category(), Category::InvalidInput);
        assert_eq!(Code::InvalidId.category(), Category::InvalidInput);
        assert_eq!(Code::NotFound.category(), Category::NotFound);
        assert_eq!(Code::Authorization.category(), Category::Authorization);
        assert_eq!(Code::InsufficientHistory.category(), Category::Precondition);
        assert_eq!(Code::DependencyUnavailable.category(), Category::Unavailable);
        assert!(Code::DependencyUnavailable.default_retryable());
        assert!(!Code::NotFound.default_retryable());
    }

    #[test]
    fn http_statuses_follow_the_category() {
        assert_eq!(Code::Unauthenticated.http_status(), 401);
        assert_eq!(Code::Authorization.http_status(), 403);
        assert_eq!(Code::PayloadTooLarge.http_status(), 413);
        assert_eq!(Code::TokenExpired.http_status(), 401, "a refused token asks for a new one");
        assert_eq!(Code::UnknownRoute.http_status(), 404);
        assert_eq!(Code::MethodNotAllowed.http_status(), 405);
        assert_eq!(Code::StorageFull.http_status(), 507);
        assert_eq!(Code::StorageReadOnly.http_status(), 409);
        assert_eq!(Code::InvalidQuery.http_status(), 400);
        assert_eq!(Code::NotFound.http_status(), 404);
        assert_eq!(Code::StaleVersion.http_status(), 409);
        assert_eq!(Code::DependencyUnavailable.http_status(), 503);
        assert_eq!(Code::SchemaViolation.http_status(), 502);
        assert!(Code::ALL.iter().all(|c| (400..600).contains(&c.http_status())));
    }

    #[test]
    fn error_body_rejects_mismatched_category_and_unknown_fields() {
        let ok = serde_json::json!({"code":"not_found","category":"not_found","message":"x","retryable":false});
        assert!(serde_json::from_value::<ErrorBody>(ok).is_ok());
        let wrong = serde_json::json!({"code":"not_found","category":"internal","message":"x","retryable":false});
        assert!(serde_json::from_value::<ErrorBody>(wrong).is_err());
        let extra =
            serde_json::json!({"code":"not_found","category":"not_found","message":"x","retryable":false,"stack":"y"});
        assert!(serde_json::from_value::<ErrorBody>(extra).is_err());
    }

    #[test]
    fn agent_contract_error_message_is_the_code_text() {
        let e = AgentContractError::new(Role::Nimi, Code::SchemaViolation).at_schema_path("/properties/moments");
        assert_eq!(e.safe_message, Code::SchemaViolation.safe_message());
        assert_eq!(e.body().code, Code::SchemaViolation);
        let json = serde_json::to_value(&e).ok();
        assert_eq!(
            json,
            Some(
                serde_json::json!({"role":"nimi","code":"schema_violation","safe_message":Code::SchemaViolation.safe_message(),"schema_path":"/properties/moments"})
            )
        );
    }
}
