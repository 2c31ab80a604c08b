// The console in a real browser (Debian's Chromium, driven by playwright-core): run by the
// end-to-end test `console::` against a `harmonia serve` it started. It signs in, submits a
// source file through the upload page, reads the jobs list, opens the job page (Maya's A2UI
// layout rendered by the official renderer), takes the job through the operator's loop
// (approve the strategy and wait on the page, without reloading, until the draft waits; request
// changes to the draft, double-click to approve it and see one decision and no error, publish
// now from the calendar after moving it to another slot there, see the verified post and the
// timeline), asks Nova about the job and what waits for the operator and reads its evidence
// and tool envelopes, reads the workspace's activity (Nova's answers included, filtered by
// agent), edits the workspace settings as an admin and finds them read-only as an operator,
// and checks the refusals: a wrong credential, a state change without the CSRF
// token, another workspace's job, and a session after sign-out. It saves a screenshot of each
// page, runs axe-core's WCAG A and AA rules on it, and prints one JSON line per check; it exits
// non-zero on the first failure, saying which.
//
// It also opens a job whose source ingest flagged (FLAGGED_JOB: an order to the system, an
// encoded payload and a script tag) and checks that the job page lists every flag with its
// text, cue, time and why, shows the script tag as text, and notes beside a quote that it was
// said near one.
//
// In workspace B it opens a job whose post is a thread (THREAD_JOB): a card per post, each with
// its length, post 2 edited in its own box, then approved, published now and verified post by
// post.
//
// Environment: BASE_URL, CREDENTIAL (an admin of workspace A), OPERATOR_CREDENTIAL (an operator
// of A), OTHER_CREDENTIAL (workspace B), SOURCE (a transcript file to submit), FLAGGED_JOB (a job
// of A), LONG_JOB (a job of A titled with one 200-character word), THREAD_JOB (a job of B at its
// draft gate, its post a thread), SCREENSHOTS (folder), HARMONIA_CONSOLE_MODULES (node_modules),
// HARMONIA_CHROMIUM.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env('BASE_URL');
const shots = env('SCREENSHOTS');
mkdirSync(shots, { recursive: true });
const { chromium } = await import(join(env('HARMONIA_CONSOLE_MODULES'), 'playwright-core', 'index.mjs'));

const axeSource = readFileSync(join(env('HARMONIA_CONSOLE_MODULES'), 'axe-core', 'axe.min.js'), 'utf8');

/** A screenshot of the page as it is (`name`.png; of `part` alone when given), and axe's
 * checks of the whole page (WCAG 2.x A and AA): no violation. Then the same in the other colour
 * scheme (`name`-dark.png or `name`-light.png), and back. */
async function snap(page, name, part) {
  // No page scrolls sideways, at either width (a whole pixel of rounding allowed).
  const fits = await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth + 1, null, { timeout: 5000 })
    .then(() => true, () => false);
  check(`the ${name} page does not scroll sideways`, fits, await page.evaluate(() => `${document.documentElement.scrollWidth} in ${window.innerWidth}`));
  const dark = await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
  for (const [scheme, suffix] of [[dark ? 'dark' : 'light', ''], [dark ? 'light' : 'dark', dark ? '-light' : '-dark']]) {
    await page.emulateMedia({ colorScheme: scheme });
    await (part ?? page).screenshot({ path: join(shots, `${name}${suffix}.png`), fullPage: !part });
    // Evaluated through the browser's debugging protocol, which the page's CSP does not govern.
    if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(axeSource);
    const violations = await page.evaluate(async () => (await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'] }, resultTypes: ['violations'],
    })).violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`));
    check(`axe finds no violation on the ${name} page${suffix ? ` (${scheme})` : ''}`, violations.length === 0, violations.join(' | '));
  }
  await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
}

const check = (name, ok, detail = '') => {
  console.log(JSON.stringify({ check: name, ok: Boolean(ok), detail: String(detail) }));
  if (!ok) throw new Error(`${name} failed: ${detail}`);
};

/** Reload the job page until `ready()` (evaluated in the page) holds: the pipeline works on
 * behind the server while the operator waits. */
async function until(page, what, ready, arg) {
  const deadline = Date.now() + 120000;
  for (;;) {
    await page.locator('#job-status').waitFor();
    if (await page.evaluate(ready, arg)) return;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within 120 s`);
    await page.waitForTimeout(500);
    await page.reload();
  }
}

/** The operator's loop on the job page: approve the strategy, ask for changes to the draft and
 * see the new version, approve it, publish it now, and see the verified post. */
async function operatorLoop(page, job) {
  await page.locator('.quote').first().waitFor();
  check('the strategy shows its evidence quotes with their times', /\d+:\d\d–\d+:\d\d/.test(await page.locator('.quote footer').first().textContent()));
  await snap(page, 'strategy');
  await page.getByRole('button', { name: 'Approve the strategy' }).click();
  // The page follows the job by itself: no reload until the draft waits for a decision.
  await page.waitForFunction(() => document.getElementById('decide-title')?.textContent.includes('draft'), null, { timeout: 120000 });
  check('the approval\'s outcome stays on screen while the job moves', (await page.locator('#outcome span').textContent()) === 'The strategy is approved.',
    await page.locator('#outcome').textContent());
  const progress = await page.locator('#job-status').textContent();
  check('the job\'s status is a sentence', /^[A-Z].*\.$/.test(progress) && !progress.includes('_'), progress);
  const first = await page.locator('.decide p.muted').textContent();
  check('the draft shows its count against the limit', /\d+ \/ \d+ characters/.test(await page.locator('#draft-title + p').textContent()));
  check("the draft shows Dara's seven assessments", (await page.locator('table.review tbody tr').count()) === 7);
  const card = await page.locator('article.preview footer').textContent();
  check('the draft is a card for its platform, its length as the platform counts it', /\d+ of \d+ .* as (LinkedIn|X|Bluesky|Mastodon) counts them/.test(card)
    && (await page.locator('article.preview header').textContent()).length > 0 && (await page.locator('p.cta').count()) === 1, card);
  const order = await page.evaluate(() => {
    const [draft, decide, claims] = ['#draft-title', '.decide', '#claims-title'].map((q) => document.querySelector(q));
    const before = (a, b) => Boolean(a && b && (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING));
    return { ok: before(draft, decide) && before(decide, claims), closed: !document.getElementById('review-details').open && !document.getElementById('job-view-details').open };
  });
  check('the job page shows the draft, then the decision, then the evidence; the tables on demand', order.ok && order.closed, JSON.stringify(order));
  await snap(page, 'draft');
  await page.getByLabel('Changes to ask for').fill('Lead with the number, and keep it short.');
  await page.getByRole('button', { name: 'Request changes' }).click();
  await until(page, 'a new draft version', (before) => {
    const now = document.querySelector('.decide p.muted')?.textContent;
    return document.getElementById('decide-title')?.textContent.includes('draft') && now && now !== before;
  }, first);
  check('requesting changes leads to a new draft version', (await page.locator('.decide p.muted').textContent()) !== first);
  // A double click is one decision, and no error.
  const decisions = [];
  const counting = (r) => { if (r.method() === 'POST' && r.url().endsWith('/decisions')) decisions.push(r.url()); };
  page.on('request', counting);
  await page.getByRole('button', { name: 'Approve the draft' }).dblclick();
  await page.waitForFunction(() => document.getElementById('job-status')?.dataset.status === 'scheduled', null, { timeout: 120000 });
  page.off('request', counting);
  check('a double click sends one decision', decisions.length === 1, decisions.length);
  check('a double click shows no error', (await page.locator('.error:not([hidden])').count()) === 0
    && (await page.locator('#outcome span').textContent()) === 'The draft is approved.', await page.locator('#outcome').textContent());
  await page.getByRole('button', { name: 'Dismiss this message' }).click();
  check('an outcome can be dismissed', await page.locator('#outcome').isHidden());
  // The job on screen (the loop decides on whichever job page it is given).
  const onScreen = await page.evaluate(() => decodeURIComponent(location.hash.split('/')[2]));
  await fromTheCalendar(page, onScreen);
  await page.goto(`${base}/#/jobs/${onScreen}`);
  await until(page, 'the verified post', () => document.getElementById('publication-state')?.textContent.startsWith('Verified'));
  check('the approved draft becomes a verified post', (await page.locator('#publication-state').textContent()).startsWith('Verified'));
  // Maya's job view, opened on demand: cards in words, their fields behind "All fields".
  await page.locator('#job-view-details > summary').click();
  const cards = await page.evaluate(() => {
    const found = [];
    const walk = (root) => root.querySelectorAll('*').forEach((n) => {
      if (n.tagName === 'ARTICLE' && n.classList.contains('entity')) {
        found.push({ label: n.querySelector('h4 .label')?.textContent, heading: n.querySelector('h4')?.textContent, fieldsOpen: n.querySelector('details')?.open });
      }
      if (n.shadowRoot) walk(n.shadowRoot);
    });
    walk(document);
    return found;
  });
  check("Maya's job view reads as cards with labels, the fields on demand", cards.length >= 5
    && cards.every((c) => c.label && c.fieldsOpen === false && !/job[-_][0-9a-f]{8}/.test(c.heading)), JSON.stringify(cards.slice(0, 4)));
  await snap(page, 'published');
  // Engagement: before the first read, when it will be; then the row of the snapshot that
  // `harmonia metrics` takes as an hour later (the sandbox's mock counts).
  const before = await page.locator('#engagement-state').textContent();
  check('before the first read the job page says when engagement is read', before.includes('1h, 24h, 7d after the post was verified'), before);
  const later = new Date(Date.now() + 65 * 60 * 1000).toISOString();
  const measured = spawnSync(env('HARMONIA_BIN'), ['--data-dir', env('DATA_DIR'), '--workspace', 'field-notes', '--json', 'metrics', onScreen],
    { env: { ...process.env, HARMONIA_NOW: later }, encoding: 'utf8' });
  const snapshots = measured.status === 0 ? JSON.parse(measured.stdout).snapshots : [];
  check('harmonia metrics takes and lists the 1 h snapshot', snapshots.length === 1 && snapshots[0].offset === '1h', measured.stdout + measured.stderr);
  await page.reload();
  await until(page, 'the engagement table', () => !!document.getElementById('engagement'));
  const row = await page.locator('#engagement tbody tr').first().locator('th, td').allTextContents();
  check('the job page shows the snapshot as the platform counted it', row[0].startsWith('1h (')
    && row[1] === snapshots[0].likes.toLocaleString() && row[2] === snapshots[0].reposts.toLocaleString(), JSON.stringify(row));
  await snap(page, 'engagement');

  // The job's activity: a bar per invocation, its numbers on keyboard focus.
  await page.getByRole('link', { name: 'Activity timeline' }).click();
  await page.locator('rect.bar').first().waitFor();
  const bars = await page.locator('rect.bar').count();
  check('the timeline has a bar per invocation', bars >= 8, bars);
  await page.locator('rect.bar').first().focus();
  const shown = await page.locator('#timeline-detail').textContent();
  check('a focused bar shows its duration and tokens', /ms, \d+ input and \d+ output tokens/.test(shown), shown);
  await snap(page, 'timeline');
  await lateAnswerStaysOffTheNextPage(page, job);
}

/** The scheduled post on the calendar, in the workspace's time zone (America/Denver, which the
 * browser's is not): moved to another posting-window slot with the keyboard alone, then
 * published now from the calendar. */
async function fromTheCalendar(page, job) {
  await page.getByRole('link', { name: 'Calendar' }).click();
  await page.locator('.calendar.week').waitFor();
  // The week the post goes out in (this one, or a later one when no window is left this week).
  const listed = await page.evaluate(async () => (await fetch('/v1/calendar', { credentials: 'same-origin' })).json());
  const day = listed.posts.find((p) => p.job === job)?.at_local.slice(0, 10);
  if (!day) throw new Error(`the calendar lists no post of the job ${job}: ${JSON.stringify(listed.posts)}`);
  await page.goto(`${base}/#/calendar?view=week&day=${day}`);
  const post = page.locator(`.cal-post[data-job="${job}"]`);
  await post.waitFor();
  const at = await post.locator('time').getAttribute('datetime');
  const denver = (iso) => new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Denver', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso));
  check("the calendar shows the scheduled post at its time in the workspace's time zone",
    (await post.locator('time').textContent()) === denver(at) && (await page.locator('#calendar-summary').textContent()).includes('America/Denver'),
    `${at} shown as ${await post.locator('time').textContent()}`);
  check('the calendar shades the posting windows', (await page.locator('.cal-day.open .hours .window').count()) > 0);
  await snap(page, 'calendar');
  // With the keyboard: the slot list, the next slot but one, then the Move button.
  await post.locator('select').focus();
  const first = await post.locator('select').inputValue();
  await page.keyboard.press('ArrowDown');
  const chosen = await post.locator('select').inputValue();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#outcome span')?.textContent.startsWith('Moved:'), null, { timeout: 30000 });
  const moved = page.locator(`.cal-post[data-job="${job}"]`);
  await page.waitForFunction(([id, before]) => {
    const time = document.querySelector(`.cal-post[data-job="${id}"] time`);
    return time && time.getAttribute('datetime') !== before;
  }, [job, at], { timeout: 30000 });
  const after = await moved.locator('time').getAttribute('datetime');
  const calendar = await page.evaluate(async () => (await fetch('/v1/calendar', { credentials: 'same-origin' })).json());
  const stored = calendar.posts.filter((p) => p.job === job);
  check('a post is rescheduled from the calendar with the keyboard', chosen !== first && stored.length === 1 && stored[0].at === after
    && denver(after) === chosen.slice(11) && stored[0].at_local.startsWith(chosen.slice(0, 10)) && (await page.locator('.cal-post').count()) >= 1,
    `${first} → ${chosen}: ${JSON.stringify(stored)}`);
  await moved.getByRole('button', { name: 'Publish now' }).click();
  await page.waitForFunction(() => document.querySelector('#outcome span')?.textContent.startsWith('Released for publishing'), null, { timeout: 30000 });
  check('a post is published now from the calendar', (await page.locator('.error:not([hidden])').count()) === 0);
}

/** The workspace's activity: Nova's answers are there beside the jobs', a filter by agent keeps
 * only that agent's, and each day has its figures. */
async function workspaceActivity(page) {
  await page.getByRole('link', { name: 'Activity', exact: true }).click();
  await page.locator('#activity-records').waitFor();
  const agents = await page.locator('#activity-records .record').allTextContents();
  check("the workspace's activity shows Nova's answers beside the jobs' work", agents.some((t) => t.includes('Nova answered')) && agents.some((t) => t.includes('Noni answered')), agents.slice(0, 5).join(' | '));
  const day = await page.locator('table.days tbody tr').first().textContent();
  check('each day shows its records, p50 and p95 and tokens', /\d+.*(ms|s) \/ .*(ms|s).*\d+ \/ \d+/.test(day), day);
  await page.selectOption('#activity-agent', 'nova');
  await page.waitForFunction(() => location.hash.includes('agent=nova') && !document.querySelector('main').hasAttribute('aria-busy') && document.querySelector('#activity-records'));
  const only = await page.locator('#activity-records .record').allTextContents();
  check('a filter by agent keeps only that agent', only.length > 0 && only.every((t) => t.includes('Nova answered') || t.includes('Nova called a tool')), only.join(' | '));
  await snap(page, 'activity');
}

/** An operator who leaves the job page before the server answers it stays on the page they went
 * to: the job's detail is held back until Nova's page is showing, then let through. */
async function lateAnswerStaysOffTheNextPage(page, job) {
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  const detail = `${base}/v1/jobs/${encodeURIComponent(job)}/detail`;
  await page.route(detail, async (route) => { await held; await route.continue(); });
  const answered = page.waitForEvent('requestfinished', (r) => r.url() === detail);
  await page.goto(`${base}/#/jobs/${job}`);
  await page.getByRole('link', { name: 'Ask Nova' }).click();
  await page.getByLabel('Your question').waitFor();
  release();
  await answered;
  // Give the page's script every chance to act on the late answer.
  await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 500)));
  check("a late answer for the page left does not replace the next one",
    (await page.locator('#question').count()) === 1 && (await page.locator('#job-status').count()) === 0,
    await page.locator('h1').first().textContent());
  await page.unroute(detail);
}

/** Submit the source file through the upload page; the new job's id, from the page it opens. */
async function upload(page) {
  await page.getByRole('link', { name: 'Submit a source' }).click();
  // A file that is not a transcript is refused with the API's own sentence, and no job is made.
  await page.getByLabel('Transcript file').setInputFiles({ name: 'notes.vtt', mimeType: 'text/vtt', buffer: Buffer.from('meeting notes, not a transcript') });
  await page.getByLabel('Title').fill('Not a transcript');
  await page.getByRole('button', { name: 'Submit the source' }).click();
  await page.locator('#status.error').waitFor();
  const refusal = await page.locator('#status').textContent();
  check('a file that is not a transcript is refused with a sentence', (await page.evaluate(() => location.hash)) === '#/sources/new'
    && /^[A-Z][^{}]{10,}\.$/.test(refusal), refusal);
  await page.getByLabel('Title').fill('');
  await page.getByLabel('Transcript file').setInputFiles(env('SOURCE'));
  check('choosing another file clears the last refusal', (await page.locator('#status').textContent()) === '');
  check('choosing a .srt file picks its format', (await page.locator('#source-format').inputValue()) === 'srt');
  await page.getByLabel('Title').fill('Ranger briefing, spring patrols');
  await snap(page, 'upload');
  await page.getByRole('button', { name: 'Submit the source' }).click();
  await page.waitForFunction(() => /^#\/jobs\/[^/]+$/.test(location.hash));
  await page.locator('#job-status').waitFor();
  const job = decodeURIComponent(await page.evaluate(() => location.hash.slice('#/jobs/'.length)));
  check('the uploaded source becomes a job with its title', (await page.locator('h1').textContent()) === 'Ranger briefing, spring patrols', job);
  return job;
}

/** Ask Nova about the job: the answer, the evidence it cites and each tool call's envelope. */
async function askNova(page, job) {
  await page.getByRole('link', { name: 'Ask Nova' }).click();
  await page.getByLabel('Your question').fill(`What is the status of job ${job}?`);
  await page.keyboard.press('Tab');
  await page.keyboard.press('Enter');
  await page.locator('#nova-answer').waitFor({ timeout: 60000 });
  const cited = await page.locator('#nova-evidence code').allTextContents();
  check('Nova answers with the evidence it cites', cited.length > 0 && (await page.locator('#nova-answer .post').textContent()).length > 0, cited.join(' '));
  const envelope = JSON.parse(await page.locator('.tool-call pre').first().textContent());
  check("Nova's tool call shows its exact envelope", envelope.status === 'success' && envelope.error === null
    && cited.every((id) => envelope.evidence.some((e) => e.evidenceId === id)), JSON.stringify(envelope.evidence));
  check("Nova's tool envelopes wait behind Details", !(await page.locator('.tool-call pre').first().isVisible()));
  // The operator's own question: the jobs waiting for them, by name, each linked.
  await page.getByLabel('Your question').fill('What is waiting for me?');
  await page.getByRole('button', { name: 'Ask Nova' }).click();
  await page.waitForFunction(() => document.querySelector('#nova-answer .post')?.textContent.includes('waiting for you'), null, { timeout: 60000 });
  const answer = await page.locator('#nova-answer .post').textContent();
  check('Nova answers "What is waiting for me?" with the waiting jobs by name', answer.includes('“Ranger briefing, spring patrols” waits for your decision')
    && (await page.locator(`#nova-claims a[href="#/jobs/${job}"]`).count()) === 1, answer);
  await snap(page, 'nova');
}

/** An admin edits the configuration file: a bad value is refused naming its field, a good one
 * is the next version. */
async function editSettings(page) {
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.locator('#config-file').waitFor();
  const before = await page.locator('#config-version').textContent();
  const file = await page.locator('#config-file').inputValue();
  await page.locator('#config-file').fill(file.replace(/^mode = .*$/m, 'mode = "sometimes"'));
  await page.getByRole('button', { name: 'Save the configuration' }).click();
  await page.locator('#status.error').waitFor();
  check('a bad setting is refused naming its field', (await page.locator('#status').textContent()).includes('mode')
    && (await page.locator('#config-version').textContent()) === before, await page.locator('#status').textContent());
  await page.locator('#config-file').fill(file.replace(/^call_to_action = .*$/m, 'call_to_action = "Read the whole briefing."'));
  await page.getByRole('button', { name: 'Save the configuration' }).click();
  await page.waitForFunction(() => document.getElementById('status').textContent.startsWith('Saved as version'));
  const version = await page.locator('#config-version').textContent();
  check('an admin saves the settings as the next version', version !== before && /version \d+/.test(version)
    && (await page.locator('.facts').textContent()).includes('Read the whole briefing.'), `${before} -> ${version}`);
  await snap(page, 'settings');
}

/** An operator (not an admin) reads the settings and cannot change them. */
async function readOnlySettings(page) {
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.locator('#read-only').waitFor();
  check('an operator sees the settings read-only', (await page.locator('#config-file').count()) === 0
    && (await page.locator('.facts').textContent()).includes('Read the whole briefing.'));
  const put = await page.evaluate(async () => {
    const session = await (await fetch('/v1/console/session', { credentials: 'same-origin' })).json();
    return (await fetch('/v1/workspace', { method: 'PUT', credentials: 'same-origin',
      headers: { 'content-type': 'application/toml', 'x-csrf-token': session.csrf }, body: 'name = "x"' })).status;
  });
  check("an operator's change to the settings is refused with 403", put === 403, put);
  await snap(page, 'settings-operator');
}

/** The job whose source ingest flagged: every flag in front of the operator, as text. */
async function flagsShown(page, job, suffix, fits, wider) {
  await page.goto(`${base}/#/jobs/${encodeURIComponent(job)}`);
  await page.locator('#flags li.flag').first().waitFor();
  const flags = await page.locator('#flags li.flag').allTextContents();
  check(`the job page lists every flag of the source${suffix}`, flags.length >= 3
    && ['an instruction', 'an encoded payload', 'markup'].every((k) => flags.some((f) => f.startsWith(k))), flags.join(' | '));
  const markup = flags.find((f) => f.startsWith('markup')) ?? '';
  check(`a flag shows its text, cue, time and why${suffix}`, markup.includes('<script>alert(document.cookie)</script>')
    && /cue 7, 0:30–0:35/.test(markup) && markup.includes('Why: '), markup);
  check(`the flagged script is text, never an element${suffix}`, (await page.locator('#flags script').count()) === 0
    && (await page.evaluate(() => document.querySelectorAll('main script').length)) === 0);
  const near = await page.locator('.near-flag').allTextContents();
  check(`a quote said near a flag says so beside it${suffix}`, near.some((n) => /Within 10 seconds of an instruction flagged in the source \(cue 3, 0:10–0:15\)/.test(n)), near.join(' | '));
  check(`the flagged job page fits ${suffix ? 375 : 1440} px without scrolling sideways`, await fits(), await wider());
  await snap(page, `flags${suffix}`, page.locator('#flags'));
}

/** A job whose post is a thread (THREAD_JOB, of workspace B, at its draft gate): a card per
 * post in order, each with its own length; with `edit`, post 2 is rewritten in its own box and
 * the next version keeps the other posts as they were. */
async function threadShown(page, job, suffix, fits, wider, edit) {
  await page.goto(`${base}/#/jobs/${encodeURIComponent(job)}`);
  await page.locator('#draft-post-3').waitFor({ timeout: 60000 });
  const cards = await page.locator('ol.thread article.preview').evaluateAll((a) => a.map((e) => e.getAttribute('aria-label')));
  check(`a thread shows a card per post, in order${suffix}`, cards.length === 3
    && cards.every((c, i) => c.startsWith(`Post ${i + 1} of 3 as it will look on Bluesky`)), cards.join(' | '));
  const lengths = await page.locator('ol.thread article.preview footer').allTextContents();
  check(`each post of a thread shows its own length${suffix}`, lengths.length === 3 && lengths.every((l) => /\d+ of 300 graphemes/.test(l)), lengths.join(' | '));
  check(`the thread page fits ${suffix ? 375 : 1440} px without scrolling sideways`, await fits(), await wider());
  await snap(page, `thread${suffix}`, page.locator('section.draft'));
  if (!edit) return;
  const [first, second, third] = await Promise.all([1, 2, 3].map((n) => page.locator(`#draft-post-${n}`).textContent()));
  const mine = `In Priya's words: ${second}`;
  await page.getByLabel('Your own version of post 2 of 3').fill(mine);
  await page.getByRole('button', { name: 'Save post 2' }).click();
  await page.getByText('Your version of post 2 is saved').waitFor();
  const edited = await page.waitForFunction((text) => document.getElementById('draft-post-2')?.textContent === text, mine, { timeout: 30000 })
    .then(() => true, () => false);
  const now = await Promise.all([1, 2, 3].map((n) => page.locator(`#draft-post-${n}`).textContent()));
  check('post 2 of a thread is edited in its own box, the other posts kept', edited && now[0] === first && now[2] === third, now.join(' | '));
  // Approved and published now: the publication lists each post, each posted, the thread verified.
  await page.getByRole('button', { name: 'Approve the draft' }).click();
  await page.waitForFunction(() => document.getElementById('job-status')?.dataset.status === 'scheduled', null, { timeout: 120000 });
  await page.getByRole('button', { name: 'Publish now' }).click();
  await until(page, 'the verified thread', () => document.getElementById('publication-state')?.textContent.startsWith('Verified'));
  const state = await page.locator('#publication-state').textContent();
  const posts = await page.locator('ol.thread[aria-label^="The thread"] li').allTextContents();
  check('a published thread is verified and lists each post as posted', state.startsWith('Verified: the thread of 3 posts is live on Bluesky')
    && posts.length === 3 && posts.every((p, i) => p.startsWith(`Post ${i + 1} of 3: posted as post_`)) && posts[1].includes(mine), `${state} | ${posts.join(' | ')}`);
  await snap(page, 'thread-published', page.locator('section[aria-labelledby="publication-title"]'));
}

async function signIn(page, credential) {
  await page.getByLabel('Operator credential').waitFor();
  check('the navigation shows only when signed in', await page.locator('#nav').isHidden());
  await page.getByLabel('Operator credential').fill(credential);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Jobs' }).waitFor();
}

const browser = await chromium.launch({ executablePath: env('HARMONIA_CHROMIUM'), args: ['--no-sandbox', '--disable-gpu'] });
let job = null;
try {
  for (const [width, height] of [[1440, 900], [375, 800]]) {
    // The narrow pass also prefers a dark colour scheme, which the page follows.
    const colorScheme = width < 600 ? 'dark' : 'light';
    const context = await browser.newContext({ viewport: { width, height }, colorScheme });
    const page = await context.newPage();
    const external = [];
    const errors = [];
    page.on('request', (r) => { if (!r.url().startsWith(base)) external.push(r.url()); });
    page.on('pageerror', (e) => errors.push(e.message));
    // A refused request logs "Failed to load resource"; each refusal is checked where it is made.
    page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text()); });
    const suffix = width < 600 ? '-375' : '';

    await page.goto(`${base}/`);
    const credential = page.getByLabel('Operator credential');
    await credential.fill(`${env('CREDENTIAL')}0`);
    await page.keyboard.press('Enter');
    await page.locator('#status.error').waitFor();
    check(`a wrong credential is refused${suffix}`, (await page.locator('#status').textContent()).includes('valid credential'));
    await snap(page, `sign-in${suffix}`);

    // Signed in with the keyboard alone.
    await signIn(page, env('CREDENTIAL'));
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'harmonia_session');
    check(`the session cookie is HttpOnly and SameSite=Strict${suffix}`, session?.httpOnly && session?.sameSite === 'Strict', JSON.stringify(session && { httpOnly: session.httpOnly, sameSite: session.sameSite }));
    check(`nothing is kept in localStorage${suffix}`, (await page.evaluate(() => localStorage.length)) === 0);
    if (width === 1440) {
      job = await upload(page);
      await page.getByRole('link', { name: 'Jobs', exact: true }).click();
      // The jobs page opens on what waits for the operator: the new job, once at its gate.
      await page.getByRole('heading', { name: 'Jobs waiting for you' }).waitFor();
      await page.locator(`a[href="#/jobs/${job}"]`).waitFor({ timeout: 60000 });
      const waiting = await page.locator('table.inbox tbody tr').first().textContent();
      check('the jobs page opens on what waits for you, and says for what', waiting.includes('awaits the strategy'), waiting);
    }
    await page.goto(`${base}/#/jobs?status=all`);
    await page.locator(`a[href="#/jobs/${job}"]`).waitFor();
    const row = page.locator(`a[href="#/jobs/${job}"]`);
    check(`the jobs list shows the job${suffix}`, (await row.count()) === 1);
    // The server's answer for the filtered list is held back: meanwhile the last list stays,
    // marked busy, so the operator does not take it for the filtered one.
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    await page.route(`${base}/v1/jobs`, async (route) => { await held; await route.continue(); });
    await page.selectOption('#status-filter', 'draft_rejected');
    await page.locator('main[aria-busy="true"]').waitFor();
    check(`the list on its way is marked busy${suffix}`, (await page.locator(`a[href="#/jobs/${job}"]`).count()) === 1);
    const answered = page.waitForEvent('requestfinished', (r) => r.url() === `${base}/v1/jobs`);
    release();
    await answered;
    await page.unroute(`${base}/v1/jobs`);
    // The filtered list once it is shown: it says which status it holds, or that no job has it.
    await page.waitForFunction(() => {
      const main = document.querySelector('main');
      return !main.hasAttribute('aria-busy') && /with status draft rejected|No job has this status/.test(main.textContent);
    });
    check(`the status filter leaves out other statuses${suffix}`, (await page.locator(`a[href="#/jobs/${job}"]`).count()) === 0);
    await page.selectOption('#status-filter', 'all');
    await page.locator(`a[href="#/jobs/${job}"]`).waitFor();
    // Once the page has settled (the renderer lays the surface out after its elements exist).
    // The page's scroll width is a whole number of pixels and layout is not: an edge that ends
    // a fraction of a pixel past the window (text whose width depends on the random ids on the
    // page) rounds up to one pixel of "scroll" no one can see. Anything wider fails.
    const fits = () => page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth + 1, null, { timeout: 5000 })
      .then(() => true, () => false);
    // What sticks out, when something does: the page's scroll width and the outermost elements
    // that end past the window.
    // The elements ending past the window, shadow roots (the A2UI surface's) included.
    const wider = () => page.evaluate(() => {
      const all = [];
      const walk = (root) => root.querySelectorAll('*').forEach((e) => { all.push(e); if (e.shadowRoot) walk(e.shadowRoot); });
      walk(document.body);
      return `scroll width ${document.documentElement.scrollWidth}px, window ${window.innerWidth}px; `
        + all.filter((e) => e.getBoundingClientRect().right > window.innerWidth)
          .slice(0, 3).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.getBoundingClientRect().right.toFixed(1)}px`).join(', ')
        // Text running out of its box widens the page without any box being wider.
        + '; overflowing: ' + all.filter((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible')
          .slice(0, 3).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} (${e.scrollWidth} in ${e.clientWidth}: ${e.textContent.slice(0, 60)})`).join(', ')
        + `; main: ${document.getElementById('main').getAttribute('aria-busy')}, status ${document.getElementById('job-status')?.dataset.status}`;
    });
    check(`the jobs list fits ${width} px without scrolling sideways`, await fits(), await wider());
    if (width < 600) {
      const long = page.locator(`a[href="#/jobs/${env('LONG_JOB')}"]`);
      check('the jobs list shows a 200-character word and fits 375 px', (await long.textContent()).length === 200 && await fits(), await wider());
    }
    await snap(page, `jobs${suffix}`);

    // The job page: Maya's layout through the official renderer, every entity hydrated.
    await page.locator(`a[href="#/jobs/${job}"]`).click();
    await page.locator('harmonia-entity-view').first().waitFor({ state: 'attached', timeout: 60000 });
    const kinds = await page.evaluate(() => {
      const found = [];
      const walk = (root) => {
        for (const node of root.querySelectorAll('*')) {
          if (node.tagName === 'HARMONIA-ENTITY-VIEW') found.push(node.shadowRoot?.querySelector('article')?.dataset.kind);
          if (node.shadowRoot) walk(node.shadowRoot);
        }
      };
      walk(document);
      return found;
    });
    check(`the job page renders the layout's entities${suffix}`, kinds.includes('job') && kinds.includes('source') && !kinds.includes(undefined), kinds.join(','));
    check(`the job page fits ${width} px without scrolling sideways`, await fits(), await wider());
    await snap(page, `job${suffix}`);

    if (width < 600) {
      const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      check('the page follows prefers-color-scheme: dark', background === 'rgb(21, 23, 27)', background);
      for (const [name, hash, ready] of [['upload', '#/sources/new', '#source-file'], ['nova', '#/nova', '#question'], ['settings', '#/settings', '.facts'],
        ['calendar', '#/calendar', '.calendar.week'], ['calendar-month', '#/calendar?view=month', '.calendar.month'], ['activity', '#/activity', '#activity-records']]) {
        await page.goto(`${base}/${hash}`);
        await page.locator(ready).waitFor();
        check(`the ${name} page fits ${width} px without scrolling sideways`, await fits(), await wider());
        await snap(page, `${name}${suffix}`);
      }
      // The last page of the loop: the activity, its figures whole on a phone.
      const cells = await page.locator('table.days tbody tr').first().locator('td').evaluateAll((tds) => tds.map((td) => td.checkVisibility()));
      check('the activity page shows each day\'s figures at 375 px', cells.length === 3 && cells.every(Boolean), JSON.stringify(cells));
    }
    if (width < 600) {
      await page.goto(`${base}/#/jobs/${env('LONG_JOB')}`);
      await page.locator('harmonia-entity-view').first().waitFor({ state: 'attached', timeout: 60000 });
      check('the job page of a 200-character word fits 375 px', await fits(), await wider());
    }
    await flagsShown(page, env('FLAGGED_JOB'), suffix, fits, wider);
    if (width === 1440) {
      await operatorLoop(page, job);
      await askNova(page, job);
      await workspaceActivity(page);
      await editSettings(page);
      await page.goto(`${base}/#/jobs/${job}`);
      await page.locator('#job-status').waitFor();
    }

    // A state change without the CSRF token, from the signed-in page itself.
    const noCsrf = await page.evaluate(async (id) => (await fetch(`/v1/jobs/${id}/decisions`, {
      method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ subject: 'strategy', decision: 'approve', version: 'x' }),
    })).status, job);
    check(`a POST without the CSRF token is refused with 403${suffix}`, noCsrf === 403, noCsrf);

    // Signing out ends the session on the server: the old cookie reads nothing.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Operator credential').waitFor();
    const replay = await page.request.get(`${base}/v1/jobs`, { headers: { cookie: `harmonia_session=${session.value}` } });
    check(`a signed-out session is refused${suffix}`, replay.status() === 401, replay.status());

    // Workspace B's operator sees nothing of workspace A.
    await signIn(page, env('OTHER_CREDENTIAL'));
    check(`another workspace's jobs list does not show the job${suffix}`, (await page.locator(`a[href="#/jobs/${job}"]`).count()) === 0);
    const foreign = await page.evaluate(async (id) => (await fetch(`/v1/jobs/${id}/view`, { credentials: 'same-origin' })).status, job);
    check(`another workspace's job is not found${suffix}`, foreign === 404, foreign);
    await threadShown(page, env('THREAD_JOB'), suffix, fits, wider, width === 1440);
    if (width === 1440) {
      const asked = await page.evaluate(async (id) => {
        const session = await (await fetch('/v1/console/session', { credentials: 'same-origin' })).json();
        const reply = await fetch('/v1/ask', { method: 'POST', credentials: 'same-origin',
          headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf },
          body: JSON.stringify({ question: `What is the status of job ${id}?` }) });
        return reply.json();
      }, job);
      check("another workspace's Nova finds nothing of the job", !JSON.stringify(asked).includes('Ranger briefing')
        && (asked.evidence_ids ?? []).length === 0, JSON.stringify(asked.answer ?? asked));
      await page.getByRole('button', { name: 'Sign out' }).click();
      await signIn(page, env('OPERATOR_CREDENTIAL'));
      await readOnlySettings(page);
    }

    check(`the pages loaded no external URL${suffix}`, external.length === 0, external.join(' '));
    check(`the pages raised no script error${suffix}`, errors.length === 0, errors.join(' | '));
    await context.close();
  }
} finally {
  await browser.close();
}
