// The operator console's page: sign-in, the jobs list, the job page (Maya's A2UI layout,
// rendered by the official renderer and hydrated from the job view's entities) and its
// timeline, and the routes to Nova, the workspace settings and source upload. It talks only
// to its own origin; the session's CSRF token lives in memory (common.js), never in storage.
import { render as renderLayout } from '/assets/a2ui.js';
import { entityView } from '/assets/entities.js';
import { activityPage } from '/assets/activity.js';
import { calendarPage } from '/assets/calendar.js';
import { api, el, errorText, inFlight, number, outcome, platformName, saidError, say, session, show, visit } from '/assets/common.js';
import { novaPage } from '/assets/nova.js';
import { settingsPage } from '/assets/settings.js';
import { uploadPage } from '/assets/upload.js';

const AWAITING = { awaiting_strategy_approval: 'the strategy', awaiting_draft_approval: 'the draft', needs_human: 'a person' };

function signedOut(message) {
  session.current = null;
  live?.close();
  clearTimeout(refresh);
  visit(); // Whatever a page was still waiting for stays off the sign-in form.
  document.getElementById('nav').hidden = true;
  document.getElementById('sign-out').hidden = true;
  document.getElementById('who').textContent = '';
  const input = el('input', { id: 'credential', name: 'credential', type: 'password', autocomplete: 'off', required: true });
  const form = el('form', { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    el('h1', { id: 'sign-in-title', text: 'Sign in' }),
    el('label', { for: 'credential', text: 'Operator credential or Google ID token' }), input,
    el('button', { class: 'primary', type: 'submit', text: 'Sign in' }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    // An operator credential names itself (hop_…); anything else is offered as a Google ID token.
    const given = input.value.trim();
    const how = given.startsWith('hop_') ? { credential: given } : { id_token: given };
    const reply = await api('POST', '/v1/console/session', how);
    if (reply.status !== 201) { say(errorText(reply), true); input.select(); return; }
    input.value = '';
    signedIn(reply.body);
  });
  show(form);
  if (message) say(message, true);
  input.focus();
}

function signedIn(who) {
  session.current = who;
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

/** The jobs list's caption: how many jobs it shows and, when filtered, which status. */
function count(n, filter) {
  const jobs = n === 1 ? '1 job' : `${n} jobs`;
  if (!filter) return `${n === 1 ? '1 job waits' : `${n} jobs wait`} for you, the longest waiting first`;
  return filter === 'all' ? jobs : `${jobs} with status ${filter.replaceAll('_', ' ')}`;
}

/** The jobs a list shows: waiting for a person (no filter: the inbox), oldest first; every
 * job (`all`), newest first; or those of one status. */
function listed(jobs, filter) {
  if (!filter) return jobs.filter((j) => AWAITING[j.status]).sort((a, b) => Date.parse(a.updated_at) - Date.parse(b.updated_at));
  return jobs.filter((j) => filter === 'all' || j.status === filter);
}

/** The jobs list's next look at the server, while it is shown. */
let refresh = null;

/** How often the jobs list looks again. */
const LIST_REFRESH_MS = 5000;

function jobRows(jobs, filter) {
  return jobs.map((j) => el('tr', {},
    el('td', {}, el('a', { href: `#/jobs/${encodeURIComponent(j.id)}`, text: j.title || j.id })),
    filter ? el('td', { text: j.status.replaceAll('_', ' ') }) : null,
    el('td', { text: AWAITING[j.status] ? `awaits ${AWAITING[j.status]}` : '' }),
    filter
      ? el('td', { text: age(j.created_at), title: j.created_at })
      : el('td', {}, el('time', { datetime: j.updated_at, title: j.updated_at, text: `${age(j.updated_at)}` }))));
}

async function jobsPage(filter, here) {
  const reply = await api('GET', '/v1/jobs');
  if (!here()) return;
  if (reply.status !== 200) { say(errorText(reply), true); return; }
  // The server names every status; a filter that is not one of them (or `all`) is the inbox.
  const statuses = reply.body.statuses;
  if (filter !== 'all' && !statuses.includes(filter)) filter = null;
  const jobs = listed(reply.body.jobs, filter);
  const select = el('select', { id: 'status-filter', name: 'status' },
    el('option', { value: '', text: 'waiting for you', selected: !filter }),
    el('option', { value: 'all', text: 'every status', selected: filter === 'all' }),
    ...statuses.map((s) => el('option', { value: s, text: s.replaceAll('_', ' '), selected: s === filter })));
  select.addEventListener('change', () => { location.hash = select.value ? `#/jobs?status=${select.value}` : '#/jobs'; });
  const caption = el('caption', { class: 'muted', text: count(jobs.length, filter) });
  const body = el('tbody', {}, ...jobRows(jobs, filter));
  const headings = filter ? ['Job', 'Status', 'Decision', 'Age'] : ['Job', 'Waits for', 'Waiting for'];
  const empty = filter ? 'No job has this status.' : 'Nothing is waiting for you. Every job is moving, scheduled or done: see every status.';
  const table = jobs.length
    ? el('table', { class: filter ? 'jobs' : 'jobs inbox' }, caption,
      el('thead', {}, el('tr', {}, ...headings.map((h) => el('th', { scope: 'col', text: h })))),
      body)
    : el('p', { class: 'muted', text: empty });
  show(el('h1', { text: filter ? 'Jobs' : 'Jobs waiting for you' }),
    el('div', { class: 'filters' }, el('label', { for: 'status-filter', text: 'Show' }), select), table);
  // The list follows the jobs as they move: its rows are replaced when what they show changed.
  let shown = JSON.stringify(jobs.map((j) => [j.id, j.status]));
  const again = async () => {
    if (!here()) return;
    if (document.visibilityState === 'visible') {
      const next = await api('GET', '/v1/jobs');
      if (!here()) return;
      if (next.status === 200) {
        const now = listed(next.body.jobs, filter);
        const key = JSON.stringify(now.map((j) => [j.id, j.status]));
        if (key !== shown) {
          if (!jobs.length || !now.length) { jobsPage(filter, here); return; }
          shown = key;
          body.replaceChildren(...jobRows(now, filter));
          caption.textContent = count(now.length, filter);
        }
      }
    }
    refresh = setTimeout(again, LIST_REFRESH_MS);
  };
  refresh = setTimeout(again, LIST_REFRESH_MS);
}

function clock(ms) {
  const total = Math.round(ms / 1000);
  return `${Math.floor(total / 60)}:${String(total % 60).padStart(2, '0')}`;
}

const FLAG_KINDS = { instruction: 'an instruction', encoded: 'an encoded payload', markup: 'markup', disguised_link: 'a disguised link' };

function cues(pair) {
  if (!pair) return '';
  return pair[0] === pair[1] ? `cue ${pair[0]}` : `cues ${pair[0]}–${pair[1]}`;
}

/** Where a flagged span lies, in words. */
function flagPlace(flag) {
  const time = flag.start_ms == null ? '' : (flag.end_ms !== flag.start_ms ? `${clock(flag.start_ms)}–${clock(flag.end_ms)}` : clock(flag.start_ms));
  if (flag.part.kind === 'title') return 'the title';
  if (flag.part.kind === 'frame') return `frame ${flag.part.index + 1} at ${time}`;
  return `${cues(flag.cues)}${flag.part.kind === 'segments' ? ' read together' : ''}, ${time}`;
}

/** What ingest flagged in the source: each span's text, where and when, and why. */
function flagsPreview(detail) {
  const flags = detail.flags ?? [];
  if (!flags.length) return null;
  return el('section', { id: 'flags', class: 'flags', 'aria-labelledby': 'flags-title' },
    el('h2', { id: 'flags-title', text: `Flagged in the source (${flags.length})` }),
    el('p', { class: 'muted', text: 'Data, never evidence or a line of a post: check that nothing here reached the draft.' }),
    el('ul', {}, ...flags.map((f) => el('li', { class: 'flag' },
      el('p', {}, el('strong', { text: `${FLAG_KINDS[f.kind] ?? f.kind}` }), ` · ${flagPlace(f)}`),
      el('blockquote', { class: 'flagged-text', text: f.text }),
      el('p', { class: 'muted', text: `Why: ${f.reason}` })))));
}

/** An evidence moment as the operator checks it: the exact quote, where it is in the source,
 * and any flagged span said within ten seconds of it. */
function quote(moment) {
  const near = (moment.near_flags ?? []).map((f) => el('p', { class: 'near-flag', role: 'note',
    text: `Within 10 seconds of ${FLAG_KINDS[f.kind] ?? f.kind} flagged in the source (${cues(f.cues) || clock(f.start_ms)}, ${clock(f.start_ms)}–${clock(f.end_ms)}).` }));
  return el('blockquote', { class: 'quote' }, el('p', { text: `“${moment.quote}”` }),
    el('footer', { class: 'muted', text: `${moment.evidence_id} · ${clock(moment.start_ms)}–${clock(moment.end_ms)}` }), ...near);
}

function strategyPreview(detail) {
  const strategy = detail.strategy;
  if (!strategy) return null;
  // The detail resolves each brief's evidence to its moment (quote and times).
  const briefs = strategy.briefs.map((b) => el('li', { class: 'brief' },
    el('p', {}, el('strong', { text: b.angle }), ` · ${b.platforms.join(', ')}`),
    el('p', { text: b.key_message }),
    el('p', { class: 'muted', text: `Call to action: ${b.call_to_action}` }),
    ...b.evidence.map(quote)));
  return el('section', { 'aria-labelledby': 'strategy-title' },
    el('h2', { id: 'strategy-title', text: 'Strategy' }),
    el('p', { text: strategy.objective }),
    el('p', { class: 'muted', text: `Audience: ${strategy.audience} · Voice: ${strategy.voice}` }),
    el('ol', { class: 'briefs' }, ...briefs));
}

const DIMENSIONS = {
  grounding: 'Grounding', claims: 'Claims', structure: 'Structure', clarity: 'Clarity',
  brief_voice_audience_fit: 'Brief, voice and audience fit', platform_cta_usability: 'Platform and call to action',
  safety_inclusion: 'Safety and inclusion',
};

/** How each platform counts a post's length, in words. */
const COUNTED = {
  bluesky: 'graphemes, as Bluesky counts them', x: 'weighted characters, as X counts them (a link is 23)',
  mastodon: 'characters, as Mastodon counts them (a link is 23)', linkedin: 'characters, as LinkedIn counts them',
};

/** `text` as nodes, its links, mentions and hashtags marked as the platform shows them (text
 * only: nothing of the post becomes markup). */
function marked(text) {
  const pattern = /(https?:\/\/[^\s]+[^\s.,;:!?)”’"'])|(@[A-Za-z0-9_][A-Za-z0-9_.-]*(?:@[A-Za-z0-9.-]+[A-Za-z0-9])?)|(#[\p{L}\p{N}_]+)/gu;
  const nodes = [];
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) nodes.push(document.createTextNode(text.slice(last, m.index)));
    const kind = m[1] ? 'link' : m[2] ? 'mention' : 'tag';
    nodes.push(el('span', { class: kind, title: kind === 'link' ? 'A link' : kind === 'mention' ? 'A mention' : 'A hashtag', text: m[0] }));
    last = m.index + m[0].length;
  }
  nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

/** The draft as it will be posted: a card for its platform (the brand's name and handle, the
 * text with its links, mentions and hashtags marked), its length against the limit as the
 * platform counts it, the call to action, and its version (short, with a button that copies the
 * whole one). A thread is a card per post, in order, each with its own length. */
function draftPost(detail, config) {
  const draft = detail.drafts?.at(-1);
  if (!draft) return null;
  const posts = draft.thread?.length ? draft.thread : [{ body: draft.body, length: draft.length }];
  const over = posts.some((p) => p.length.used > p.length.limit);
  const platform = platformName(draft.platform);
  const handle = config?.channels?.find((c) => c.platform === draft.platform)?.handle;
  const brief = detail.strategy?.briefs?.find((b) => b.id === detail.selected_item?.brief);
  const cta = brief?.call_to_action;
  const card = (post, n) => {
    const links = (post.body.match(/https?:\/\/\S+/g) ?? []).length;
    const which = posts.length > 1 ? `Post ${n} of ${posts.length}` : null;
    return el('article', { class: `preview preview-${draft.platform}`, 'aria-label': which ? `${which} as it will look on ${platform}` : `The post as it will look on ${platform}` },
      el('header', {}, el('strong', { text: config?.name ?? 'Your brand' }), handle ? el('span', { class: 'muted', text: ` ${handle}` }) : null,
        el('span', { class: 'muted', text: ` · ${platform}` }), which ? el('span', { class: 'muted', text: ` · ${which}${n > 1 ? ', replying to the one before' : ''}` }) : null),
      el('div', { class: 'post', id: which ? `draft-post-${n}` : 'draft-body' }, ...marked(post.body)),
      el('footer', { class: 'muted' },
        el('meter', { min: 0, max: post.length.limit, value: Math.min(post.length.used, post.length.limit), high: post.length.limit * 0.9, optimum: 0, 'aria-label': 'Length against the limit' }),
        ` ${post.length.used} of ${post.length.limit} ${COUNTED[draft.platform] ?? post.length.unit}${links ? ` · ${links} link${links === 1 ? '' : 's'}` : ''}`));
  };
  const summary = posts.length > 1
    ? `A thread of ${posts.length} posts, each within ${draft.length.limit} ${draft.length.unit}${over ? ': a post is over the limit' : ''} · `
    : `${draft.length.used} / ${draft.length.limit} ${draft.length.unit}${over ? ': over the limit' : ''} · `;
  return el('section', { class: 'draft', 'aria-labelledby': 'draft-title' },
    el('h2', { id: 'draft-title', text: posts.length > 1 ? `Thread for ${platform}` : `Draft for ${platform}` }),
    el('p', { class: over ? 'over' : 'muted' }, summary,
      version(draft.content_hash), ` · ${draft.provenance === 'mock' ? 'offline model (mock)' : 'live model'}`),
    posts.length > 1 ? el('ol', { class: 'thread' }, ...posts.map((p, i) => el('li', {}, card(p, i + 1)))) : card(posts[0], 1),
    cta ? el('p', { class: 'cta' }, el('strong', { text: 'Call to action: ' }), cta,
      el('span', { class: 'muted', text: draft.body.includes(cta.replace(/[.!]$/, '')) ? ' (in the post)' : ' (not word for word in the post)' })) : null);
}

/** A version as the operator reads it: its first twelve characters, and a button that copies
 * the whole hash. */
function version(hash) {
  const button = el('button', { type: 'button', class: 'copy', 'aria-label': `Copy the whole version ${hash.slice(0, 12)}`, text: 'Copy' });
  button.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(hash); outcome(`Copied the version ${hash.slice(0, 12)}… to the clipboard.`); } catch { outcome(`The version is ${hash}.`); }
  });
  return el('span', { class: 'version' }, el('span', { text: `version ${hash.slice(0, 12)}`, title: hash }), ' ', button);
}

/** What the draft claims, each claim with the source moments it rests on. */
function draftEvidence(detail) {
  const draft = detail.drafts?.at(-1);
  if (!draft?.claims.length) return null;
  return el('section', { 'aria-labelledby': 'claims-title' },
    el('h2', { id: 'claims-title', text: 'Claims and their evidence' }),
    el('ol', {}, ...draft.claims.map((c) => el('li', {}, el('p', { text: c.text }), ...c.evidence.map(quote)))));
}

/** Dara's review and the policy rules of the draft: the verdicts in a line, the tables on demand. */
function reviewDetails(detail) {
  const draft = detail.drafts?.at(-1);
  if (!draft) return null;
  const review = (detail.reviews ?? []).find((r) => r.draft === draft.id);
  const policy = (detail.policy ?? []).find((p) => p.draft === draft.id);
  if (!review && !policy) return null;
  const failed = policy ? policy.rules.filter((r) => !r.passed).length : 0;
  const summary = [review && `Dara's review: ${review.verdict.replaceAll('_', ' ')}`,
    policy && `policy: ${policy.outcome.replaceAll('_', ' ')}${failed ? ` (${failed} rule${failed === 1 ? '' : 's'} broken)` : ''}`].filter(Boolean).join(' · ');
  return el('details', { class: 'more', id: 'review-details' }, el('summary', { text: summary }),
    review && el('h3', { text: `Dara's review: ${review.verdict}` }),
    review && el('table', { class: 'review' },
      el('thead', {}, el('tr', {}, ...['Dimension', 'Score', 'Why'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...Object.entries(DIMENSIONS).map(([key, name]) => el('tr', {},
        el('th', { scope: 'row', text: name }),
        el('td', { text: `${review.assessments[key].score} / 5` }),
        el('td', { text: review.assessments[key].rationale }))))),
    policy && el('h3', { text: `Policy: ${policy.outcome}` }),
    policy && el('ul', { class: 'rules' }, ...policy.rules.map((r) => el('li', { class: r.passed ? 'pass' : 'fail', text: `${r.passed ? '✓' : '✗'} ${r.reason}` }))));
}

/** `section` behind a "details" toggle, closed until the operator opens it. */
function onDemand(title, section) {
  return section ? el('details', { class: 'more' }, el('summary', { text: title }), section) : null;
}


/** The publication in words: verified or not, a link to the post on its platform (the
 * receipt's URL, when the platform gave one), and its ids behind "Details". */
function publicationPreview(detail) {
  const p = detail.publication;
  if (!p) return null;
  const verified = p.verification?.outcome;
  const applied = p.receipt?.outcome?.outcome === 'applied' ? p.receipt.outcome : null;
  const refused = p.receipt?.outcome?.outcome === 'failed' ? p.receipt.outcome : null;
  const platform = platformName(p.platform);
  const until = refused?.retry_after
    ? ` ${platform} allows posting again at ${new Date(refused.retry_after).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short', timeZone: zone, timeZoneName: 'short' })}.`
    : '';
  const posts = p.thread?.length;
  // A thread refused part way: the posts it made before the refusal stay.
  const live = (p.thread ?? []).filter((t) => t.receipt?.outcome === 'applied').length;
  const state = verified?.outcome === 'verified'
    ? (posts ? `Verified: the thread of ${posts} posts is live on ${platform}, each replying to the one before.` : `Verified: the post is live on ${platform}.`)
    : verified?.outcome === 'mismatch' ? (posts ? `Read back from ${platform}, a post of the thread differs from the approved draft or does not reply to the one before.` : `Read back from ${platform}, the post differs from the approved draft.`)
      : verified?.outcome === 'missing' ? `No post was found on ${platform}.`
        : refused && live ? `${platform} refused post ${live + 1} of the thread (${refused.code}); the ${live === 1 ? 'first post stays' : `first ${live} posts stay`} live, and nothing else was posted.${until}`
        : refused ? `${platform} refused the post (${refused.code}); nothing was posted.${until}`
          : p.receipt ? `Sent to ${platform}; it is being read back to verify it.` : `Being published to ${platform}.`;
  const url = applied?.url && /^https?:\/\//.test(applied.url) ? applied.url : null;
  const post = verified?.post ?? applied?.post;
  return el('section', { 'aria-labelledby': 'publication-title' },
    el('h2', { id: 'publication-title', text: 'Publication' }),
    el('p', { id: 'publication-state', text: state }),
    url && el('p', {}, el('a', { href: url, rel: 'noopener noreferrer', target: '_blank', text: `Open the post on ${platform}` })),
    p.thread?.length
      ? el('ol', { class: 'thread', 'aria-label': `The thread, ${p.thread.length} posts` }, ...p.thread.map((t, i) => el('li', {},
        el('p', { class: 'muted', text: `Post ${i + 1} of ${p.thread.length}: ${threadPostState(t)}` }),
        el('div', { class: 'post', text: t.body }))))
      : el('div', { class: 'post', text: p.body }),
    post && el('details', {}, el('summary', { text: 'Details' }),
      el('dl', { class: 'facts' }, el('dt', { text: 'Post id' }), el('dd', { text: post }),
        applied?.record && el('dt', { text: 'Record' }), applied?.record && el('dd', { text: applied.record.uri }))));
}

/** Where one post of a thread being published stands, in words. */
function threadPostState(post) {
  const outcome = post.receipt?.outcome;
  if (outcome === 'applied') return `posted as ${post.receipt.post}.`;
  if (outcome === 'failed') return `refused (${post.receipt.code}); nothing was posted.`;
  if (outcome === 'unknown' || post.begun) return 'sent; its answer is being confirmed by reading it back.';
  return 'not posted yet.';
}

/** What the post drew on its platform, read at each snapshot offset after it was verified: a
 * row per snapshot, a dash where the platform counts nothing (Mastodon has no quotes). Before
 * the first read, when it will be. */
function engagementPreview(detail, metrics, config) {
  if (detail.publication?.verification?.outcome?.outcome !== 'verified') return null;
  const platform = platformName(detail.publication.platform);
  const offsets = metrics?.offsets ?? config?.engagement?.snapshots ?? ['1h', '24h', '7d'];
  const snapshots = metrics?.snapshots ?? [];
  const count = (n) => (n === null || n === undefined ? '—' : number(n));
  const mock = snapshots.some((s) => s.provenance === 'mock');
  return el('section', { 'aria-labelledby': 'engagement-title' },
    el('h2', { id: 'engagement-title', text: 'Engagement' }),
    snapshots.length === 0
      ? el('p', { id: 'engagement-state', text: `Nothing read yet: ${platform} is asked ${offsets.join(', ')} after the post was verified.` })
      : el('table', { class: 'engagement', id: 'engagement' },
        el('caption', { class: 'muted', text: `${mock ? `The sandbox’s mock numbers (no real ${platform} post)` : `As ${platform} counted them`}, read ${offsets.join(', ')} after verification.` }),
        el('thead', {}, el('tr', {}, ...['After (read at)', 'Likes', 'Reposts', 'Replies', 'Quotes'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, ...snapshots.map((s) => el('tr', {},
          el('th', { scope: 'row' }, `${s.offset} `, el('time', { class: 'muted', datetime: s.taken_at, title: s.taken_at,
            text: `(${new Date(s.taken_at).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: zone })})` })),
          el('td', { text: count(s.likes) }), el('td', { text: count(s.reposts) }),
          el('td', { text: count(s.replies) }), el('td', { text: count(s.quotes) }))))));
}

/** The decision the job awaits, naming the exact version shown; every button posts with it. */
function decisionPanel(id, detail, here, reload) {
  const awaiting = detail.awaiting;
  const status = detail.job.status;
  const panel = el('section', { class: 'decide', 'aria-labelledby': 'decide-title' });
  // One request per click: the panel's buttons wait for the answer. Its outcome stays on screen
  // wherever the operator is by then; the job page is shown again only if they are still on it.
  const act = (path, body, done) => inFlight(panel, async () => {
    say('Recording your decision…');
    const reply = await api('POST', path, body);
    say('');
    if (reply.status >= 300) { outcome(errorText(reply), true); return; }
    outcome(done);
    if (here()) await reload();
  });
  if (status === 'scheduled') {
    panel.append(el('h2', { id: 'decide-title', text: 'Scheduled' }),
      el('button', { class: 'primary', type: 'button', text: 'Publish now', onclick: () => act(`/v1/jobs/${id}/publish-now`, {}, 'Released for publishing.') }),
      ' ',
      el('button', { type: 'button', text: 'Cancel the post', onclick: () => act(`/v1/jobs/${id}/cancel`, {}, 'Cancelled: it will not be published.') }));
    return panel;
  }
  if (!awaiting) return null;
  const subject = awaiting.subject;
  const decision = (kind, extra = {}) => ({ subject, decision: kind, version: awaiting.version, ...extra });
  const path = `/v1/jobs/${id}/decisions`;
  const reason = el('input', { id: 'reason', name: 'reason', maxlength: 500 });
  const feedback = el('textarea', { id: 'feedback', name: 'feedback', rows: 3, maxlength: 2000 });
  panel.append(
    el('h2', { id: 'decide-title', text: `Your decision on the ${subject}` }),
    el('p', { class: 'muted', text: `Version ${awaiting.prefix}: every decision below names exactly this version.` }),
    el('button', { class: 'primary', type: 'button', text: `Approve the ${subject}`, onclick: () => act(path, decision('approve'), `The ${subject} is approved.`) }),
    el('div', { class: 'field' }, el('label', { for: 'feedback', text: 'Changes to ask for' }), feedback,
      el('button', { type: 'button', text: 'Request changes', onclick: () => act(path, decision('request_changes', { feedback: feedback.value }), 'Changes requested: a new version is on its way.') })),
    el('div', { class: 'field' }, el('label', { for: 'reason', text: 'Reason for rejecting' }), reason,
      el('button', { type: 'button', text: `Reject the ${subject}`, onclick: () => act(path, decision('reject', { reason: reason.value }), `The ${subject} is rejected.`) })));
  const thread = detail.drafts?.at(-1)?.thread ?? [];
  if (subject === 'draft' && thread.length) {
    // A thread is edited post by post: each save is the next version, with that post changed.
    thread.forEach((post, i) => {
      const n = i + 1;
      const body = el('textarea', { id: `edit-post-${n}`, name: `post-${n}`, rows: 4, maxlength: 5000 });
      body.value = post.body;
      panel.append(el('div', { class: 'field' }, el('label', { for: `edit-post-${n}`, text: `Your own version of post ${n} of ${thread.length}` }), body,
        el('button', { type: 'button', text: `Save post ${n}`, onclick: () => act(`/v1/jobs/${id}/edits`, { version: awaiting.version, post: n, body: body.value }, `Your version of post ${n} is saved and the thread passed policy.`) })));
    });
  } else if (subject === 'draft') {
    const body = el('textarea', { id: 'edit-body', name: 'body', rows: 6, maxlength: 5000 });
    body.value = detail.drafts?.at(-1)?.body ?? '';
    panel.append(el('div', { class: 'field' }, el('label', { for: 'edit-body', text: 'Your own version of the post' }), body,
      el('button', { type: 'button', text: 'Save my version', onclick: () => act(`/v1/jobs/${id}/edits`, { version: awaiting.version, body: body.value }, 'Your version is saved and passed policy.') })));
  }
  return panel;
}

/** The open stream of the job page's progress, closed when the page goes. */
let live = null;

/** An event's identity: a step or decision is shown once, however often it is sent. */
const eventKey = (e) => [e.kind, e.stage ?? e.subject, e.pass, e.round, e.at].join('|');

/** Show `events` (the job's progress, ending with its status) in `progress`: the status
 * sentence, and each step and decision not shown yet. */
function showProgress(progress, events, seen) {
  const steps = progress.querySelector('ol');
  for (const e of events) {
    if (e.kind === 'status') {
      const now = progress.querySelector('#job-status');
      now.textContent = e.text;
      now.dataset.status = e.status;
      continue;
    }
    if (seen.has(eventKey(e))) continue;
    seen.add(eventKey(e));
    steps.append(el('li', {}, el('time', { datetime: e.at, title: e.at, text: when(e.at) }), ` ${e.text}`));
  }
  progress.querySelector('summary').textContent = `What happened (${steps.children.length})`;
}

/** How often the job page asks again where the job is, without Server-Sent Events. */
const POLL_MS = 3000;

/** Follow the job's progress (`GET /v1/jobs/{job}/events`: Server-Sent Events, else the same
 * events polled) in `progress`; when the job's status moves past the one the page was composed
 * at, the page is composed again (unless a decision is on its way, which does so itself). */
function follow(id, status, progress, seen, here, reload) {
  live?.close();
  const path = `/v1/jobs/${encodeURIComponent(id)}/events`;
  const moved = (events) => {
    const now = events.at(-1);
    if (now?.kind !== 'status' || now.status === status || document.querySelector('.decide[data-busy]')) return false;
    live?.close();
    reload();
    return true;
  };
  if (!window.EventSource) {
    let timer = null;
    const poll = async () => {
      const reply = await api('GET', path);
      if (!here()) return;
      if (reply.status === 200) {
        showProgress(progress, reply.body.events, seen);
        if (moved(reply.body.events) || reply.body.events.at(-1)?.terminal) return;
      }
      timer = setTimeout(poll, POLL_MS);
    };
    live = { close: () => clearTimeout(timer) };
    timer = setTimeout(poll, POLL_MS);
    return;
  }
  const source = new EventSource(path);
  live = source;
  const each = (event) => {
    if (!here()) { source.close(); return; }
    const e = JSON.parse(event.data);
    showProgress(progress, [e], seen);
    if (e.kind === 'status' && e.terminal) source.close();
    if (e.kind === 'status') moved([e]);
  };
  for (const kind of ['step', 'decision', 'status']) source.addEventListener(kind, each);
}

/** The workspace's time zone, once a page has read its configuration (the browser's until then). */
let zone;

/** A time as the workspace's clock shows it, with how long ago. */
function when(iso) {
  const t = new Date(iso);
  const time = t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', timeZone: zone, timeZoneName: 'short' });
  return `${time} (${age(iso)} ago)`;
}

async function jobPage(id, here) {
  say('Composing the job view…');
  const path = `/v1/jobs/${encodeURIComponent(id)}`;
  const [view, detail, events, workspace, metrics] = await Promise.all([api('GET', `${path}/view`), api('GET', `${path}/detail`), api('GET', `${path}/events`), api('GET', '/v1/workspace'), api('GET', `${path}/metrics`)]);
  if (!here()) return;
  for (const reply of [view, detail, events]) if (reply.status !== 200) { say(errorText(reply), true); return; }
  const d = detail.body;
  zone = workspace.status === 200 ? workspace.body.workspace.config.timezone : undefined;
  const layout = el('section', { id: 'job-view', 'aria-label': 'Job view' });
  const reload = () => jobPage(id, here);
  const progress = el('section', { class: 'progress', 'aria-label': 'Progress' },
    el('p', { id: 'job-status', 'aria-live': 'polite' }),
    el('details', {}, el('summary', { text: 'What happened' }), el('ol', {})));
  const seen = new Set();
  showProgress(progress, events.body.events, seen);
  // What the operator decides on comes first, then the decision, then what it rests on; the
  // rest (the strategy once decided, the review's tables, the job view) opens on demand.
  const strategyFirst = d.awaiting?.subject === 'strategy';
  const config = workspace.status === 200 ? workspace.body.workspace.config : null;
  show(el('p', {}, el('a', { href: '#/jobs', text: '← Jobs' })),
    el('h1', { text: d.job.title || `Job ${id}` }),
    progress,
    publicationPreview(d),
    engagementPreview(d, metrics.status === 200 ? metrics.body : null, config),
    strategyFirst ? strategyPreview(d) : draftPost(d, config),
    decisionPanel(encodeURIComponent(id), d, here, reload),
    draftEvidence(d), reviewDetails(d), flagsPreview(d),
    strategyFirst ? null : onDemand('The strategy', strategyPreview(d)),
    el('details', { class: 'more', id: 'job-view-details' }, el('summary', { text: "Maya's job view: every record of the job" }), layout),
    el('p', {}, el('a', { href: `#/jobs/${encodeURIComponent(id)}/activity`, text: 'Activity timeline' })));
  follow(id, d.job.status, progress, seen, here, reload);
  try {
    const hydrate = (ref) => entityView(ref, view.body.entities[`${ref.kind}:${ref.id}`]);
    await renderLayout(layout, view.body.layout, hydrate, undefined, [await entitySheet()]);
    if (here() && !saidError()) say('');
  } catch (e) {
    if (here()) say(`The job view could not be rendered: ${e.message}`, true);
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

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

/** Every activity record of the job, oldest first, page by page. */
async function activity(id) {
  const records = [];
  for (let page = 0; page !== null && page !== undefined;) {
    const reply = await api('GET', `/v1/activity?job=${encodeURIComponent(id)}&limit=200&page=${page}`);
    if (reply.status !== 200) throw new Error(errorText(reply));
    records.push(...reply.body.activity);
    page = reply.body.next_page;
  }
  return records;
}

/** The job's invocations on a time axis: one bar each, coloured by outcome, its tokens and
 * duration on hover and on keyboard focus. */
async function timelinePage(id, here) {
  say('Reading the activity…');
  let records;
  try { records = await activity(id); } catch (e) { if (here()) say(e.message, true); return; }
  if (!here()) return;
  const back = el('p', {}, el('a', { href: `#/jobs/${encodeURIComponent(id)}`, text: '← The job' }));
  if (!records.length) { show(back, el('h1', { text: 'Activity' }), el('p', { class: 'muted', text: 'No invocation is recorded for this job yet.' })); say(''); return; }
  const t0 = Math.min(...records.map((r) => Date.parse(r.started_at)));
  const t1 = Math.max(...records.map((r) => Date.parse(r.ended_at)), t0 + 1);
  const [left, width, row] = [150, 820, 24];
  const x = (t) => left + ((t - t0) / (t1 - t0)) * width;
  const detail = el('p', { id: 'timeline-detail', class: 'muted', 'aria-live': 'polite', text: 'Point at or focus a bar to see its tokens and duration.' });
  const chart = svg('svg', { viewBox: `0 0 ${left + width + 10} ${records.length * row + 30}`, role: 'list', 'aria-label': `${records.length} invocations on a time axis`, class: 'timeline' });
  records.forEach((r, i) => {
    const failed = r.outcome.status !== 'success';
    const ms = (r.duration_us / 1000).toFixed(1);
    const text = `${r.agent} · ${r.stage} · ${r.operation}: ${ms} ms, ${r.usage.input_tokens} input and ${r.usage.output_tokens} output tokens, ${r.model_calls} model call(s), ${r.repairs ? `${r.repairs} corrective turn(s), ` : ''}${failed ? `failed (${r.outcome.code})` : 'succeeded'}`;
    const start = x(Date.parse(r.started_at));
    const bar = svg('rect', { x: start, y: i * row + 4, width: Math.max(2, x(Date.parse(r.ended_at)) - start), height: row - 8, rx: 3, class: failed ? 'bar failure' : 'bar success', tabindex: 0, role: 'listitem', 'aria-label': text },
      svg('title', {}, text));
    const showIt = () => { detail.textContent = text; };
    bar.addEventListener('mouseenter', showIt);
    bar.addEventListener('focus', showIt);
    chart.append(svg('text', { x: 4, y: i * row + row / 2 + 5, class: 'label' }, `${r.agent} · ${r.stage}`), bar);
  });
  chart.append(svg('text', { x: left, y: records.length * row + 22, class: 'label' }, '0 s'),
    svg('text', { x: left + width, y: records.length * row + 22, class: 'label end' }, `${((t1 - t0) / 1000).toFixed(1)} s`));
  const failures = records.filter((r) => r.outcome.status !== 'success').length;
  show(back, el('h1', { text: 'Activity' }),
    el('p', { class: 'muted', text: `${records.length} invocation(s), ${failures} failed. Green succeeded, red failed.` }),
    chart, detail);
  say('');
}

const PAGES = { '#/nova': novaPage, '#/settings': settingsPage, '#/sources/new': uploadPage };

function route() {
  if (!session.current) return;
  live?.close();
  clearTimeout(refresh);
  const here = visit();
  const hash = location.hash || '#/jobs';
  if (PAGES[hash]) return PAGES[hash](here);
  if (/^#\/calendar(\?|$)/.test(hash)) return calendarPage(here, hash.split('?')[1]);
  if (/^#\/activity(\?|$)/.test(hash)) return activityPage(here, hash.split('?')[1]);
  const timeline = hash.match(/^#\/jobs\/([^?/]+)\/activity$/);
  if (timeline) return timelinePage(decodeURIComponent(timeline[1]), here);
  const job = hash.match(/^#\/jobs\/([^?/]+)$/);
  if (job) return jobPage(decodeURIComponent(job[1]), here);
  const filter = new URLSearchParams(hash.split('?')[1] ?? '').get('status');
  return jobsPage(filter, here);
}

document.getElementById('sign-out').addEventListener('click', async () => {
  const reply = await api('DELETE', '/v1/console/session');
  // The next person to sign in starts at the jobs list, not on this one's last page.
  history.replaceState(null, '', '/');
  signedOut(reply.status === 200 ? 'Signed out.' : errorText(reply));
});
session.ended = signedOut;
document.getElementById('dismiss').addEventListener('click', () => outcome(''));
window.addEventListener('hashchange', route);

const current = await api('GET', '/v1/console/session');
if (current.status === 200) signedIn(current.body);
else signedOut();
