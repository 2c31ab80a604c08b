// How the console shows one hydrated entity of a job view: a card in words (its label, title
// and sentences), every value as text (never markup), the raw fields on demand with the ones an
// operator decides on first.
import { platformName as platform } from '/assets/common.js';

const FIRST = {
  job: ['title', 'status', 'pass', 'round', 'created_at', 'updated_at'],
  source: ['title', 'format', 'segments', 'frames'],
  draft: ['platform', 'body', 'claims'],
  review: ['verdict', 'assessments', 'issues'],
  policy_result: ['passed', 'reasons'],
  publication: ['platform', 'body', 'receipt', 'verification'],
};

function value(v, depth) {
  if (v === null || v === undefined) return document.createTextNode('—');
  if (typeof v !== 'object') {
    const text = document.createElement('span');
    text.textContent = String(v);
    return text;
  }
  if (depth > 3) {
    const text = document.createElement('span');
    text.textContent = JSON.stringify(v);
    return text;
  }
  if (Array.isArray(v)) {
    const list = document.createElement('ol');
    for (const item of v) {
      const li = document.createElement('li');
      li.append(value(item, depth + 1));
      list.append(li);
    }
    return list;
  }
  return fields(v, Object.keys(v), depth + 1);
}

function fields(data, keys, depth) {
  const dl = document.createElement('dl');
  for (const key of keys) {
    if (!(key in data)) continue;
    const dt = document.createElement('dt');
    dt.textContent = key.replaceAll('_', ' ');
    const dd = document.createElement('dd');
    dd.append(value(data[key], depth));
    if (key === 'body') dd.className = 'post';
    dl.append(dt, dd);
  }
  return dl;
}

const words = (v) => String(v ?? '').replaceAll('_', ' ');
const day = (iso) => (iso ? new Date(iso).toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' }) : 'an unknown time');
const count = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** An entity in words: its label, its title and a sentence or two about it. */
function described(kind, d) {
  switch (kind) {
    case 'job': return ['Job', d.title, [`Its status: ${words(d.status)}.`, `Started ${day(d.created_at)}; last moved ${day(d.updated_at)}.`]];
    case 'source': return ['Source', d.title, [[d.segments != null && count(d.segments, 'transcript segment'), d.frames != null && count(d.frames, 'described frame')].filter(Boolean).join(' and ') + '.']];
    case 'strategy': return ['Strategy', d.objective ?? 'The approved direction', [d.audience && `For ${d.audience}.`, d.briefs && `${count(d.briefs.length, 'brief')}.`].filter(Boolean)];
    case 'plan': return ['Plan', 'The editorial plan', [d.items && `${count(d.items.length, 'item')} planned.`].filter(Boolean)];
    case 'plan_item': return ['Plan item', `${words(d.format ?? 'post')} on ${platform(d.channel ?? d.platform)}`, [d.window?.start && `Its window opens ${day(d.window.start)}.`].filter(Boolean)];
    case 'draft': return ['Draft', `For ${platform(d.platform)}`, [d.claims && `${count(d.claims.length, 'claim')}, each citing the source.`].filter(Boolean)];
    case 'review': return ["Dara's review", words(d.verdict), [d.issues && (d.issues.length ? `${count(d.issues.length, 'issue')} raised.` : 'No issue raised.')].filter(Boolean)];
    case 'policy_result': {
      const failed = (d.rules ?? []).filter((r) => !r.passed);
      return ['Policy', words(d.outcome ?? (d.passed ? 'passed' : 'blocked')), [d.rules && (failed.length ? `${count(failed.length, 'rule')} broken: ${failed.map((r) => r.reason).join(' ')}` : `All ${d.rules.length} rules pass.`)].filter(Boolean)];
    }
    case 'publication': {
      const outcome = d.verification?.outcome?.outcome;
      return ['Publication', `On ${platform(d.platform)}`, [outcome ? `Read back: ${words(outcome)}.` : d.receipt ? 'Sent; not read back yet.' : 'Being published.']];
    }
    default: return [words(kind), '', []];
  }
}

/** The node for entity `ref` ({kind, id}) with its hydrated `data` (absent: said so): a card
 * with its label, title and sentences, the post's text where it has one, and every field
 * behind "All fields". */
export function entityView(ref, data) {
  const box = document.createElement('article');
  box.className = 'entity';
  box.dataset.kind = ref.kind;
  const title = document.createElement('h4');
  if (data === undefined) {
    title.textContent = words(ref.kind);
    const missing = document.createElement('p');
    missing.className = 'error';
    missing.textContent = 'This record is not in the job view.';
    box.append(title, missing);
    return box;
  }
  const [label, name, sentences] = described(ref.kind, data);
  const tag = document.createElement('span');
  tag.className = 'label';
  tag.textContent = label;
  title.append(tag, document.createTextNode(name ? ` ${name}` : ''));
  box.append(title);
  for (const sentence of sentences) {
    const p = document.createElement('p');
    p.textContent = sentence;
    box.append(p);
  }
  if (typeof data.body === 'string') {
    const post = document.createElement('p');
    post.className = 'post';
    post.textContent = data.body;
    box.append(post);
  }
  const more = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = `All fields (${ref.id})`;
  const first = FIRST[ref.kind] ?? [];
  const rest = Object.keys(data).filter((k) => !first.includes(k));
  more.append(summary, fields(data, [...first, ...rest], 0));
  box.append(more);
  return box;
}
