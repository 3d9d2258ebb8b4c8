// recall web app: Markdown to DOM nodes (never HTML); links only for absolute http(s) URLs.

import { announce, h } from './dom.js';

export function safeUrl(raw) {
  if (!/^https?:\/\//i.test(raw)) return null;
  try {
    const u = new URL(raw);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch (_) {
    return null;
  }
}

export function link(href, kids) {
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, kids);
}

export const INLINE = new RegExp([
  /(`+)([^`][\s\S]*?)\1(?!`)/.source, // 1,2 code span
  /\*\*(?=\S)([\s\S]*?\S)\*\*/.source, // 3 strong
  /__(?=\S)([\s\S]*?\S)__(?![A-Za-z0-9])/.source, // 4 strong
  /\*(?=[^\s*])([\s\S]*?[^\s*])\*/.source, // 5 em
  /(?<![A-Za-z0-9_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![A-Za-z0-9_])/.source, // 6 em
  /~~(?=\S)([\s\S]*?\S)~~/.source, // 7 del
  /\[([^\]\n]+)\]\(\s*<?([^\s<>]+?)>?(?:\s+"[^"\n]*")?\s*\)/.source, // 8,9 link
  /(https?:\/\/[^\s<>"'`]*[^\s<>"'`.,;:!?)\]}*_~])/.source, // 10 bare URL
  /(\n)/.source, // 11 line break
].join('|'), 'g');

export function inline(text, parent, depth = 0) {
  if (depth > 6) { parent.append(text); return; }
  const re = new RegExp(INLINE.source, 'g');
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = re.lastIndex;
    if (m[1]) {
      let c = m[2];
      if (/^ .*[^ ] $/s.test(c) || /^ [^ ] $/.test(c)) c = c.slice(1, -1);
      parent.append(h('code', null, c));
    } else if (m[3] != null || m[4] != null) {
      const el = h('strong');
      inline(m[3] ?? m[4], el, depth + 1);
      parent.append(el);
    } else if (m[5] != null || m[6] != null) {
      const el = h('em');
      inline(m[5] ?? m[6], el, depth + 1);
      parent.append(el);
    } else if (m[7] != null) {
      const el = h('del');
      inline(m[7], el, depth + 1);
      parent.append(el);
    } else if (m[8] != null) {
      const href = safeUrl(m[9]);
      if (href) {
        const a = link(href);
        inline(m[8], a, depth + 1);
        parent.append(a);
      } else {
        parent.append(m[0]);
      }
    } else if (m[10] != null) {
      const href = safeUrl(m[10]);
      parent.append(href ? link(href, m[10]) : m[10]);
    } else if (m[11] != null) {
      parent.append(h('br'));
    }
    if (m[0].length === 0) re.lastIndex++;
  }
  if (last < text.length) parent.append(text.slice(last));
}

export const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
export const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
export const HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
export const QUOTE = /^ {0,3}> ?/;
export const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:\s+(.*))?$/;

export function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || ITEM.test(line);
}

export function codeBlock(code, lang) {
  const pre = h('pre', { tabindex: '0', 'aria-label': lang ? `${lang} code` : 'Code' }, h('code', null, code));
  const btn = h('button', { type: 'button', class: 'btn btn-small copy-btn', text: 'Copy' });
  btn.setAttribute('aria-label', lang ? `Copy ${lang} code` : 'Copy code');
  btn.addEventListener('click', () => copyText(code, btn));
  return h('div', { class: 'code-block' },
    h('div', { class: 'code-head' }, h('span', { class: 'code-lang' }, lang || 'code'), btn),
    pre);
}

export async function copyText(text, btn) {
  let ok = false;
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      ok = true;
    }
  } catch (_) { /* fall back */ }
  if (!ok) {
    const ta = h('textarea', { class: 'offscreen', 'aria-hidden': 'true', tabindex: '-1' });
    ta.value = text;
    document.body.append(ta);
    ta.select();
    try { ok = document.execCommand('copy'); } catch (_) { ok = false; }
    ta.remove();
    btn.focus();
  }
  const old = btn.textContent;
  btn.textContent = ok ? 'Copied' : 'Copy failed';
  announce(ok ? 'Copied to the clipboard' : 'Could not copy');
  setTimeout(() => { btn.textContent = old; }, 1500);
}

export function parseBlocks(lines, out, depth) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length) {
        const t = lines[i].trim();
        if (t.startsWith(fence[0].repeat(fence.length)) && /^[`~]+$/.test(t) && t[0] === fence[0]) { i++; break; }
        body.push(lines[i]);
        i++;
      }
      out.append(codeBlock(body.join('\n'), m[2]));
      continue;
    }
    if ((m = HEADING.exec(line))) {
      const el = h('h' + Math.min(6, m[1].length + 1), { class: 'md-h' });
      inline(m[2] || '', el);
      out.append(el);
      i++;
      continue;
    }
    if (HR.test(line)) { out.append(h('hr')); i++; continue; }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && (QUOTE.test(lines[i]) || (lines[i].trim() && !isBlockStart(lines[i])))) {
        inner.push(lines[i].replace(QUOTE, ''));
        i++;
      }
      const bq = h('blockquote');
      if (depth < 8) parseBlocks(inner, bq, depth + 1); else bq.append(inner.join('\n'));
      out.append(bq);
      continue;
    }
    if ((m = ITEM.exec(line))) {
      const ordered = /\d/.test(m[2]);
      const list = h(ordered ? 'ol' : 'ul');
      if (ordered) {
        const start = parseInt(m[2], 10);
        if (start !== 1) list.setAttribute('start', String(start));
      }
      let loose = false;
      while (i < lines.length) {
        const im = ITEM.exec(lines[i]);
        if (!im || /\d/.test(im[2]) !== ordered) break;
        const indent = im[1].length + im[2].length + 1;
        const body = [im[3] || ''];
        i++;
        while (i < lines.length) {
          const l = lines[i];
          if (!l.trim()) {
            // A blank line ends the item unless indented content follows.
            const next = lines[i + 1];
            if (next != null && /^\s{2,}\S/.test(next)) { body.push(''); loose = true; i++; continue; }
            break;
          }
          if (/^\s{2,}/.test(l)) { body.push(l.slice(Math.min(indent, l.length - l.trimStart().length))); i++; continue; }
          if (isBlockStart(l)) break;
          body.push(l); // lazy continuation
          i++;
        }
        const li = h('li');
        if (depth < 8) {
          const frag = document.createDocumentFragment();
          parseBlocks(body, frag, depth + 1);
          if (!loose && frag.childNodes.length === 1 && frag.firstChild.nodeName === 'P') {
            li.append(...frag.firstChild.childNodes);
          } else {
            li.append(frag);
          }
        } else {
          li.append(body.join('\n'));
        }
        list.append(li);
        while (i < lines.length && !lines[i].trim() && lines[i + 1] != null && ITEM.test(lines[i + 1])) i++;
      }
      out.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !(para.length && isBlockStart(lines[i]))) {
      para.push(lines[i].trim() === lines[i] ? lines[i] : lines[i].replace(/^\s+/, ''));
      i++;
      if (i < lines.length && isBlockStart(lines[i])) break;
    }
    const p = h('p');
    inline(para.join('\n'), p);
    out.append(p);
  }
}

/** Markdown to DOM nodes: never HTML. */
export function markdown(src) {
  const frag = document.createDocumentFragment();
  parseBlocks(String(src).replace(/\r\n?/g, '\n').split('\n'), frag, 0);
  return frag;
}
