// The operator console's page: sign-in, the jobs list and the job page (Maya's A2UI layout,
// rendered by the official renderer and hydrated from the job view's entities). It talks only
// to its own origin; the session's CSRF token lives in this module's memory, never in storage.
import { render as renderLayout } from '/assets/a2ui.js';
import { entityView } from '/assets/entities.js';

const main = document.getElementById('main');
const statusLine = document.getElementById('status');
let session = null;

const STATUSES = [
  'ingested', 'analyzed', 'awaiting_strategy_approval', 'strategy_changes_requested', 'strategy_approved', 'planned',
  'drafted', 'revision_requested', 'reviewed', 'awaiting_draft_approval', 'draft_changes_requested', 'scheduled',
  'draft_approved', 'publishing', 'publish_unknown', 'published', 'verified', 'strategy_rejected', 'draft_rejected',
  'cancelled', 'failed', 'needs_human',
];
const AWAITING = { awaiting_strategy_approval: 'the strategy', awaiting_draft_approval: 'the draft', needs_human: 'a person' };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== false && v !== undefined && v !== null) node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

function say(text, error = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle('error', error);
}

/** A call to the operator API as the signed-in session: JSON in and out, the CSRF token on
 * every request that can change something. Resolves to {status, body}. */
async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (session && !['GET', 'HEAD'].includes(method)) headers['x-csrf-token'] = session.csrf;
  const response = await fetch(path, {
    method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (response.status === 401 && path !== '/v1/console/session') signedOut('Your session has ended: sign in again.');
  return { status: response.status, body: parsed };
}

function errorText(reply) {
  return reply.body?.error?.message ?? `The request failed (HTTP ${reply.status}).`;
}

function show(...nodes) {
  main.replaceChildren(...nodes);
  main.focus();
}

function signedOut(message) {
  session = null;
  document.getElementById('nav').hidden = true;
  document.getElementById('sign-out').hidden = true;
  document.getElementById('who').textContent = '';
  const input = el('input', { id: 'credential', name: 'credential', type: 'password', autocomplete: 'off', required: true });
  const form = el('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    el('h1', { id: 'sign-in-title', text: 'Sign in' }),
    el('label', { for: 'credential', text: 'Operator credential' }), input,
    el('button', { class: 'primary', type: 'submit', text: 'Sign in' }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const reply = await api('POST', '/v1/console/session', { credential: input.value });
    if (reply.status !== 201) { say(errorText(reply), true); input.select(); return; }
    input.value = '';
    signedIn(reply.body);
  });
  show(form);
  if (message) say(message, true);
  input.focus();
}

function signedIn(who) {
  session = who;
  document.getElementById('nav').hidden = false;
  document.getElementById('sign-out').hidden = false;
  document.getElementById('who').textContent = `${who.operator} (${who.role}) · ${who.workspace}`;
  say('');
  route();
}

function age(iso) {
  const minutes = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 60000));
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 48 * 60) return `${Math.round(minutes / 60)} h`;
  return `${Math.round(minutes / 1440)} d`;
}

async function jobsPage(filter) {
  const reply = await api('GET', '/v1/jobs');
  if (reply.status !== 200) { say(errorText(reply), true); return; }
  const jobs = reply.body.jobs.filter((j) => !filter || j.status === filter);
  const select = el('select', { id: 'status-filter', name: 'status' },
    el('option', { value: '', text: 'every status' }),
    ...STATUSES.map((s) => el('option', { value: s, text: s.replaceAll('_', ' '), selected: s === filter })));
  select.addEventListener('change', () => { location.hash = select.value ? `#/jobs?status=${select.value}` : '#/jobs'; });
  const rows = jobs.map((j) => el('tr', {},
    el('td', {}, el('a', { href: `#/jobs/${encodeURIComponent(j.id)}`, text: j.title || j.id })),
    el('td', { text: j.status.replaceAll('_', ' ') }),
    el('td', { text: AWAITING[j.status] ? `awaits ${AWAITING[j.status]}` : '' }),
    el('td', { text: age(j.created_at), title: j.created_at })));
  const table = jobs.length
    ? el('table', {}, el('caption', { class: 'muted', text: `${jobs.length} job(s)` }),
      el('thead', {}, el('tr', {}, ...['Job', 'Status', 'Decision', 'Age'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...rows))
    : el('p', { class: 'muted', text: filter ? 'No job has this status.' : 'No jobs yet.' });
  show(el('h1', { text: 'Jobs' }),
    el('div', { class: 'filters' }, el('label', { for: 'status-filter', text: 'Status' }), select), table);
}

async function jobPage(id) {
  say('Composing the job view…');
  const reply = await api('GET', `/v1/jobs/${encodeURIComponent(id)}/view`);
  if (reply.status !== 200) { say(errorText(reply), true); return; }
  const view = el('section', { id: 'job-view', 'aria-label': 'Job view' });
  show(el('p', {}, el('a', { href: '#/jobs', text: '← Jobs' })), el('h1', { text: `Job ${id}` }), view);
  try {
    const hydrate = (ref) => entityView(ref, reply.body.entities[`${ref.kind}:${ref.id}`]);
    await renderLayout(view, reply.body.layout, hydrate, undefined, [await entitySheet()]);
    say('');
  } catch (e) {
    say(`The job view could not be rendered: ${e.message}`, true);
  }
}

let sheet = null;
/** The entity styles, as a stylesheet the surface's shadow root can adopt. */
async function entitySheet() {
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(await (await fetch('/assets/entities.css', { credentials: 'same-origin' })).text());
  }
  return sheet;
}

function route() {
  if (!session) return;
  const hash = location.hash || '#/jobs';
  const job = hash.match(/^#\/jobs\/([^?]+)$/);
  if (job) return jobPage(decodeURIComponent(job[1]));
  const filter = new URLSearchParams(hash.split('?')[1] ?? '').get('status');
  return jobsPage(STATUSES.includes(filter) ? filter : null);
}

document.getElementById('sign-out').addEventListener('click', async () => {
  const reply = await api('DELETE', '/v1/console/session');
  // The next person to sign in starts at the jobs list, not on this one's last page.
  history.replaceState(null, '', '/');
  signedOut(reply.status === 200 ? 'Signed out.' : errorText(reply));
});
window.addEventListener('hashchange', route);

const current = await api('GET', '/v1/console/session');
if (current.status === 200) signedIn(current.body);
else signedOut();
