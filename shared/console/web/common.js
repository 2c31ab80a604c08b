// What every page of the console shares: building elements, the status line, the main area,
// and calls to the operator API as the signed-in session. The session (with its CSRF token)
// lives in this module's memory only, never in the browser's storage.

const main = document.getElementById('main');
const statusLine = document.getElementById('status');

/** Who is signed in (`{operator, workspace, role, csrf}`), or null. */
export const session = { current: null, ended: () => {} };

const PLATFORMS = {
  bluesky: 'Bluesky', mastodon: 'Mastodon', linkedin: 'LinkedIn', x: 'X', threads: 'Threads', instagram: 'Instagram',
  youtube: 'YouTube', tiktok: 'TikTok',
};

/** A count as the reader's locale writes it (12,400). */
export const number = (n) => n.toLocaleString();

/** A platform as its users write it (`LinkedIn`, `X`), from its name on the wire. */
export function platformName(platform) {
  return PLATFORMS[platform] ?? String(platform ?? '').replaceAll('_', ' ');
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (v !== false && v !== undefined && v !== null) node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

export function say(text, error = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle('error', error);
  // A page that has failed to load shows what it had; it is no longer on its way.
  if (error) main.removeAttribute('aria-busy');
}

/** What an action did, shown until the next action or until dismissed, whatever pages load
 * meanwhile, and announced (the outcome line is a live region). */
export function outcome(text, error = false) {
  const line = document.getElementById('outcome');
  const words = line.querySelector('span');
  words.textContent = text;
  line.classList.toggle('error', error);
  line.hidden = !text;
}

/** Run `request` (an action's call to the server) with every button of `scope` disabled until
 * it is answered, so a second click sends nothing; the last outcome goes as the action starts.
 * A click while one is in flight is ignored. */
export async function inFlight(scope, request) {
  if (scope.dataset.busy) return;
  scope.dataset.busy = 'true';
  const buttons = [...scope.querySelectorAll('button')].filter((b) => !b.disabled);
  buttons.forEach((b) => { b.disabled = true; });
  outcome('');
  try {
    await request();
  } finally {
    delete scope.dataset.busy;
    buttons.forEach((b) => { b.disabled = false; });
  }
}

export function saidError() {
  return statusLine.classList.contains('error');
}

/** A call to the operator API as the signed-in session, the CSRF token on every request that
 * can change something. `body` is sent as JSON, or as it is with `{type}` (e.g. a TOML file);
 * `headers` are added. Resolves to {status, body} with the body parsed from JSON. */
export async function api(method, path, body, { type, headers: extra = {} } = {}) {
  const headers = { accept: 'application/json', ...extra };
  if (body !== undefined) headers['content-type'] = type ?? 'application/json';
  if (session.current && !['GET', 'HEAD'].includes(method)) headers['x-csrf-token'] = session.current.csrf;
  const sent = body === undefined || type ? body : JSON.stringify(body);
  const response = await fetch(path, { method, headers, credentials: 'same-origin', body: sent });
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (response.status === 401 && path !== '/v1/console/session') session.ended('Your session has ended: sign in again.');
  return { status: response.status, body: parsed };
}

export function errorText(reply) {
  return reply.body?.error?.message ?? `The request failed (HTTP ${reply.status}).`;
}

let visits = 0;

/** Begins a visit to a page; the check it returns says whether the operator is still on it. A
 * page checks it after every wait on the server, so a late answer never replaces the page the
 * operator has gone to since, nor speaks over it. */
export function visit() {
  const mine = ++visits;
  // Until the page is shown, what is on screen belongs to the last one: it is marked busy (and
  // dimmed), so neither the operator nor a screen reader takes it for the answer.
  main.setAttribute('aria-busy', 'true');
  return () => mine === visits;
}

export function show(...nodes) {
  main.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined));
  main.removeAttribute('aria-busy');
  main.focus();
}

/** A labelled form field: the label, then the control. */
export function field(label, control, hint) {
  return el('div', { class: 'field' }, el('label', { for: control.id, text: label }), control,
    hint ? el('p', { class: 'muted hint', text: hint }) : null);
}
