// The workspace's activity: every invocation and tool call of every job, Nova's answers
// included, newest first; filtered by agent, stage and outcome; each day's count, failures,
// p50 and p95 durations and tokens. From `GET /v1/workspace/activity`.
import { api, el, errorText, number, say, show } from '/assets/common.js';

const OPERATIONS = { invoke: 'answered', tool_call: 'called a tool', research: 'searched the web', route: 'routed a task' };
const PAGE = 50;

const capital = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const ms = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${n.toFixed(n < 10 ? 2 : 0)} ms`);

function choose(id, label, values, current, words = (v) => capital(v.replaceAll('_', ' '))) {
  return el('div', { class: 'field' }, el('label', { for: id, text: label }),
    el('select', { id, name: id.replace('activity-', '') },
      el('option', { value: '', text: 'all', selected: !current }),
      ...values.map((v) => el('option', { value: v, text: words(v), selected: v === current }))));
}

function daysTable(days, zone) {
  if (!days.length) return el('p', { class: 'muted', text: 'No activity matches.' });
  return el('table', { class: 'days' },
    el('caption', { class: 'muted', text: `Each day in ${zone}: durations are of the answers (invocations); tokens of every record.` }),
    el('thead', {}, el('tr', {}, ...['Day', 'Records', 'Answer time p50 / p95', 'Tokens in / out'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...days.map((d) => el('tr', {},
      el('th', { scope: 'row', text: new Date(`${d.day}T12:00:00Z`).toLocaleDateString([], { weekday: 'short', day: 'numeric', month: 'short', timeZone: 'UTC' }) }),
      el('td', { text: `${number(d.records)}${d.failed ? `, ${number(d.failed)} failed` : ''}` }),
      el('td', { text: d.invocations ? `${ms(d.p50_ms)} / ${ms(d.p95_ms)}` : '—' }),
      el('td', { text: `${number(d.input_tokens)} / ${number(d.output_tokens)}` })))));
}

function recordItem(r, zone) {
  const failed = r.outcome.status !== 'success';
  const when = new Date(r.started_at);
  const about = r.agent === 'nova'
    ? el('span', { text: 'an operator\'s question' })
    : el('a', { href: `#/jobs/${encodeURIComponent(r.job)}/activity`, text: 'the job\'s timeline' });
  return el('li', { class: failed ? 'record failed' : 'record' },
    el('p', {}, el('time', { datetime: r.started_at, title: r.started_at, text: when.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short', timeZone: zone }) }),
      ` · ${capital(r.agent)} ${OPERATIONS[r.operation] ?? r.operation} at ${r.stage}`),
    el('p', { class: 'muted' }, `${ms(r.duration_us / 1000)} · ${number(r.usage.input_tokens)} input and ${number(r.usage.output_tokens)} output tokens · `,
      el('span', { class: failed ? 'error' : '', text: failed ? `failed (${r.outcome.code})` : 'succeeded' }), ' · ', about));
}

export async function activityPage(here, query) {
  const params = new URLSearchParams(query ?? '');
  const wanted = new URLSearchParams();
  for (const key of ['agent', 'stage', 'outcome']) if (params.get(key)) wanted.set(key, params.get(key));
  const page = Math.max(0, Number.parseInt(params.get('page') ?? '0', 10) || 0);
  say('Reading the activity…');
  const reply = await api('GET', `/v1/workspace/activity?${wanted}${wanted.size ? '&' : ''}limit=${PAGE}&page=${page}`);
  if (!here()) return;
  if (reply.status !== 200) { say(errorText(reply), true); return; }
  const data = reply.body;
  const form = el('form', { class: 'filters activity-filters', 'aria-label': 'Filter the activity' },
    choose('activity-agent', 'Agent', data.agents, params.get('agent')),
    choose('activity-stage', 'Stage', data.stages, params.get('stage')),
    choose('activity-outcome', 'Outcome', ['success', 'failure'], params.get('outcome'), (v) => (v === 'success' ? 'Succeeded' : 'Failed')));
  form.addEventListener('change', () => {
    const next = new URLSearchParams();
    for (const select of form.querySelectorAll('select')) if (select.value) next.set(select.name, select.value);
    location.hash = `#/activity${next.size ? `?${next}` : ''}`;
  });
  const link = (n, text) => {
    const p = new URLSearchParams(wanted);
    if (n) p.set('page', n);
    return el('a', { href: `#/activity${p.size ? `?${p}` : ''}`, text });
  };
  const shownFrom = page * PAGE + 1;
  show(el('h1', { text: 'Activity' }),
    el('p', { class: 'muted', text: `Every agent's work in this workspace, Nova's answers included, newest first; times in ${data.time_zone}.${data.capped ? ' Only the latest 1,000 records are read.' : ''}` }),
    form,
    el('h2', { text: 'By day' }), daysTable(data.days, data.time_zone),
    el('h2', { text: 'Records' }),
    data.activity.length
      ? el('p', { class: 'muted', id: 'activity-count', text: `${number(shownFrom)}–${number(shownFrom + data.activity.length - 1)} of ${number(data.total)}.` })
      : el('p', { class: 'muted', id: 'activity-count', text: 'No record matches.' }),
    el('ol', { class: 'records', id: 'activity-records' }, ...data.activity.map((r) => recordItem(r, data.time_zone))),
    el('p', { class: 'pages' }, page > 0 ? link(page - 1, '← Newer') : null, ' ', data.next_page ? link(data.next_page, 'Older →') : null));
  say('');
}
