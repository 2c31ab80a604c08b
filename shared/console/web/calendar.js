// The workspace's calendar: every approved post by the day and time it goes (or went) out, in
// the workspace's time zone, a week or a month at a time, with the posting windows shaded and
// the imported entries (posts scheduled elsewhere, blackout days). A scheduled post can be
// moved to another slot of a posting window, published now or cancelled, from the keyboard too.
// Everything comes from `GET /v1/calendar?from=&to=`; the changes are the job's own routes.
import { api, el, errorText, inFlight, outcome, platformName, say, show } from '/assets/common.js';

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const STATES = {
  scheduled: 'scheduled', window_passed: 'its window passed: publish it now or move it', dispatched: 'being sent',
  cancelled: 'cancelled', publishing: 'being published', publish_unknown: 'sent, its outcome being checked',
  published: 'published, being verified', verified: 'verified live', failed: 'failed to publish',
};
/** The states in which the operator can still move, release or cancel the post. */
const CHANGEABLE = new Set(['scheduled', 'window_passed']);
/** How far ahead the slots a post can move to reach. */
const SLOT_DAYS = 21;
/** How often a shown calendar looks again. */
const REFRESH_MS = 15000;

// Days are `YYYY-MM-DD` strings, counted on UTC dates so no time zone of the browser's shifts them.
const dayMs = 86400000;
const parse = (day) => Date.UTC(+day.slice(0, 4), +day.slice(5, 7) - 1, +day.slice(8, 10));
const format = (ms) => new Date(ms).toISOString().slice(0, 10);
const addDays = (day, n) => format(parse(day) + n * dayMs);
/** Monday is 0. */
const weekday = (day) => (new Date(parse(day)).getUTCDay() + 6) % 7;
const monday = (day) => addDays(day, -weekday(day));
const label = (day, opts = { weekday: 'short', day: 'numeric', month: 'short' }) =>
  new Date(parse(day)).toLocaleDateString([], { ...opts, timeZone: 'UTC' });

/** The minutes since midnight of a wall-clock `HH:MM`. */
const minutes = (hhmm) => +hhmm.slice(0, 2) * 60 + +hhmm.slice(3, 5);

/** The wall clock of `ms` in `tz`: `{day, time}` (`YYYY-MM-DD`, `HH:MM`). */
function wall(ms, tz) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-CA', {
    timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  return { day: `${parts.year}-${parts.month}-${parts.day}`, time: `${parts.hour}:${parts.minute}`, seconds: +parts.second };
}

/** The instant (ms) whose wall clock in `tz` reads `day` `time`. */
function instant(day, time, tz) {
  const wanted = parse(day) + minutes(time) * 60000;
  const offset = (ms) => { const w = wall(ms, tz); return parse(w.day) + minutes(w.time) * 60000 + w.seconds * 1000 - ms; };
  const guess = wanted - offset(wanted);
  return wanted - offset(guess);
}

/** The range a view shows: a week from its Monday, or the whole weeks around a month. */
function range(view, day) {
  if (view === 'week') { const from = monday(day); return { from, to: addDays(from, 7) }; }
  const first = `${day.slice(0, 7)}-01`;
  const next = format(Date.UTC(+day.slice(0, 4), +day.slice(5, 7), 1));
  const to = addDays(monday(addDays(next, -1)), 7);
  return { from: monday(first), to };
}

/** The posting windows open on `day`. */
const windowsOn = (windows, day) => windows.filter((w) => w.days.includes(DAYS[weekday(day)]));

/** Every slot a post can move to: each hour of each posting window, from the next one on, for
 * `SLOT_DAYS` days, as `[day, [times]]`, skipping the post's own time and blackout days. */
function slots(data, today, post) {
  const blackout = new Set(data.entries.filter((e) => e.item.kind === 'blackout').map((e) => e.item.date));
  const now = Date.now();
  const out = [];
  for (let i = 0; i < SLOT_DAYS; i++) {
    const day = addDays(today, i);
    if (blackout.has(day)) continue;
    const times = [];
    for (const w of windowsOn(data.windows, day)) {
      const [start, end] = [minutes(w.start), minutes(w.end)];
      for (let m = start; m < end; m += 60) {
        const time = `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
        const at = instant(day, time, data.time_zone);
        if (at > now + 60000 && at !== Date.parse(post.at) && !times.includes(time)) times.push(time);
      }
    }
    times.sort();
    if (times.length) out.push([day, times]);
  }
  return out;
}

/** The operator's changes to one scheduled post: move it to a slot, publish it now, cancel it. */
function actions(post, data, today, reload) {
  const box = el('div', { class: 'cal-actions' });
  const job = encodeURIComponent(post.job);
  const act = (path, body, done, day) => inFlight(box, async () => {
    say('Recording your change…');
    const reply = await api('POST', `/v1/jobs/${job}/${path}`, body);
    say('');
    if (reply.status >= 300) { outcome(errorText(reply), true); return; }
    outcome(done);
    await reload(day);
  });
  const id = `move-${post.job}`;
  const choices = slots(data, today, post);
  const select = el('select', { id, name: 'slot' }, ...choices.map(([day, times]) => el('optgroup', { label: label(day) },
    ...times.map((time) => el('option', { value: `${day}T${time}`, text: `${label(day)}, ${time}` })))));
  const move = el('form', { class: 'cal-move' },
    el('label', { for: id, text: `Move “${post.title}” to` }), select,
    el('button', { type: 'submit', text: 'Move' }));
  move.addEventListener('submit', (event) => {
    event.preventDefault();
    const [day, time] = select.value.split('T');
    const at = new Date(instant(day, time, data.time_zone)).toISOString().replace('.000Z', 'Z');
    act('reschedule', { at }, `Moved: “${post.title}” goes out ${label(day)} at ${time} (${data.time_zone}).`, day);
  });
  if (!choices.length) move.replaceChildren(el('p', { class: 'muted', text: 'No posting window is open in the next three weeks.' }));
  box.append(move,
    el('button', { type: 'button', text: 'Publish now', onclick: () => act('publish-now', {}, `Released for publishing: “${post.title}”.`) }),
    el('button', { type: 'button', text: 'Cancel the post', onclick: () => act('cancel', {}, `Cancelled: “${post.title}” will not be published.`) }));
  return box;
}

/** One post on its day: the local time, the channel, the job's title and where it stands. */
function postItem(post, data, today, reload, full) {
  const time = post.at_local.slice(11, 16);
  const item = el('li', { class: 'cal-post', 'data-state': post.state, 'data-job': post.job },
    el('p', {}, el('time', { datetime: post.at, title: `${post.at} (UTC)`, text: time }), ' ',
      el('span', { text: `${platformName(post.platform)} · ${post.handle}` })),
    el('p', {}, el('a', { href: `#/jobs/${encodeURIComponent(post.job)}`, text: post.title || 'Untitled job' })),
    el('p', { class: 'muted', text: STATES[post.state] ?? post.state.replaceAll('_', ' ') }));
  if (full && CHANGEABLE.has(post.state)) item.append(actions(post, data, today, reload));
  return item;
}

/** The imported entries of `day`: posts scheduled elsewhere and blackouts. */
function importedOn(data, day) {
  return data.entries.flatMap((e) => {
    if (e.item.kind === 'blackout') return e.item.date === day ? [`No posting: ${e.item.reason ?? 'a blackout day'} (${e.source})`] : [];
    const local = wall(Date.parse(e.item.at), data.time_zone);
    return local.day === day ? [`${local.time} ${platformName(e.item.channel)}: ${e.item.title} (scheduled in ${e.source})`] : [];
  });
}

/** A day of the view, its posting windows shaded on a bar of its 24 hours. */
function dayCell(day, data, today, reload, { full, outside }) {
  const open = windowsOn(data.windows, day);
  const posts = data.posts.filter((p) => p.at_local.slice(0, 10) === day);
  const hours = el('div', { class: 'hours', 'aria-hidden': 'true' }, ...open.map((w) => {
    const [a, b] = [w.start, w.end].map((t) => minutes(t) / 14.4);
    return el('span', { class: 'window', 'data-from': a, 'data-to': b });
  }), ...posts.map((p) => el('span', { class: 'tick', 'data-at': minutes(p.at_local.slice(11, 16)) / 14.4 })));
  const imported = importedOn(data, day);
  const id = `day-${day}`;
  const classes = ['cal-day', open.length && 'open', day === today && 'today', outside && 'outside', (posts.length || imported.length) && 'has-items'];
  return el('section', { class: classes.filter(Boolean).join(' '), 'aria-labelledby': id },
    el('h3', { id }, el('span', { text: label(day) }), day === today ? el('span', { class: 'muted', text: ' · today' }) : null),
    el('p', { class: 'muted windows', text: open.length ? `Posting: ${open.map((w) => `${w.start}–${w.end}`).join(', ')}` : 'No posting window' }),
    full ? hours : null,
    imported.length ? el('ul', { class: 'imported' }, ...imported.map((text) => el('li', { text }))) : null,
    posts.length ? el('ul', { class: 'cal-posts' }, ...posts.map((p) => postItem(p, data, today, reload, full))) : null);
}

/** Place the shaded windows and post ticks (percentages of the day, kept out of inline style
 * attributes, which the Content Security Policy forbids). */
function place(root) {
  for (const w of root.querySelectorAll('.hours .window')) { w.style.left = `${w.dataset.from}%`; w.style.width = `${w.dataset.to - w.dataset.from}%`; }
  for (const t of root.querySelectorAll('.hours .tick')) t.style.left = `${t.dataset.at}%`;
}

/** The shown calendar's next look at the server: one at a time, whatever reloaded it. */
let refresh = null;

export async function calendarPage(here, query) {
  clearTimeout(refresh);
  const params = new URLSearchParams(query ?? '');
  const view = params.get('view') === 'month' ? 'month' : 'week';
  // The workspace's time zone says which day is today, and so which days to ask for.
  const first = await api('GET', '/v1/workspace');
  if (!here()) return;
  if (first.status !== 200) { say(errorText(first), true); return; }
  const tz = first.body.workspace.config.timezone;
  const today = wall(Date.now(), tz).day;
  const asked = /^\d{4}-\d{2}-\d{2}$/.test(params.get('day') ?? '') ? params.get('day') : today;
  const { from, to } = range(view, asked);
  const reply = await api('GET', `/v1/calendar?from=${from}&to=${to}`);
  if (!here()) return;
  if (reply.status !== 200) { say(errorText(reply), true); return; }
  // After a change, the view shows the day the post went to (the same view when it is in it).
  const reload = (day) => {
    if (!here()) return undefined;
    if (day && (day < from || day >= to)) { location.hash = `#/calendar?view=${view}&day=${day}`; return undefined; }
    return calendarPage(here, query);
  };
  const data = reply.body;
  const days = [];
  for (let day = from; day < to; day = addDays(day, 1)) days.push(day);
  const link = (text, v, day, current) => el('a', { href: `#/calendar?view=${v}&day=${day}`, text, 'aria-current': current ? 'page' : false });
  const step = view === 'week' ? 7 : null;
  const prev = step ? addDays(asked, -7) : format(Date.UTC(+asked.slice(0, 4), +asked.slice(5, 7) - 2, 1));
  const next = step ? addDays(asked, 7) : format(Date.UTC(+asked.slice(0, 4), +asked.slice(5, 7), 1));
  const title = view === 'week'
    ? `Week of ${label(from, { day: 'numeric', month: 'long', year: 'numeric' })}`
    : label(asked, { month: 'long', year: 'numeric' });
  const count = data.posts.length;
  const grid = el('div', { class: `calendar ${view}` },
    ...(view === 'month' ? DAYS.map((d) => el('p', { class: 'cal-head', 'aria-hidden': 'true', text: label(addDays('2024-01-01', DAYS.indexOf(d)), { weekday: 'short' }) })) : []),
    ...days.map((day) => dayCell(day, data, today, reload, { full: view === 'week', outside: view === 'month' && day.slice(0, 7) !== asked.slice(0, 7) })));
  place(grid);
  show(el('h1', { text: 'Calendar' }),
    el('nav', { class: 'cal-nav', 'aria-label': 'Calendar views' },
      link('Week', 'week', asked, view === 'week'), link('Month', 'month', asked, view === 'month'),
      link(view === 'week' ? '← Previous week' : '← Previous month', view, prev), link('Today', view, today), link(view === 'week' ? 'Next week →' : 'Next month →', view, next)),
    el('h2', { text: title }),
    el('p', { class: 'muted', id: 'calendar-summary', text: `${count === 1 ? '1 post' : `${count} posts`} in these days. Times are in ${tz}; shaded days and hours are posting windows.${view === 'month' ? ' Open a week to move a post.' : ''}` }),
    grid);
  // The calendar follows the posts as they move, unless the operator is choosing a slot.
  const shown = JSON.stringify(data.posts);
  const again = async () => {
    if (!here()) return;
    const busy = document.querySelector('.cal-actions[data-busy]') || document.activeElement?.closest?.('.cal-move');
    if (document.visibilityState === 'visible' && !busy) {
      const latest = await api('GET', `/v1/calendar?from=${from}&to=${to}`);
      if (!here()) return;
      if (latest.status === 200 && JSON.stringify(latest.body.posts) !== shown) { reload(); return; }
    }
    refresh = setTimeout(again, REFRESH_MS);
  };
  refresh = setTimeout(again, REFRESH_MS);
}
