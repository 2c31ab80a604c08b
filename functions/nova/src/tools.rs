//! Nova's six read-only tools, one type each. Every call returns exactly the tool envelope
//! (`{"status","data","error","evidence"}`), built through [`ToolEnvelope`] so that an
//! impossible state cannot be produced, with the stable errors of the tool contract:
//! `invalid_request` (arguments that do not match the declaration), `out_of_range` (a limit
//! outside 1-10), `invalid_query`, `invalid_id`, `not_found`, `authorization`,
//! `insufficient_history` and `dependency_unavailable` (the only retryable one, and only when
//! the failure is transient). Each call has the contract's deadline (20 s for the public trend
//! tools, 30 s for the workspace tools); the contract's one retry of a transient failure is
//! made by the agent runtime, as a second attempt in the trace, never inside a tool. Every
//! workspace read is scoped to the caller's workspace.
//!
//! A tool is a [`NovaTool`]: a name, a description and a schemars-derived argument type with
//! `deny_unknown_fields`; it reads through `read::Reads`, scoped to the caller's workspace. The declaration the model sees is generated from the argument type, so it
//! cannot drift from what the tool accepts.
//!
//! Layout: [`limit`] (the `Limit` newtype), `outcome` (failures, evidence and the envelope),
//! `read` (the scoped reads), then one module per tool
//! family: `trends` (`fetch_trend_signals`, `search_trend_signals`), `engagement`, `feed`,
//! `job_status`, `windows`.

mod engagement;
mod feed;
mod job_status;
pub mod limit;
mod outcome;
mod read;
mod trends;
mod windows;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use harmonia_agents::model::FunctionDeclaration;
use harmonia_agents::tools::{Tool, ToolContext, ToolFailure, names};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use engagement::GetEngagementInsights;
pub use feed::GetOperatorFeed;
pub use job_status::{GetJobStatus, JobStatusArgs};
pub use limit::Limit;
pub use trends::MAX_QUERY_CHARS;
pub use trends::{FetchArgs, FetchTrendSignals, SearchArgs, SearchTrendSignals};
pub use windows::SuggestPostingWindows;

use outcome::{Fail, Found};
use read::Reads;

/// Deadline of the public trend tools.
pub const TREND_TIMEOUT: Duration = Duration::from_secs(20);
/// Deadline of the workspace tools.
pub const WORKSPACE_TIMEOUT: Duration = Duration::from_secs(30);
/// Measured posts `suggest_posting_windows` needs.
pub const MIN_HISTORY: usize = 5;

/// What the model and the contract know of a tool: its name, its deadline and what it does,
/// declared for all six in one table ([`tools!`]).
pub(crate) trait About {
    /// The name the model calls.
    const NAME: &'static str;
    /// The contract's deadline for one call.
    const DEADLINE: Duration;
    /// What the model is told the tool does.
    const DESCRIPTION: &'static str;
}

/// One of Nova's tools, typed: the runtime's [`Tool`] is implemented for each from this.
pub(crate) trait NovaTool: About + Send + Sync {
    /// The arguments; their JSON Schema is the declaration's `parameters`.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// Answer a call whose arguments already parsed.
    fn run(&self, reads: Reads<'_>, args: Self::Args) -> impl Future<Output = Result<Found, Fail>> + Send;
}

/// The arguments of a tool that takes none (`get_engagement_insights`, `get_operator_feed`,
/// `suggest_posting_windows`): an empty object, and nothing else.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The declaration of `T`, generated from its argument type. Subschemas are inlined and the
/// root's `$schema`, `title` and `description` dropped: function-calling APIs take a plain
/// object schema without references, and the tool's own description says what it does.
pub(crate) fn declaration<T: NovaTool>() -> FunctionDeclaration {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let mut parameters = settings.into_generator().into_root_schema_for::<T::Args>().to_value();
    if let Some(root) = parameters.as_object_mut() {
        root.remove("$schema");
        root.remove("title");
        root.remove("description");
    }
    FunctionDeclaration { name: T::NAME.to_owned(), description: T::DESCRIPTION.to_owned(), parameters }
}

/// Parse the arguments, run the tool and wrap the result in its envelope.
async fn answer<T: NovaTool>(tool: &T, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure> {
    let result = match parse::<T>(args) {
        // A call that outlives its deadline is a transient failure, retryable once.
        Ok(args) => tokio::time::timeout(T::DEADLINE, tool.run(Reads::new(ctx.store, ctx.workspace), args))
            .await
            .unwrap_or_else(|_elapsed| Err(Fail::unavailable(true))),
        Err(refused) => Err(refused),
    };
    outcome::envelope(T::NAME, result)
}

/// Arguments as the declaration describes them. serde reports why a value was refused only
/// as text, so the one refusal the contract types (a declared `limit` outside 1-10) is
/// recognised from the value itself with the same [`Limit`] parser; any other mismatch,
/// including a `limit` the tool does not declare, is `invalid_request`.
fn parse<T: NovaTool>(args: &Value) -> Result<T::Args, Fail> {
    T::Args::deserialize(args).map_err(|_| {
        let limit = args.get("limit").filter(|n| n.is_i64() || n.is_u64());
        let declared = || declaration::<T>().parameters["properties"].get("limit").is_some();
        match limit {
            Some(n) if Limit::deserialize(n).is_err() && declared() => Fail::out_of_range(),
            _ => Fail::invalid_arguments(),
        }
    })
}

/// The six tools: each one's name, deadline and description ([`About`]), the runtime's
/// [`Tool`] for it (the trait is foreign, so a blanket implementation is not allowed; each type
/// gets its own), and [`all`].
macro_rules! tools {
    ($( $tool:ident => $name:expr, $deadline:expr, $description:literal; )*) => {
        $(
            impl About for $tool {
                const NAME: &'static str = $name;
                const DEADLINE: Duration = $deadline;
                const DESCRIPTION: &'static str = $description;
            }

            #[async_trait]
            impl Tool for $tool {
                fn declaration(&self) -> FunctionDeclaration {
                    declaration::<$tool>()
                }

                async fn call(&self, ctx: &ToolContext<'_>, args: &Value) -> Result<Value, ToolFailure> {
                    answer(self, ctx, args).await
                }
            }
        )*

        /// All six.
        pub fn all() -> Vec<Arc<dyn Tool>> {
            vec![$(Arc::new($tool)),*]
        }
    };
}

tools! {
    FetchTrendSignals => names::FETCH_TREND_SIGNALS, TREND_TIMEOUT, "Public trend signals, strongest first.";
    SearchTrendSignals => names::SEARCH_TREND_SIGNALS, TREND_TIMEOUT, "Public trend signals matching a query.";
    GetEngagementInsights => names::GET_ENGAGEMENT_INSIGHTS, WORKSPACE_TIMEOUT, "Measured posts of this workspace and takeaways.";
    GetOperatorFeed => names::GET_OPERATOR_FEED, WORKSPACE_TIMEOUT, "What waits for a person (each job by title, what it waits for and since when, longest waiting first), job health, goals and the latest verified posts (newest first) of this workspace.";
    GetJobStatus => names::GET_JOB_STATUS, WORKSPACE_TIMEOUT, "A redacted status summary of one job of this workspace.";
    SuggestPostingWindows => names::SUGGEST_POSTING_WINDOWS, WORKSPACE_TIMEOUT, "UTC posting windows computed from measured history, with the basis.";
}
