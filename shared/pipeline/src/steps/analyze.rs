use harmonia_agents::io::NimiInput;
use harmonia_agents::role;
use harmonia_contracts::Code;
use harmonia_contracts::domain::{Analysis, JobStatus, Moment, Source, quoted_span};
use harmonia_contracts::event::{AnalysisCompleted, SourceIngested, StageEvent};

use super::read::{context, job_config};
use super::seed::seed;
use crate::Env;
use crate::records::{ANALYSES, AnalysisRecord, doc_id};
use crate::step::{self, Completion, Step, complete, next_event};

/// `analyze`: Harmonia routes to Nimi over the source, verified performance and eligible memory.
impl Step for SourceIngested {
    async fn run(env: &Env, event: &StageEvent<SourceIngested>) -> Result<(), step::Error> {
        let ws = &event.workspace;
        let source = crate::records::source(&*env.store, &*env.blobs, ws, &event.payload.source)
            .await?
            .ok_or_else(|| step::Error::fail(Code::NotFound))?;
        let config = job_config(env, ws, &event.job).await?;
        let (performance, memory) = context(env, ws, config.mode).await?;
        let input = NimiInput::new(&source, performance, memory);
        let invocation = env.runtime.run_task::<role::Nimi>(&seed(env, event, input, &config).await?).await?;
        let mut analysis: Analysis = invocation.output;
        anchor(&source, &mut analysis);
        let moments = u32::try_from(analysis.moments.len()).unwrap_or(u32::MAX);
        let record = AnalysisRecord::new(event.job.clone(), analysis, &source);
        let completion = Completion::new(JobStatus::Analyzed, event.pass)
            .write(ANALYSES, doc_id(&event.job), &record)?
            .research(&invocation.research)?
            .publish(env, &next_event(event, AnalysisCompleted { moments }))?;
        complete(env, event, completion).await
    }
}

/// Each moment as the source says it: its quote in the source's own characters (a model may
/// write a curly quote for a straight one, or one space for two) and its range the cues it
/// touches. The runtime accepted only moments that name such a span; one whose span would not
/// fit a moment's quote is kept as the model wrote it.
fn anchor(source: &Source, analysis: &mut Analysis) {
    let speech = source.speech();
    for m in &mut analysis.moments {
        if let Ok(span) = quoted_span(&speech, &source.untrusted, &m.quote, m.start_ms, m.end_ms) {
            let said = speech.text(&span);
            if said.chars().count() <= Moment::MAX_QUOTE_CHARS {
                m.quote = said.to_owned();
                (m.start_ms, m.end_ms) = (span.start_ms, span.end_ms);
            }
        }
    }
}
