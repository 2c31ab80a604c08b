// The workspace's settings: the configuration every new job uses, read-only for operators.
// An admin edits the configuration file itself (TOML, as `harmonia workspace init` takes it)
// and saves it as the next version; a refusal names the field at fault and stores nothing.
import { api, el, errorText, field, say, session, show } from '/assets/common.js';

const list = (items) => (items.length ? items.join(', ') : 'none');

function facts(config) {
  const rows = [
    ['Name', config.name], ['Audience', config.audience], ['Voice', config.voice],
    ['Goals', list(config.goals)], ['Call to action', config.call_to_action], ['Mode', config.mode],
    ['Links allowed to', list(config.link_allow_list)], ['Banned phrases', list(config.banned_phrases)],
    ['Time zone', config.timezone],
    ['Cadence', `${config.cadence.posts_per_week} posts a week, at most ${config.cadence.max_posts_per_day} a day`],
  ];
  return el('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })]));
}

function listed(title, items) {
  return el('section', { 'aria-label': title }, el('h2', { text: title }), el('ul', {}, ...items.map((text) => el('li', { text }))));
}

/** The admin's editor: the configuration file, saved as the next version. */
function editor(file, here, reload) {
  const text = el('textarea', { id: 'config-file', name: 'file', rows: 18, spellcheck: 'false', class: 'code' });
  text.value = file;
  const form = el('form', { class: 'edit-config', 'aria-labelledby': 'edit-title' },
    el('h2', { id: 'edit-title', text: file ? 'Edit the configuration' : 'Configure the workspace' }),
    field('Configuration file (TOML)', text, 'Saving stores the next version; jobs already running keep the version they started with.'),
    el('button', { class: 'primary', type: 'submit', text: 'Save the configuration' }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    say('Saving…');
    const reply = await api('PUT', '/v1/workspace', text.value, { type: 'application/toml' });
    if (reply.status !== 200 && reply.status !== 201) { say(errorText(reply), true); if (here()) text.focus(); return; }
    if (here()) await reload();
    const version = reply.body.workspace.version;
    say(reply.body.changed ? `Saved as version ${version}.` : `Nothing changed: the file equals version ${version}.`);
  });
  return form;
}

export async function settingsPage(here) {
  const reload = () => settingsPage(here);
  const admin = session.current.role === 'admin';
  const reply = await api('GET', '/v1/workspace');
  if (!here()) return;
  if (reply.status === 409 && reply.body?.error?.code === 'workspace_not_configured') {
    show(el('h1', { text: 'Workspace settings' }),
      el('p', { class: 'muted', text: admin ? 'This workspace has no configuration yet.' : 'This workspace has no configuration yet: an admin writes it.' }),
      admin ? editor('', here, reload) : null);
    return;
  }
  if (reply.status !== 200) { say(errorText(reply), true); return; }
  const { workspace: current, file } = reply.body;
  const config = current.config;
  show(el('h1', { text: 'Workspace settings' }),
    el('p', { class: 'muted', id: 'config-version', text: `${current.workspace} · version ${current.version}, saved ${new Date(current.created_at).toLocaleString()} by ${current.created_by}` }),
    facts(config),
    listed('Channels', config.channels.map((c) => `${c.platform}: ${c.handle}, published through ${c.connector}`)),
    listed(`Posting windows (${config.timezone})`, config.posting_windows.map((w) => `${w.days.join(', ')}: ${w.start}–${w.end}`)),
    admin ? editor(file, here, reload) : el('p', { class: 'muted', id: 'read-only', text: 'Only an admin of this workspace can change its settings.' }));
}
