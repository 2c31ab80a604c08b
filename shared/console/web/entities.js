// How the console shows one hydrated entity of a job view: every value as text (never markup),
// the fields an operator decides on first.
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

/** The node for entity `ref` ({kind, id}) with its hydrated `data` (absent: said so). */
export function entityView(ref, data) {
  const box = document.createElement('article');
  box.className = 'entity';
  box.dataset.kind = ref.kind;
  const title = document.createElement('h4');
  title.textContent = `${ref.kind.replaceAll('_', ' ')} · ${ref.id}`;
  box.append(title);
  if (data === undefined) {
    const missing = document.createElement('p');
    missing.className = 'error';
    missing.textContent = 'This entity is not in the job view.';
    box.append(missing);
    return box;
  }
  const first = FIRST[ref.kind] ?? [];
  const rest = Object.keys(data).filter((k) => !first.includes(k));
  box.append(fields(data, [...first, ...rest], 0));
  return box;
}
