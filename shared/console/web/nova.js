// Nova's page: one question to the read-only liaison, and everything its answer rests on —
// the answer, each claim with links to the jobs and posts it cites, the tool errors as they
// came, and, behind "Details", the skill Nova loaded, the evidence ids and every tool call with
// the exact envelope it returned.
import { api, el, errorText, field, say, show } from '/assets/common.js';

let asked = null;

/** The evidence items the tool calls returned, by id, each with the record of the tool's data
 * that carries its id (a job or a post, when it is one). */
function evidenceById(calls) {
  const found = new Map();
  const records = new Map();
  const walk = (v) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') { if (typeof v.evidence_id === 'string') records.set(v.evidence_id, v); Object.values(v).forEach(walk); }
  };
  for (const call of calls) {
    walk(call.envelope?.data);
    for (const item of call.envelope?.evidence ?? []) found.set(item.evidenceId, { ...item, tool: call.name });
  }
  for (const [id, item] of found) item.record = records.get(id);
  return found;
}

/** What a piece of evidence is, in words, linked to the job (and the post) it is about. */
function evidenceLink(id, item) {
  const record = item?.record;
  if (record?.job) {
    const link = el('a', { href: `#/jobs/${encodeURIComponent(record.job)}`, text: record.title ? `“${record.title}”` : 'the job' });
    const post = record.url && /^https?:\/\//.test(record.url)
      ? el('a', { href: record.url, rel: 'noopener noreferrer', target: '_blank', text: 'the post' }) : null;
    return el('span', {}, link, post ? ' · ' : null, post);
  }
  if (item?.level === 'dataset') return el('span', { text: 'the whole workspace' });
  return el('span', { text: record?.title ?? record?.summary ?? (item ? 'a record' : 'a record no tool returned') });
}

function answerView(reply) {
  const { answer, skill, tool_calls: calls, evidence_ids: cited } = reply;
  const evidence = evidenceById(calls);
  const evidenceItem = (id) => {
    const item = evidence.get(id);
    return el('li', {}, el('code', { text: id }),
      item ? ` · ${item.level} level · ${item.provenance} · from ${item.tool}` : ' · not returned by any tool');
  };
  return el('section', { id: 'nova-answer', 'aria-labelledby': 'answer-title' },
    el('h2', { id: 'answer-title', text: 'Answer' }),
    el('p', { class: 'post', text: answer.answer }),
    el('p', { class: 'muted', text: `${answer.provenance === 'mock' ? 'Offline model (mock data)' : 'Live model'}${answer.no_data ? ' · no data' : ''}` }),
    answer.claims.length ? el('h3', { text: 'What it rests on' }) : null,
    answer.claims.length ? el('ol', { id: 'nova-claims' }, ...answer.claims.map((c) => el('li', {},
      el('p', { text: c.text }),
      el('p', { class: 'muted' }, 'From ', ...c.evidence.flatMap((id, i) => [i ? ', ' : null, evidenceLink(id, evidence.get(id))]).filter(Boolean), '.')))) : null,
    answer.errors.length ? el('h3', { text: 'Tool errors' }) : null,
    answer.errors.length ? el('ul', { class: 'rules' }, ...answer.errors.map((e) => el('li', { class: 'fail', text: `${e.message}${e.retryable ? ' It may work if asked again.' : ''} (${e.code})` }))) : null,
    el('details', { class: 'tool-call', id: 'nova-details' }, el('summary', { text: 'Details: skill, evidence ids and tool calls' }),
      el('p', { class: 'muted', text: `Skill: ${skill ?? 'none'}.` }),
      el('h3', { text: 'Evidence' }),
      cited.length ? el('ul', { id: 'nova-evidence' }, ...cited.map(evidenceItem)) : el('p', { class: 'muted', id: 'nova-evidence', text: 'The answer cites no evidence.' }),
      el('h3', { text: `Tool calls (${calls.length})` }),
      ...calls.map((call) => el('details', { class: 'tool-call' },
        el('summary', { text: `${call.name}: ${call.envelope.status}${call.envelope.error ? ` (${call.envelope.error.code})` : ''}, ${call.envelope.evidence.length} evidence item(s)` }),
        el('pre', { tabindex: 0, 'aria-label': `The envelope ${call.name} returned`, text: JSON.stringify(call.envelope, null, 2) })))));
}

export function novaPage(here) {
  const question = el('textarea', { id: 'question', name: 'question', rows: 3, maxlength: 2000, required: true });
  const form = el('form', { class: 'ask', 'aria-labelledby': 'nova-title' },
    field('Your question', question, 'Nova reads this workspace only and changes nothing.'),
    el('button', { class: 'primary', type: 'submit', text: 'Ask Nova' }));
  const result = el('div', { 'aria-live': 'polite' }, asked ? answerView(asked) : null);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    say('Nova is answering…');
    const reply = await api('POST', '/v1/ask', { question: question.value });
    if (reply.status === 404) { say('Nova is not available on this server.', true); return; }
    if (reply.status !== 200) { say(errorText(reply), true); return; }
    asked = reply.body;
    // An operator who has moved on finds the answer here when they come back.
    if (!here()) { say('Nova has answered: the answer is on the Ask Nova page.'); return; }
    result.replaceChildren(answerView(asked));
    say('');
  });
  show(el('h1', { id: 'nova-title', text: 'Ask Nova' }), form, result);
  question.focus();
}
