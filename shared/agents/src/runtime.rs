//! The invocation loop: seed → session → model ⇄ allow-listed tools → validated output →
//! `state_delta` → session deleted → one activity record.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use harmonia_contracts::domain::{ActivityOutcome, ActivityRecord, Operation, ResearchEvidence, TokenUsage};
use harmonia_contracts::event::Stage;
use harmonia_contracts::ids::{DocId, JobId, OperatorId, SnapshotId, WorkspaceId};
use harmonia_contracts::trace::{SpanId, TraceParent};
use harmonia_contracts::{AgentContractError, Code, Role};
use harmonia_store::{Collection, Store, Write, WriteOp, encode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::Instrument as _;

use crate::io;
use crate::model::{FunctionDeclaration, Model, ModelRequest, Part, Speaker, Turn};
use crate::research::Binding;
use crate::role::{self, Seen};
use crate::roles::{RoleSpec, spec};
use crate::session::{self, SessionEvent};
use crate::skills::{LoadEvent, SkillLibrary, SkillRule};
use crate::tools::{Tool, ToolContext, ToolFailure};
use crate::validate;

/// Where activity records are stored.
pub const ACTIVITY: Collection = Collection::new("activity");

/// Model turns allowed per invocation before it counts as producing no output.
pub const MAX_TURNS: usize = 24;

/// How many corrective turns an invocation may take (`HARMONIA_MODEL_REPAIRS`): when an answer
/// misses the role's contract in a way a model can mend ([`repairable`]), the runtime tells
/// the model what was wrong, in its own fixed words, and lets it answer again, at most this
/// many times; 0 turns repairs off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repairs(u8);

impl Repairs {
    /// Two corrective turns.
    pub const DEFAULT: Repairs = Repairs(2);
    /// The most an invocation may take.
    pub const MAX: u8 = 5;

    /// `n` repairs, if at most [`Repairs::MAX`].
    pub fn new(n: u8) -> Option<Self> {
        (n <= Self::MAX).then_some(Self(n))
    }

    /// How many.
    pub fn get(self) -> u8 {
        self.0
    }
}

impl Default for Repairs {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl std::str::FromStr for Repairs {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        s.trim().parse::<u8>().ok().and_then(Self::new).ok_or(())
    }
}

/// Whether a failure with `code` is a miss a model can mend in a corrective turn: an answer
/// that is not readable JSON or breaks the schema, a quote that is not exactly what was said
/// within its range, an evidence id or function the request does not hold, skills loaded out
/// of order, a missing output, a wrong specialist, or a plan or angle that breaks its rule.
/// Never an authority claim or text the instruction detector flags (those end the invocation
/// at once: a model is not coached around them), nor a model provider's error.
pub fn repairable(code: Code) -> bool {
    matches!(
        code,
        Code::SchemaViolation
            | Code::EvidenceUnknown
            | Code::SkillSequenceInvalid
            | Code::ToolNotAllowed
            | Code::MissingOutputKey
            | Code::RoutingMismatch
            | Code::PlanInvalid
            | Code::AngleUnqualified
    )
}

/// Everything an invocation needs, built by deterministic code from authoritative state: the
/// role's typed `input` ([`role::Role::Input`]) and where and for whom it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InvocationSeed<I> {
    /// Tenant.
    pub workspace: WorkspaceId,
    /// Who the invocation runs for (`pipeline` for stage workers).
    pub user: OperatorId,
    /// Job.
    pub job: JobId,
    /// Pipeline stage.
    pub stage: Stage,
    /// The role's typed input.
    pub input: I,
    /// Trace context of the calling span.
    pub trace: TraceParent,
    /// The job's token budget, when its workspace sets one: a model call expected to pass it
    /// is not made (`budget_exhausted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<TokenBudget>,
}

/// What a job may still spend on the model: the workspace's `[model] max_tokens_per_job`, and
/// the tokens the job's model calls took before this invocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenBudget {
    /// The most tokens the job may take, input and output together.
    pub limit: u64,
    /// What it took before this invocation.
    pub used: u64,
    /// The most input tokens one call of each role took earlier in the job (what the provider
    /// counted, which an estimate from the request's size may fall short of): a role's next
    /// call is expected to take at least as much.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub largest_call: BTreeMap<Role, u32>,
}

impl TokenBudget {
    /// A budget of `limit` of which nothing is used yet.
    pub fn new(limit: u64) -> Self {
        Self { limit, used: 0, largest_call: BTreeMap::new() }
    }

    /// Count what the invocation `record` took: its tokens, and its calls' mean input as a
    /// floor for its role's largest call (the conversation grows, so its last call was at least
    /// that large).
    pub fn count(&mut self, record: &ActivityRecord) {
        self.used = self.used.saturating_add(record.usage.total());
        if let Some(call) = record.usage.input_tokens.checked_div(record.model_calls) {
            let largest = self.largest_call.entry(record.agent).or_insert(0);
            *largest = (*largest).max(call);
        }
    }
}

/// The input tokens a request is expected to take: about four bytes of what it sends (the
/// instruction, every turn, the function declarations and the response schema) a token. Only
/// an estimate, to refuse a call before it is made; what the provider counts is what is stored.
fn expected_input_tokens(request: &ModelRequest) -> u64 {
    let mut bytes = request.system_instruction.len();
    for turn in &request.turns {
        for part in &turn.parts {
            bytes += match part {
                Part::Text(t) => t.len(),
                Part::FunctionCall { name, args } => name.len() + args.to_string().len(),
                Part::FunctionResponse { name, response } => name.len() + response.to_string().len(),
            };
        }
    }
    for tool in request.tools.iter() {
        bytes += tool.name.len() + tool.description.len() + tool.parameters.to_string().len();
    }
    bytes += request.response_schema.to_string().len();
    u64::try_from(bytes / 4).unwrap_or(u64::MAX)
}

impl<I> InvocationSeed<I> {
    /// The same invocation context with another input.
    pub fn with<J>(&self, input: J) -> InvocationSeed<J> {
        InvocationSeed {
            workspace: self.workspace.clone(),
            user: self.user.clone(),
            job: self.job.clone(),
            stage: self.stage,
            input,
            trace: self.trace.clone(),
            budget: self.budget.clone(),
        }
    }
}

/// One recorded step of an invocation (metadata only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// What was loaded or called.
    pub event: LoadEvent,
    /// Whether it succeeded.
    pub ok: bool,
    /// Evidence ids the call returned, citable in this invocation only.
    pub evidence: Vec<harmonia_contracts::ids::EvidenceId>,
    /// A data tool's response (in memory only; never stored or logged).
    pub result: Option<Value>,
    /// A data tool's arguments (in memory only): retries are counted per tool and arguments.
    pub args: Option<Value>,
    /// The ids of the exported span of a data tool's call, when OpenTelemetry exports spans.
    pub span: Option<TraceParent>,
}

impl Step {
    fn new(event: LoadEvent, ok: bool) -> Self {
        Self { event, ok, evidence: Vec::new(), result: None, args: None, span: None }
    }
}

/// The exported span's own trace context, when OpenTelemetry is on.
fn exported(span: &tracing::Span) -> Option<TraceParent> {
    harmonia_telemetry::traceparent(span).and_then(|t| t.parse::<TraceParent>().ok())
}

/// Whether a tool's answer is an envelope error the contract calls transient.
fn retryable_error(value: &Value) -> bool {
    value.get("status").and_then(Value::as_str) == Some("error")
        && value.get("error").and_then(|e| e.get("retryable")).and_then(Value::as_bool) == Some(true)
}

/// Evidence ids in a tool response: `evidence` as a list of ids, or of tool-envelope entries
/// (`{"evidenceId", ...}`).
fn evidence_of(value: &Value) -> Vec<harmonia_contracts::ids::EvidenceId> {
    value
        .get("evidence")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().or_else(|| v.get("evidenceId").and_then(Value::as_str)))
                .filter_map(|id| id.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A successful invocation.
#[derive(Clone, Debug, PartialEq)]
pub struct Invocation<T> {
    /// The role's answer, parsed once into its output type and validated (the session's
    /// `state_delta` carried it under the role's output key).
    pub output: T,
    /// The activity record (also stored).
    pub activity: ActivityRecord,
    /// The real load and tool sequence.
    pub steps: Vec<Step>,
    /// Every result its grounded searches accepted, for the step to persist with the output
    /// (so policy can resolve the `web-*` ids the output cites).
    pub research: Vec<ResearchEvidence>,
}

/// What an invocation's children left besides its steps: the activity records of its tool
/// calls and research children, and the research results they accepted.
#[derive(Default)]
struct Children {
    activity: Vec<ActivityRecord>,
    research: Vec<ResearchEvidence>,
}

/// Why an invocation did not produce an accepted output.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The specialist broke its contract (or the model was unavailable).
    #[error(transparent)]
    Contract(#[from] AgentContractError),
    /// Sessions or activity could not be stored.
    #[error("agent state unavailable: {0}")]
    Store(#[from] harmonia_store::Error),
}

impl Error {
    /// The contract error, if that is what this is.
    pub fn contract(&self) -> Option<&AgentContractError> {
        match self {
            Error::Contract(e) => Some(e),
            Error::Store(_) => None,
        }
    }
}

/// The id of an activity record: `<job>.<span>`, or its stable shortening when a long job id
/// makes that too long, so a record is never stored under a random id.
pub fn activity_id(job: &JobId, span: &SpanId) -> DocId {
    DocId::stable(&format!("{job}.{span}"))
}

/// Count the invocation (`harmonia.agent.invocations`, by agent, stage and outcome code) and
/// record its duration as a GenAI `invoke_agent` operation. Its tokens are recorded per model
/// call (see [`generate`]), where the conventions put them. The global meter provider
/// is a no-op unless telemetry export is configured.
fn record_metrics(activity: &ActivityRecord, provider: &str) {
    use opentelemetry::KeyValue;
    let error = match activity.outcome {
        ActivityOutcome::Success => None,
        ActivityOutcome::Failure { code } => Some(code.as_str()),
    };
    let labels = [
        KeyValue::new("agent", activity.agent.as_str()),
        KeyValue::new("stage", activity.stage.as_str()),
        KeyValue::new("outcome", error.unwrap_or("success")),
    ];
    opentelemetry::global::meter("harmonia")
        .u64_counter("harmonia.agent.invocations")
        .with_description("Specialist invocations")
        .build()
        .add(1, &labels);
    harmonia_telemetry::genai::record(&harmonia_telemetry::genai::Operation {
        name: harmonia_telemetry::genai::INVOKE_AGENT,
        provider,
        model: &activity.model,
        agent: activity.agent.as_str(),
        stage: Some(activity.stage.as_str()),
        error,
        seconds: activity.duration_us as f64 / 1_000_000.0,
        tokens: None,
    });
}

/// A low-cardinality name for a failed tool call (`error.type`).
fn tool_error_type(e: &ToolFailure) -> &'static str {
    match e {
        ToolFailure::SnapshotMismatch => "snapshot_mismatch",
        ToolFailure::InvalidArguments => "invalid_request",
        ToolFailure::Unavailable => "dependency_unavailable",
    }
}

/// A low-cardinality name for a failed model call (`error.type`).
fn model_error_type(e: &crate::model::Error) -> &'static str {
    use crate::model::Error;
    match e {
        Error::Throttled => "throttled",
        Error::Unavailable(_) => "unavailable",
        Error::Auth => "auth",
        Error::NotFound => "not_found",
        Error::BadRequest => "bad_request",
        Error::Refused(_) => "refused",
        Error::OutputInvalid(_) => "output_invalid",
        Error::Exhausted => "exhausted",
    }
}

/// One model call, in a GenAI client span (`generate_content {model}`) carrying its token
/// counts, and recorded in the GenAI client metrics (labelled with `stage` when the call serves
/// one). Never records the request or the answer.
pub(crate) async fn generate(
    model: &dyn Model,
    request: &ModelRequest,
    stage: Option<Stage>,
) -> Result<crate::model::ModelResponse, crate::model::Error> {
    use harmonia_telemetry::genai;
    let (name, provider) = (model.name(), model.provider());
    let span = tracing::info_span!(
        "generate_content",
        otel.name = %format_args!("{} {name}", genai::GENERATE_CONTENT),
        otel.kind = "client",
        gen_ai.operation.name = genai::GENERATE_CONTENT,
        gen_ai.provider.name = provider,
        gen_ai.request.model = name,
        gen_ai.agent.name = %request.role,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let clock = Instant::now();
    let result = model.generate(request).instrument(span.clone()).await;
    let (error, tokens) = match &result {
        Ok(response) => {
            let usage = &response.usage;
            span.record("gen_ai.usage.input_tokens", usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", usage.output_tokens);
            (None, Some((u64::from(usage.input_tokens), u64::from(usage.output_tokens))))
        }
        Err(e) => {
            let error = model_error_type(e);
            span.record("error.type", error);
            span.record("otel.status_code", "ERROR");
            (Some(error), None)
        }
    };
    genai::record(&genai::Operation {
        name: genai::GENERATE_CONTENT,
        provider,
        model: name,
        agent: request.role.as_str(),
        stage: stage.map(Stage::as_str),
        error,
        seconds: clock.elapsed().as_secs_f64(),
        tokens,
    });
    result
}

/// A role's input with its role's contract, behind one non-generic interface, so that the
/// invocation loop is compiled once rather than once per role. The accepted output waits in
/// `output` for the typed caller ([`Runtime::invoke`]) to take.
trait Bound: Sync {
    fn role(&self) -> Role;
    fn spec(&self) -> &'static RoleSpec;
    fn message(&self) -> String;
    fn snapshot(&self) -> Option<&SnapshotId>;
    fn binding(&self) -> Option<Binding>;
    /// Parse the schema-valid `answer` into the role's output type once, and validate it.
    fn accept(&self, answer: &Value, seen: Seen<'_>) -> Result<(), validate::Miss>;
}

struct Typed<'a, R: role::Role> {
    input: &'a R::Input,
    output: std::sync::OnceLock<R::Output>,
}

impl<'a, R: role::Role> Typed<'a, R> {
    fn new(input: &'a R::Input) -> Self {
        Self { input, output: std::sync::OnceLock::new() }
    }
}

impl<R: role::Role> Bound for Typed<'_, R> {
    fn role(&self) -> Role {
        R::ID
    }
    fn spec(&self) -> &'static RoleSpec {
        R::spec()
    }
    fn message(&self) -> String {
        io::task_message(R::TASK, self.input)
    }
    fn snapshot(&self) -> Option<&SnapshotId> {
        R::snapshot(self.input)
    }
    fn binding(&self) -> Option<Binding> {
        R::research(self.input)
    }
    fn accept(&self, answer: &Value, seen: Seen<'_>) -> Result<(), validate::Miss> {
        let output = R::Output::deserialize(answer).map_err(|_| Code::SchemaViolation)?;
        R::validate(self.input, &output, seen)?;
        // An invocation accepts one answer: it returns as soon as one passes.
        let _ = self.output.set(output);
        Ok(())
    }
}

/// An invocation's seed with its input bound to its role.
type Erased<'a> = InvocationSeed<&'a dyn Bound>;

/// When a piece of work began: the wall-clock time for its record, and a monotonic clock for
/// its duration.
#[derive(Clone, Copy)]
struct Began {
    at: DateTime<Utc>,
    clock: Instant,
}

impl Began {
    fn now() -> Self {
        Self { at: Utc::now(), clock: Instant::now() }
    }
}

/// `budget_exhausted` when the job's next model call, of `request`, is expected to pass its
/// budget: what the job took before, what this invocation and its searches took so far, and
/// the request's expected input.
fn within_budget(
    seed: &Erased<'_>,
    tally: &Tally,
    children: &Children,
    request: &ModelRequest,
) -> Result<(), AgentContractError> {
    let Some(budget) = &seed.budget else { return Ok(()) };
    let spent = budget.used + tally.usage.total() + children.activity.iter().map(|a| a.usage.total()).sum::<u64>();
    // The conversation only grows: the next call takes at least what the last one did, and a
    // role's call at least what its largest did earlier in the job.
    let earlier = budget.largest_call.get(&seed.input.role()).copied().unwrap_or(0);
    let expected = expected_input_tokens(request).max(u64::from(tally.last_input.max(earlier)));
    if spent.saturating_add(expected) > budget.limit {
        tracing::warn!(job = %seed.job, agent = %seed.input.role(), limit = budget.limit, spent, "the job's token budget would be passed; no call is made");
        return Err(contract(seed.input.role(), Code::BudgetExhausted));
    }
    Ok(())
}

/// What an invocation counts as it runs.
#[derive(Default)]
struct Tally {
    usage: TokenUsage,
    model_calls: u32,
    /// The code each corrective turn answered, in order.
    repaired: Vec<Code>,
    /// The input tokens the provider counted for the last call.
    last_input: u32,
}

/// An answer (or a call) the runtime refused, and what its corrective turn may say of it.
struct Refused {
    error: AgentContractError,
    /// The part of the answer to blame: a JSON pointer, with the id the answer gave that part.
    at: Option<String>,
    /// No JSON object could be read from the answer at all.
    unreadable: bool,
}

impl Refused {
    /// The corrective turn: the miss's stable code, where it is, and the rule, in words fixed
    /// here. It names only pointers, schema paths and ids the conversation already holds,
    /// never text of the input or the answer.
    fn corrective(&self) -> String {
        let code = self.error.code;
        let rule = match code {
            Code::SchemaViolation if self.unreadable => {
                "The answer must be one JSON object, and nothing else: no other text, and no second object."
            }
            Code::SchemaViolation if self.at.as_deref() == Some("/thread") => {
                "When the item's format is thread, list its posts in order in thread (2 to 25 posts, none blank, each within the platform's limit on its own); for any other format, leave thread out."
            }
            Code::SchemaViolation => {
                "The answer must match the response schema: every required field present, each value of its type and within its limits, and no field the schema does not name."
            }
            Code::EvidenceUnknown => {
                "Cite only evidence ids given in your input or returned by a tool in this conversation. A moment's quote must be the exact words of one utterance of the transcript, and its start_ms and end_ms must cover every cue those words are said in."
            }
            Code::SkillSequenceInvalid => {
                "Load your skills with load_skill in the order your instructions give, before your answer, and load a reference only from a skill you loaded."
            }
            Code::ToolNotAllowed => "Call only the functions this request declares.",
            Code::MissingOutputKey => "The answer was empty: answer with one JSON object.",
            Code::RoutingMismatch => {
                "Name the one specialist this task belongs to, from the specialists the request lists."
            }
            other => other.safe_message(),
        };
        let mut text = format!("Your last answer was refused with the code {}", code.as_str());
        if let Some(at) = &self.at {
            text.push_str(&format!(", at {at}"));
        }
        if let Some(path) = &self.error.schema_path {
            text.push_str(&format!(", by the schema rule {path}"));
        }
        text.push_str(". ");
        text.push_str(rule);
        text.push_str(" Answer again, correcting only that; keep the rest of your answer as it was.");
        text
    }
}

/// The JSON object of a model's answer, read tolerantly: the whole answer, or the first
/// object it holds in a fenced block or among prose (a model that says a sentence before its
/// JSON, or fences it). Only a JSON object counts; what surrounds it is dropped unread.
fn answer_object(text: &str) -> Option<Value> {
    let object = |t: &str| serde_json::from_str::<Value>(t.trim()).ok().filter(Value::is_object);
    if let Some(value) = object(text) {
        return Some(value);
    }
    // A `{` may open the object: the first place from which one whole object parses wins. Only
    // the first few are tried, so that an answer of many braces costs a bounded number of reads.
    text.char_indices().filter(|(_, c)| *c == '{').take(16).find_map(|(start, _)| {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        stream.next().and_then(Result::ok).filter(Value::is_object)
    })
}

/// A JSON pointer into an answer, fit to repeat to the model: keys that are plain names and
/// array indices as they are, anything else (a key the model made up) as `*`.
fn pointer(path: &str) -> String {
    let plain = |segment: &str| {
        !segment.is_empty()
            && segment.len() <= 64
            && segment.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    let segments: Vec<&str> = path.split('/').skip(1).map(|s| if plain(s) { s } else { "*" }).collect();
    if segments.is_empty() { "the top level of the answer".to_owned() } else { format!("/{}", segments.join("/")) }
}

/// The agent runtime.
pub struct Runtime {
    model: Arc<dyn Model>,
    store: Arc<dyn Store>,
    skills: Arc<SkillLibrary>,
    tools: HashMap<String, Arc<dyn Tool>>,
    repairs: Repairs,
    /// Each role's tool declarations, made at its first invocation: they follow from its
    /// spec, the tools registered and the model, none of which an invocation changes.
    declared: [std::sync::OnceLock<Arc<[FunctionDeclaration]>>; Role::ALL.len()],
}

/// A role's output schema and its compiled validator (`None` if it did not compile, which a
/// unit test rules out): generated and compiled once per process, when the role is first
/// invoked, so a function that never runs a role never pays for it.
fn output_schema(role: Role) -> &'static (Arc<Value>, Option<jsonschema::Validator>) {
    type Compiled = std::sync::OnceLock<(Arc<Value>, Option<jsonschema::Validator>)>;
    static SCHEMAS: [Compiled; Role::ALL.len()] = [const { std::sync::OnceLock::new() }; Role::ALL.len()];
    SCHEMAS[role as usize].get_or_init(|| {
        let schema = (spec(role).output_schema)();
        let validator = jsonschema::options().should_validate_formats(true).build(&schema).ok();
        (Arc::new(schema), validator)
    })
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("model", &self.model.name()).finish_non_exhaustive()
    }
}

fn contract(role: Role, code: Code) -> AgentContractError {
    AgentContractError::new(role, code)
}

impl Runtime {
    /// A runtime over `model`, `store` and `skills`, with Temi's snapshot tools and the
    /// verified-publication search registered (the grounded web search is the runtime's own
    /// child invocation, see [`crate::research`]).
    pub fn new(model: Arc<dyn Model>, store: Arc<dyn Store>, skills: Arc<SkillLibrary>) -> Self {
        let mut runtime = Self {
            model,
            store,
            skills,
            tools: HashMap::new(),
            repairs: Repairs::DEFAULT,
            declared: std::array::from_fn(|_| std::sync::OnceLock::new()),
        };
        for view in crate::tools::SnapshotView::ALL {
            runtime = runtime.with_tool(Arc::new(crate::tools::SnapshotTool(view)));
        }
        runtime.with_tool(Arc::new(crate::research::SearchVerifiedPublications))
    }

    /// Register a data tool (a role still calls only what its allow-list names).
    pub fn with_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.insert(tool.declaration().name, tool);
        self.declared = std::array::from_fn(|_| std::sync::OnceLock::new());
        self
    }

    /// With at most `repairs` corrective turns per invocation (default [`Repairs::DEFAULT`]).
    pub fn with_repairs(mut self, repairs: Repairs) -> Self {
        self.repairs = repairs;
        self
    }

    /// The model backend.
    pub fn model(&self) -> &dyn Model {
        &*self.model
    }

    /// Route `task` through Harmonia and check it reached its one expected specialist, of
    /// the specialists the coordinator routes to ([`io::Task::ROUTED`]).
    pub async fn route<I>(&self, base: &InvocationSeed<I>, task: io::Task) -> Result<Role, Error> {
        Ok(self.routed(base, task).await?.0)
    }

    /// [`Runtime::route`], with the routing invocation's record.
    async fn routed<I>(&self, base: &InvocationSeed<I>, task: io::Task) -> Result<(Role, ActivityRecord), Error> {
        let specialists = io::Task::ROUTED.into_iter().map(io::Task::specialist).collect();
        let seed = base.with(io::HarmoniaInput { task, specialists });
        let routed = self.invoke::<role::Harmonia>(&seed).await?;
        Ok((routed.output.specialist, routed.activity))
    }

    /// Route the seed's task through Harmonia, then invoke the specialist `R`. Only the routed
    /// tasks ([`io::Task::ROUTED`]) go this way; the others are invoked directly
    /// ([`Runtime::invoke`]), and asking to route one is a `routing_mismatch`.
    pub async fn run_task<R: role::Role>(
        &self,
        seed: &InvocationSeed<R::Input>,
    ) -> Result<Invocation<R::Output>, Error> {
        let task = R::TASK.filter(|t| t.routed());
        let task = task.ok_or_else(|| contract(Role::Harmonia, Code::RoutingMismatch))?;
        let (_, routing) = self.routed(seed, task).await?;
        let typed = Typed::<R>::new(&seed.input);
        let mut erased = seed.with(&typed as &dyn Bound);
        // The specialist's budget counts what the routing just took.
        if let Some(budget) = &mut erased.budget {
            budget.count(&routing);
        }
        let invocation = self.invoke_erased(&erased).await?;
        Self::typed(typed, invocation)
    }

    /// Run one invocation of the role `R`: its answer comes back parsed into `R`'s output type
    /// and validated.
    pub async fn invoke<R: role::Role>(&self, seed: &InvocationSeed<R::Input>) -> Result<Invocation<R::Output>, Error> {
        let typed = Typed::<R>::new(&seed.input);
        let invocation = self.invoke_erased(&seed.with(&typed as &dyn Bound)).await?;
        Self::typed(typed, invocation)
    }

    /// The finished invocation with the output its role accepted.
    fn typed<R: role::Role>(typed: Typed<'_, R>, invocation: Invocation<()>) -> Result<Invocation<R::Output>, Error> {
        let Invocation { activity, steps, research, .. } = invocation;
        let output = typed.output.into_inner().ok_or_else(|| contract(R::ID, Code::MissingOutputKey))?;
        Ok(Invocation { output, activity, steps, research })
    }

    /// Run one invocation of the seed's role.
    async fn invoke_erased(&self, seed: &Erased<'_>) -> Result<Invocation<()>, Error> {
        let role = seed.input.role();
        let model = self.model.name();
        let traced = tracing::info_span!(
            "invoke_agent",
            otel.name = %format_args!("invoke_agent {role}"),
            gen_ai.operation.name = harmonia_telemetry::genai::INVOKE_AGENT,
            gen_ai.agent.name = %role,
            gen_ai.provider.name = self.model.provider(),
            gen_ai.request.model = model,
            harmonia.stage = %seed.stage,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            // The ids correlate log lines with the trace (Cloud Logging's trace field).
            trace_id = %seed.trace.trace_id(),
            span_id = tracing::field::Empty,
        );
        let context = exported;
        // Under a stage's span the invocation is its child; otherwise (Nova, tests) it joins
        // the caller's trace directly.
        let parent = match context(&tracing::Span::current()) {
            Some(stage) => stage,
            None => {
                let t = &seed.trace;
                harmonia_telemetry::continue_trace(&traced, &t.trace_id(), &t.span_id(), t.sampled());
                t.clone()
            }
        };
        // The activity record carries the exported span's own ids and its parent's, so it
        // points into the trace; without OpenTelemetry the ids are generated as before.
        let span = context(&traced).unwrap_or_else(|| seed.trace.child());
        traced.record("span_id", span.span_id());
        let result = self.invoke_in(seed, span, &parent).instrument(traced.clone()).await;
        if let Err(e) = &result {
            let code = match e {
                Error::Contract(c) => c.code,
                Error::Store(s) => s.code(),
            };
            traced.record("error.type", code.as_str());
            traced.record("otel.status_code", "ERROR");
        }
        result
    }

    async fn invoke_in(
        &self,
        seed: &Erased<'_>,
        span: TraceParent,
        parent: &TraceParent,
    ) -> Result<Invocation<()>, Error> {
        let role = seed.input.role();
        let spec = seed.input.spec();
        let began = Began::now();
        let store = &*self.store;
        let mut session = session::open(store, &seed.workspace, &seed.user, &seed.job, role, &span.span_id()).await?;

        let mut steps = Vec::new();
        let mut tally = Tally::default();
        let mut children = Children::default();
        let outcome = self.run(seed, spec, &span, &mut steps, &mut tally, &mut children).await;
        let Tally { usage, model_calls, repaired, .. } = tally;
        let repairs = u32::try_from(repaired.len()).unwrap_or(u32::MAX);
        let outcome = match outcome {
            Ok(value) => {
                // The handoff travels in the session under the role's output key; the typed
                // output the role accepted is what the caller gets.
                let event =
                    SessionEvent { author: role, state_delta: BTreeMap::from([(spec.output_key.to_owned(), value)]) };
                session::append(&mut session, event);
                Ok(())
            }
            Err(e) => Err(Error::Contract(e)),
        };

        let operation = if role == Role::Harmonia { Operation::Route } else { Operation::Invoke };
        let recorded = match &outcome {
            Ok(_) => ActivityOutcome::Success,
            Err(Error::Contract(e)) => ActivityOutcome::Failure { code: e.code },
            Err(Error::Store(e)) => ActivityOutcome::Failure { code: e.code() },
        };
        let activity = ActivityRecord {
            usage,
            model_calls,
            repairs,
            repaired,
            ..self.activity(seed, operation, began, &span, parent, recorded)
        };
        tracing::info!(
            workspace = %activity.tenant, job = %activity.job, agent = %activity.agent, stage = %activity.stage,
            model = %activity.model, duration_us = activity.duration_us, input_tokens = activity.usage.input_tokens,
            output_tokens = activity.usage.output_tokens, repairs = activity.repairs, outcome = ?activity.outcome,
            trace_id = %activity.trace_id, span_id = %activity.span_id, "specialist invocation"
        );
        record_metrics(&activity, self.model.provider());
        // The session goes (after failure too) in the same commit that records the activity.
        let mut writes = Vec::with_capacity(2 + children.activity.len());
        writes.push(session::delete(&session));
        for record in std::iter::once(&activity).chain(&children.activity) {
            let id = activity_id(&record.job, &record.span_id);
            writes.push(Write { collection: ACTIVITY, id, op: WriteOp::Create(encode(record)?) });
        }
        store.commit(&seed.workspace, writes).await?;
        outcome?;
        Ok(Invocation { output: (), activity, steps, research: children.research })
    }

    /// The record of `operation` for the seed's role: begun at `began`, ending now, under `span`
    /// (a child of `parent`), with no tokens counted.
    fn activity(
        &self,
        seed: &Erased<'_>,
        operation: Operation,
        began: Began,
        span: &TraceParent,
        parent: &TraceParent,
        outcome: ActivityOutcome,
    ) -> ActivityRecord {
        ActivityRecord {
            tenant: seed.workspace.clone(),
            job: seed.job.clone(),
            operation,
            agent: seed.input.role(),
            stage: seed.stage,
            model: self.model.name().to_owned(),
            started_at: began.at,
            ended_at: Utc::now(),
            duration_us: u64::try_from(began.clock.elapsed().as_micros()).unwrap_or(u64::MAX),
            usage: TokenUsage::default(),
            model_calls: 0,
            repairs: 0,
            repaired: Vec::new(),
            outcome,
            trace_id: span.trace(),
            span_id: span.span(),
            parent_span_id: parent.span(),
        }
    }

    /// The tool declarations `spec`'s role is offered, made at its first invocation.
    fn declarations(&self, spec: &RoleSpec) -> Arc<[FunctionDeclaration]> {
        self.declared[spec.role as usize].get_or_init(|| self.declare(spec).into()).clone()
    }

    /// Make them: the skill loaders when the role loads skills, its allow-listed tools, and
    /// the grounded search when the role may search and the model can.
    fn declare(&self, spec: &RoleSpec) -> Vec<FunctionDeclaration> {
        let mut out = Vec::new();
        if spec.skills != SkillRule::None {
            out.push(FunctionDeclaration {
                name: "load_skill".into(),
                description: "Load one of your skills (method guidance, never evidence).".into(),
                parameters: json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}),
            });
            out.push(FunctionDeclaration {
                name: "load_reference".into(),
                description: "Load one reference file of a loaded skill.".into(),
                parameters: json!({"type":"object","properties":{"skill":{"type":"string"},"reference":{"type":"string"}},"required":["skill","reference"],"additionalProperties":false}),
            });
        }
        out.extend(spec.tools.iter().filter_map(|t| self.tools.get(*t)).map(|t| t.declaration()));
        if spec.tools.contains(&crate::research::GOOGLE_SEARCH) && self.model.grounded_search() {
            out.push(crate::research::declaration());
        }
        out
    }

    async fn run(
        &self,
        seed: &Erased<'_>,
        spec: &RoleSpec,
        span: &TraceParent,
        steps: &mut Vec<Step>,
        tally: &mut Tally,
        children: &mut Children,
    ) -> Result<Value, AgentContractError> {
        let role = spec.role;
        let mut request = ModelRequest {
            role,
            system_instruction: spec.instruction.to_owned(),
            turns: vec![Turn { speaker: Speaker::User, parts: vec![Part::Text(seed.input.message())] }],
            tools: self.declarations(spec),
            response_schema: output_schema(role).0.clone(),
            grounded_search: false,
        };
        let ctx = ToolContext { workspace: &seed.workspace, store: &*self.store, snapshot: seed.input.snapshot() };
        for _ in 0..MAX_TURNS {
            within_budget(seed, tally, children, &request)?;
            let response = generate(&*self.model, &request, Some(seed.stage)).await;
            // A call counts whether or not it was answered.
            tally.model_calls = tally.model_calls.saturating_add(1);
            let response = response.map_err(|e| contract(role, e.code()))?;
            tally.usage.input_tokens = tally.usage.input_tokens.saturating_add(response.usage.input_tokens);
            tally.last_input = response.usage.input_tokens;
            tally.usage.output_tokens = tally.usage.output_tokens.saturating_add(response.usage.output_tokens);
            let calls: Vec<(String, Value)> = response
                .parts
                .iter()
                .filter_map(|p| match p {
                    Part::FunctionCall { name, args } => Some((name.clone(), args.clone())),
                    _ => None,
                })
                .collect();
            if calls.is_empty() {
                let text: String = response
                    .parts
                    .iter()
                    .filter_map(|p| if let Part::Text(t) = p { Some(t.as_str()) } else { None })
                    .collect();
                match self.accept(seed, spec, &text, steps) {
                    Ok(value) => return Ok(value),
                    Err(refused) if self.may_repair(refused.error.code, tally) => {
                        self.repaired(seed, refused.error.code, tally);
                        request.turns.push(Turn { speaker: Speaker::Model, parts: response.parts });
                        request
                            .turns
                            .push(Turn { speaker: Speaker::User, parts: vec![Part::Text(refused.corrective())] });
                        continue;
                    }
                    Err(refused) => return Err(refused.error),
                }
            }
            let mut responses = Vec::with_capacity(calls.len());
            // The first call of this turn the runtime refused and answered with its correction:
            // the turn takes one repair, however many of its calls were refused.
            let mut corrected: Option<Code> = None;
            for (name, args) in calls {
                let began = Began::now();
                let before = steps.len();
                if name == crate::research::GOOGLE_SEARCH && spec.tools.contains(&crate::research::GOOGLE_SEARCH) {
                    // A search is a model call too, about the size of the conversation's.
                    within_budget(seed, tally, children, &request)?;
                    let response = self.research(seed, span, &args, steps, children).await;
                    responses.push(Part::FunctionResponse { name, response });
                    continue;
                }
                let response = match self.call(spec, &ctx, steps, &name, &args).await {
                    Ok(response) => response,
                    // Calls after the turn's first refused one ride on its repair.
                    Err(e) if repairable(e.code) && (corrected.is_some() || self.may_repair(e.code, tally)) => {
                        // The refused call leaves no step: the trace holds what was really loaded.
                        steps.truncate(before);
                        corrected.get_or_insert(e.code);
                        let refused = Refused { error: e, at: None, unreadable: false };
                        json!({"error": {"code": refused.error.code, "message": refused.corrective()}})
                    }
                    Err(e) => return Err(e),
                };
                // Nova's tool calls are projected too, under the invocation's real span: one
                // record per attempt, so the runtime's retry shows as what it was.
                if role == Role::Nova {
                    for attempt in steps[before..].iter().filter(|s| matches!(s.event, LoadEvent::DataTool(_))) {
                        let code = attempt
                            .result
                            .as_ref()
                            .and_then(|r| r.get("error"))
                            .and_then(|e| e.get("code"))
                            .and_then(|c| serde_json::from_value(c.clone()).ok());
                        let outcome = match code {
                            Some(code) => ActivityOutcome::Failure { code },
                            None => ActivityOutcome::Success,
                        };
                        // The record carries the exported `execute_tool` span's ids; without
                        // OpenTelemetry, new ones under the invocation's.
                        let own = attempt.span.clone().unwrap_or_else(|| span.child());
                        children.activity.push(self.activity(seed, Operation::ToolCall, began, &own, span, outcome));
                    }
                }
                responses.push(Part::FunctionResponse { name, response });
            }
            if let Some(code) = corrected {
                self.repaired(seed, code, tally);
            }
            request.turns.push(Turn { speaker: Speaker::Model, parts: response.parts });
            request.turns.push(Turn { speaker: Speaker::User, parts: responses });
        }
        Err(contract(role, Code::MissingOutputKey))
    }

    /// Whether a miss with `code` gets a corrective turn: one a model can mend, while the
    /// invocation has repairs left.
    fn may_repair(&self, code: Code, tally: &Tally) -> bool {
        repairable(code) && tally.repaired.len() < usize::from(self.repairs.get())
    }

    /// Count one corrective turn for a miss with `code`: in the tally, the log and the metric
    /// `harmonia.agent.repairs` (by agent, stage and code).
    fn repaired(&self, seed: &Erased<'_>, code: Code, tally: &mut Tally) {
        use opentelemetry::KeyValue;
        tally.repaired.push(code);
        let agent = seed.input.role();
        tracing::info!(
            job = %seed.job, agent = %agent, stage = %seed.stage, code = code.as_str(), repair = tally.repaired.len(),
            "an answer missed its contract; the model is asked to correct it"
        );
        opentelemetry::global::meter("harmonia")
            .u64_counter("harmonia.agent.repairs")
            .with_description("Corrective turns given to a specialist whose answer missed its contract")
            .build()
            .add(
                1,
                &[
                    KeyValue::new("agent", agent.as_str()),
                    KeyValue::new("stage", seed.stage.as_str()),
                    KeyValue::new("code", code.as_str()),
                ],
            );
    }

    /// A grounded web search for the seed's role, as its own child invocation: its own span
    /// (a child of the invocation's) and activity record (operation `research`, its own token
    /// counts), a query bound to the request ([`crate::research::Binding`]), and grounding
    /// metadata validated before anything is accepted. The step records the accepted
    /// results' evidence ids; a refusal is an error answer the model sees, and the invocation
    /// goes on.
    async fn research(
        &self,
        seed: &Erased<'_>,
        parent: &TraceParent,
        args: &Value,
        steps: &mut Vec<Step>,
        children: &mut Children,
    ) -> Value {
        use crate::research;
        let role = seed.input.role();
        let about = args.get("about").and_then(Value::as_str);
        let unknown_keys = args.as_object().is_some_and(|o| o.keys().any(|k| k != "about"));
        let binding = seed.input.binding();
        let query = binding.as_ref().and_then(|b| b.query(about)).filter(|_| !unknown_keys).map(str::to_owned);
        let mut step = Step::new(LoadEvent::DataTool(research::GOOGLE_SEARCH.to_owned()), false);
        step.args = Some(args.clone());
        let Some(query) = query else {
            steps.push(step);
            return json!({"error": {"code": "invalid_request", "message": "There is no such field of this request to search for."}});
        };
        let traced = tracing::info_span!(
            "invoke_agent",
            otel.name = "invoke_agent research",
            gen_ai.operation.name = harmonia_telemetry::genai::INVOKE_AGENT,
            gen_ai.agent.name = "research",
            gen_ai.provider.name = self.model.provider(),
            gen_ai.request.model = self.model.name(),
            harmonia.stage = %seed.stage,
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        // The record carries the exported search span's ids; without OpenTelemetry, new ones.
        let span = exported(&traced).unwrap_or_else(|| parent.child());
        let began = Began::now();
        let request = research::request(role, &query);
        let result = generate(&*self.model, &request, Some(seed.stage)).instrument(traced.clone()).await;
        let failure = |code: Code| {
            traced.record("error.type", code.as_str());
            traced.record("otel.status_code", "ERROR");
            let message = match code {
                Code::GroundingInvalid => "The search results could not be verified; nothing from them may be cited.",
                _ => "The search is unavailable.",
            };
            (ActivityOutcome::Failure { code }, json!({"error": {"code": code, "message": message}}))
        };
        let mut usage = TokenUsage::default();
        let (outcome, answer) = match result {
            Ok(response) => {
                usage = response.usage;
                match research::accept(&response) {
                    Ok(accepted) => {
                        let provenance = self.model.provenance();
                        let found = research::records(accepted, &seed.job, role, &query, provenance);
                        let answer = research::answer(&response, &found, provenance);
                        step.ok = true;
                        step.evidence = found.iter().map(|r| r.evidence_id.clone()).collect();
                        step.result = Some(answer.clone());
                        children.research.extend(found);
                        (ActivityOutcome::Success, answer)
                    }
                    Err(rejected) => {
                        tracing::warn!(job = %seed.job, agent = %role, reason = %rejected, "a grounded search was refused");
                        failure(Code::GroundingInvalid)
                    }
                }
            }
            Err(e) => failure(e.code()),
        };
        steps.push(step);
        let activity = ActivityRecord {
            usage,
            model_calls: 1,
            ..self.activity(seed, Operation::Research, began, &span, parent, outcome)
        };
        children.activity.push(activity);
        answer
    }

    /// Execute one function call, recording it. Contract violations end the invocation.
    async fn call(
        &self,
        spec: &RoleSpec,
        ctx: &ToolContext<'_>,
        steps: &mut Vec<Step>,
        name: &str,
        args: &Value,
    ) -> Result<Value, AgentContractError> {
        let role = spec.role;
        let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
        match name {
            "load_skill" if spec.skills != SkillRule::None => {
                let skill = arg("name");
                if !spec.skills.approves(&skill) {
                    return Err(contract(role, Code::SkillSequenceInvalid));
                }
                let found = self.skills.get(&skill);
                steps.push(Step::new(LoadEvent::Skill(skill), found.is_some()));
                let skill = found.ok_or_else(|| contract(role, Code::SkillSequenceInvalid))?;
                let references: Vec<&String> = skill.references.keys().collect();
                Ok(
                    json!({"name": skill.name, "version": skill.version, "instructions": skill.body, "references": references}),
                )
            }
            "load_reference" if spec.skills != SkillRule::None => {
                let (skill, reference) = (arg("skill"), arg("reference"));
                let text = self.skills.get(&skill).and_then(|s| s.references.get(&reference)).cloned();
                steps.push(Step::new(LoadEvent::Reference(skill, reference), text.is_some()));
                let text = text.ok_or_else(|| contract(role, Code::SkillSequenceInvalid))?;
                Ok(json!({"text": text}))
            }
            tool if spec.tools.contains(&tool) => {
                // With a skill family of alternatives (Nova), only the loaded skill's tools.
                if let SkillRule::OneOf(_) = spec.skills {
                    let loaded = steps.iter().find_map(|s| match &s.event {
                        LoadEvent::Skill(name) => self.skills.get(name),
                        _ => None,
                    });
                    // The skill comes before any data tool, and then only its tools.
                    let Some(loaded) = loaded else { return Err(contract(role, Code::SkillSequenceInvalid)) };
                    if !loaded.allowed_tools.iter().any(|t| t == tool) {
                        return Err(contract(role, Code::ToolNotAllowed));
                    }
                }
                let Some(implementation) = self.tools.get(tool) else {
                    steps.push(Step::new(LoadEvent::DataTool(tool.to_owned()), false));
                    return Ok(
                        json!({"error": {"code": "dependency_unavailable", "message": "This tool is not available."}}),
                    );
                };
                // The tool contract's one retry of a transient failure is the runtime's, not the
                // tool's or the model's: a first call of these arguments that fails transiently
                // is made once more at once, and both attempts are in the trace. A later call
                // of the same arguments is the model's own retry, which the validator refuses.
                let first = !steps
                    .iter()
                    .any(|s| matches!(&s.event, LoadEvent::DataTool(t) if t == tool) && s.args.as_ref() == Some(args));
                let response = self.execute(implementation.as_ref(), ctx, steps, tool, args).await;
                match response {
                    Ok(value) if first && retryable_error(&value) && matches!(spec.skills, SkillRule::OneOf(_)) => {
                        self.execute(implementation.as_ref(), ctx, steps, tool, args).await
                    }
                    other => other,
                }
                .map_err(|code| contract(role, code))
            }
            _ => Err(contract(role, Code::ToolNotAllowed)),
        }
    }

    /// One attempt of a registered tool, in its own `execute_tool` span, recorded as a step;
    /// a failure the model may see becomes an error answer, a contract failure a code.
    async fn execute(
        &self,
        implementation: &dyn crate::tools::Tool,
        ctx: &ToolContext<'_>,
        steps: &mut Vec<Step>,
        tool: &str,
        args: &Value,
    ) -> Result<Value, Code> {
        // `tool` is a registered name here, never free model text.
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = %format_args!("execute_tool {tool}"),
            gen_ai.operation.name = harmonia_telemetry::genai::EXECUTE_TOOL,
            gen_ai.tool.name = tool,
            "gen_ai.tool.type" = "function",
            "error.type" = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let result = implementation.call(ctx, args).instrument(span.clone()).await;
        if let Err(e) = &result {
            span.record("error.type", tool_error_type(e));
            span.record("otel.status_code", "ERROR");
        }
        let mut step = Step::new(LoadEvent::DataTool(tool.to_owned()), result.is_ok());
        step.args = Some(args.clone());
        step.span = exported(&span);
        if let Ok(value) = &result {
            step.evidence = evidence_of(value);
            step.result = Some(value.clone());
        }
        steps.push(step);
        match result {
            Ok(value) => Ok(value),
            Err(ToolFailure::SnapshotMismatch) => Err(Code::SnapshotMismatch),
            Err(ToolFailure::InvalidArguments) => {
                Ok(json!({"error": {"code": "invalid_request", "message": "The arguments do not match the tool."}}))
            }
            Err(ToolFailure::Unavailable) => {
                Ok(json!({"error": {"code": "dependency_unavailable", "message": "The data could not be read."}}))
            }
        }
    }

    /// Parse, stamp provenance, validate schema, skills, authority and evidence.
    fn accept(&self, seed: &Erased<'_>, spec: &RoleSpec, text: &str, steps: &[Step]) -> Result<Value, Refused> {
        let trace: Vec<LoadEvent> = steps.iter().map(|s| s.event.clone()).collect();
        let researched: std::collections::HashSet<&harmonia_contracts::ids::EvidenceId> =
            steps.iter().flat_map(|s| &s.evidence).collect();
        let role = spec.role;
        let refused = |code: Code| Refused { error: contract(role, code), at: None, unreadable: false };
        if text.trim().is_empty() {
            return Err(refused(Code::MissingOutputKey));
        }
        let unreadable = Refused { unreadable: true, ..refused(Code::SchemaViolation) };
        let mut value = answer_object(text).ok_or(unreadable)?;
        let Some(object) = value.as_object_mut() else { unreachable!("answer_object reads only objects") };
        // Provenance is the backend's, never the model's word.
        object.insert("provenance".into(), serde_json::to_value(self.model.provenance()).unwrap_or(Value::Null));
        let validator = output_schema(role).1.as_ref().ok_or_else(|| refused(Code::SchemaViolation))?;
        if let Some(err) = validator.iter_errors(&value).next() {
            return Err(Refused {
                error: contract(role, Code::SchemaViolation).at_schema_path(err.schema_path().to_string()),
                at: Some(pointer(&err.instance_path().to_string())),
                unreadable: false,
            });
        }
        spec.skills.check(&trace, &self.skills).map_err(|_| refused(Code::SkillSequenceInvalid))?;
        let read = validate::Readings::of(&value, role == Role::Nimi);
        read.no_authority_claims().map_err(refused)?;
        let seen = Seen { researched: &researched, steps, read: &read };
        seed.input.accept(&value, seen).map_err(|miss| Refused {
            error: contract(role, miss.code),
            at: miss.at,
            unreadable: false,
        })?;
        Ok(value)
    }
}

#[cfg(test)]
mod activity_id_tests {
    use super::*;

    #[test]
    fn an_activity_id_is_job_and_span_and_stays_stable_for_a_long_job_id() {
        let span = TraceParent::new_root().span();
        let job: JobId = "job-1".parse().expect("job");
        assert_eq!(activity_id(&job, &span).as_str(), format!("job-1.{span}"));
        let long: JobId = "j".repeat(128).parse().expect("job");
        assert_eq!(activity_id(&long, &span), activity_id(&long, &span));
        assert!(activity_id(&long, &span).as_str().len() <= harmonia_contracts::ids::MAX_ID_LEN);
    }
}
