// recall web app: DOM helpers: elements built from text, never from HTML.

export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v == null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else if (k === 'hidden' || k === 'disabled' || k === 'required' || k === 'open') el[k] = true;
      else if (k === 'value') el.value = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of kids.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}
export const $ = (sel, root = document) => root.querySelector(sel);
export const enc = encodeURIComponent;
export const num = (n) => (typeof n === 'number' && isFinite(n) ? n.toLocaleString('en') : '–');
export const plural = (n, one, many) => `${num(n)} ${n === 1 ? one : many}`;

export function announce(text) {
  const a = $('#announcer');
  a.textContent = '';
  setTimeout(() => { a.textContent = text; }, 30);
}
