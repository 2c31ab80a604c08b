// Submitting a source: a transcript file (WebVTT, SRT or Harmonia's JSON) and its title.
// The page sends the file's text to the operator API with an idempotency key, so a retried
// submission of the same choice never makes a second job; the new job's page opens next.
import { api, el, errorText, field, say, show } from '/assets/common.js';

const FORMATS = { vtt: 'webvtt', srt: 'srt', json: 'json' };

export function uploadPage(here) {
  const file = el('input', { id: 'source-file', name: 'file', type: 'file', accept: '.vtt,.srt,.json', required: true });
  const format = el('select', { id: 'source-format', name: 'format' },
    el('option', { value: 'webvtt', text: 'WebVTT (.vtt)' }), el('option', { value: 'srt', text: 'SubRip (.srt)' }),
    el('option', { value: 'json', text: 'Harmonia JSON (.json)' }));
  const title = el('input', { id: 'source-title', name: 'title', maxlength: 300, required: true });
  const language = el('input', { id: 'source-language', name: 'language', value: 'en', maxlength: 35 });
  // One key per chosen file and title: resubmitting the same choice answers the same job.
  let key = null;
  const changed = () => { key = null; };
  file.addEventListener('change', () => {
    changed();
    say(''); // A refusal of the last file says nothing about this one.
    const chosen = file.files[0];
    const ext = chosen?.name.split('.').pop().toLowerCase();
    if (FORMATS[ext]) format.value = FORMATS[ext];
    if (chosen && !title.value) title.value = chosen.name.replace(/\.[^.]+$/, '').replaceAll(/[-_]+/g, ' ');
  });
  for (const control of [format, title, language]) control.addEventListener('change', changed);
  const form = el('form', { class: 'upload', 'aria-labelledby': 'upload-title' },
    el('h1', { id: 'upload-title', text: 'Submit a source' }),
    field('Transcript file', file, 'WebVTT, SubRip or Harmonia JSON; instruction-like lines in it are flagged, never followed.'),
    field('Format', format), field('Title', title), field('Language (BCP 47)', language),
    el('button', { class: 'primary', type: 'submit', text: 'Submit the source' }));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const chosen = file.files[0];
    if (!chosen) { say('Choose a transcript file first.', true); file.focus(); return; }
    say(`Reading ${chosen.name}…`);
    const content = await chosen.text();
    key ??= crypto.randomUUID();
    say('Submitting…');
    const body = { format: format.value, content, title: title.value.trim(), language: language.value.trim() || 'en' };
    const reply = await api('POST', '/v1/sources', body, { headers: { 'idempotency-key': key } });
    if (reply.status !== 201) { say(errorText(reply), true); return; }
    say(`Submitted: ${reply.body.job.title}. The pipeline is working on it.`);
    // An operator who has moved on stays where they went; the job is in the jobs list.
    if (here()) location.hash = `#/jobs/${encodeURIComponent(reply.body.job.id)}`;
  });
  show(form);
}
