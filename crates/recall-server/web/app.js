// recall web app: plain JavaScript, no dependencies, no build step.
//
// Security rules this file keeps:
// - Every piece of server data (titles, messages, errors) reaches the page through
//   textContent / text nodes built by `h` and the markdown renderer below; nothing is ever
//   assigned to innerHTML, and links are made only for absolute http(s) URLs.
// - The API key lives in sessionStorage only (this tab), is sent as `Authorization: Bearer`,
//   and is never logged or put in a URL.
// - Routing is by the URL's hash: `#/`, `#/c/<id>`, `#/c/<id>/m/<seq>`, `#/c/<id>/inspect`.

const KEY_STORE = 'recall.apiKey';
const PAGE = 50; // messages per page read
const MAX_RENDERED = 150; // messages kept in the DOM at once
const LIST_SHOWN = 200; // conversations rendered per "show more"
const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
const FORMATS = ['transcript', 'bracket', 'xml', 'task', 'anthropic', 'openai'];
const PROMPT_SHOWN = 200000; // characters of a rendered prompt shown in the inspector

const state = {
  key: null,
  noAuth: false,
  convs: [],
  convById: new Map(),
  convsMore: false,
  convsShown: LIST_SHOWN,
  convError: null,
  convsLoaded: false,
  search: null, // {q, results, error, loading}
  route: { view: 'list', id: null, seq: null },
  chat: null,
  stream: null,
  insp: { format: '', maxTokens: '', recallTokens: '', trim: '', req: 0, windowRows: [] },
  focusAfterOpen: null,
};
const ui = {};

// ---------------------------------------------------------------- DOM helpers

function h(tag, props, ...kids) {
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
const $ = (sel, root = document) => root.querySelector(sel);
const enc = encodeURIComponent;
const num = (n) => (typeof n === 'number' && isFinite(n) ? n.toLocaleString('en') : '–');
const plural = (n, one, many) => `${num(n)} ${n === 1 ? one : many}`;

function announce(text) {
  const a = $('#announcer');
  a.textContent = '';
  setTimeout(() => { a.textContent = text; }, 30);
}

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

function authHeaders(json) {
  const hd = {};
  if (state.key) hd.Authorization = 'Bearer ' + state.key;
  if (json) hd['Content-Type'] = 'application/json';
  return hd;
}

async function errorOf(res) {
  let type = 'http_' + res.status;
  let message = `${res.status} ${res.statusText || 'error'}`;
  try {
    const j = await res.json();
    if (j && j.error) {
      type = String(j.error.type || type);
      message = String(j.error.message || message);
    }
  } catch (_) { /* not JSON */ }
  return new ApiError(res.status, type, message);
}

async function api(method, path, body, opts = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: authHeaders(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: opts.signal,
      cache: 'no-store',
    });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'Could not reach the server. Check that recall is running.');
  }
  if (res.status === 204) return null;
  if (!res.ok) {
    const err = await errorOf(res);
    if (err.status === 401 && !opts.quiet401) onUnauthorized(err);
    throw err;
  }
  return res.json();
}

const convUrl = (id) => `/v1/conversations/${enc(id)}`;

/** Messages after `after`, at most `want`, none above `maxSeq`, following `next_after`. */
async function fetchRange(id, after, maxSeq, want) {
  const out = [];
  let a = after;
  while (out.length < want) {
    const limit = Math.max(1, Math.min(1000, want - out.length));
    const page = await api('GET', `${convUrl(id)}/messages?after=${a}&limit=${limit}`);
    let over = false;
    for (const m of page.data) {
      if (m.seq > maxSeq) { over = true; break; }
      out.push(m);
    }
    if (over || page.next_after == null || !page.data.length) break;
    a = page.next_after;
  }
  return out;
}

// ---------------------------------------------------------------- markdown (DOM only)

function safeUrl(raw) {
  if (!/^https?:\/\//i.test(raw)) return null;
  try {
    const u = new URL(raw);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch (_) {
    return null;
  }
}

function link(href, kids) {
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer' }, kids);
}

const INLINE = new RegExp([
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

function inline(text, parent, depth = 0) {
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

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(?:\s+(.*))?$/;

function isBlockStart(line) {
  return FENCE.test(line) || HEADING.test(line) || HR.test(line) || QUOTE.test(line) || ITEM.test(line);
}

function codeBlock(code, lang) {
  const pre = h('pre', { tabindex: '0', 'aria-label': lang ? `${lang} code` : 'Code' }, h('code', null, code));
  const btn = h('button', { type: 'button', class: 'btn btn-small copy-btn', text: 'Copy' });
  btn.setAttribute('aria-label', lang ? `Copy ${lang} code` : 'Copy code');
  btn.addEventListener('click', () => copyText(code, btn));
  return h('div', { class: 'code-block' },
    h('div', { class: 'code-head' }, h('span', { class: 'code-lang' }, lang || 'code'), btn),
    pre);
}

async function copyText(text, btn) {
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

function parseBlocks(lines, out, depth) {
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
function markdown(src) {
  const frag = document.createDocumentFragment();
  parseBlocks(String(src).replace(/\r\n?/g, '\n').split('\n'), frag, 0);
  return frag;
}

// ---------------------------------------------------------------- message content

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((b) => b && (b.type === 'text' || b.type === 'input_text' || b.type === 'output_text'))
    .map((b) => String(b.text ?? '')).join('\n');
}

function jsonText(v) {
  try { return JSON.stringify(v, null, 2) ?? ''; } catch (_) { return String(v); }
}

function toolResultText(c) {
  if (c == null) return '(no content)';
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    return c.map((b) => (b && b.type === 'text' ? String(b.text ?? '') : b && b.type === 'image' ? '[image]' : jsonText(b))).join('\n');
  }
  return jsonText(c);
}

function details(summaryText, body, cls) {
  return h('details', { class: 'tool ' + (cls || '') },
    h('summary', null, summaryText),
    h('pre', { tabindex: '0', class: 'tool-pre' }, body));
}

function renderContent(content) {
  const frag = document.createDocumentFragment();
  if (typeof content === 'string') {
    frag.append(markdown(content));
    return frag;
  }
  if (!Array.isArray(content)) {
    frag.append(h('p', { class: 'muted' }, '(no content)'));
    return frag;
  }
  for (const b of content) {
    if (!b || typeof b !== 'object') continue;
    switch (b.type) {
      case 'text': case 'input_text': case 'output_text':
        frag.append(markdown(String(b.text ?? '')));
        break;
      case 'tool_use':
        frag.append(details(`Tool call: ${String(b.name ?? 'tool')}`, jsonText(b.input), 'tool-use'));
        break;
      case 'tool_result':
        frag.append(details(b.is_error ? 'Tool result (error)' : 'Tool result', toolResultText(b.content), b.is_error ? 'tool-error' : 'tool-result'));
        break;
      case 'thinking':
        frag.append(details('Thinking', String(b.thinking ?? ''), 'thinking'));
        break;
      case 'redacted_thinking':
        frag.append(h('p', { class: 'muted' }, '[thinking redacted]'));
        break;
      case 'image':
        frag.append(h('p', { class: 'muted' }, '[image]'));
        break;
      case 'document':
        frag.append(h('p', { class: 'muted' }, '[document]'));
        break;
      default:
        frag.append(details(`${String(b.type ?? 'block')} block`, jsonText(b), 'other'));
    }
  }
  return frag;
}

const ROLE_LABEL = { user: 'You', assistant: 'Assistant', system: 'System', tool: 'Tool', developer: 'Developer' };

function hasToolResult(content) {
  return Array.isArray(content) && content.some((b) => b && b.type === 'tool_result');
}

// ---------------------------------------------------------------- boot and sign-in

async function probe(key) {
  try {
    const hd = key ? { Authorization: 'Bearer ' + key } : {};
    const res = await fetch('/v1/conversations?limit=1', { headers: hd, cache: 'no-store' });
    if (res.ok) return { ok: true, status: res.status };
    const err = await errorOf(res);
    return { ok: false, status: res.status, message: err.message };
  } catch (_) {
    return { ok: false, status: 0, message: 'Could not reach the server.' };
  }
}

async function boot() {
  wireGlobal();
  const stored = sessionStorage.getItem(KEY_STORE);
  if (stored) {
    const p = await probe(stored);
    if (p.ok) { state.key = stored; startApp(); return; }
    if (p.status !== 401) { showFatal(p.message); return; }
    sessionStorage.removeItem(KEY_STORE);
  }
  const p = await probe(null);
  if (p.ok) { state.noAuth = true; startApp(); return; }
  if (p.status === 401) { showSignIn(stored ? 'Your saved API key is no longer accepted. Sign in again.' : ''); return; }
  showFatal(p.message);
}

function showFatal(message) {
  document.body.className = 'route-fatal';
  $('#app').replaceChildren(h('main', { id: 'main', class: 'center-screen', tabindex: '-1' },
    h('div', { class: 'card' },
      h('h1', null, 'recall is not reachable'),
      h('p', { role: 'alert' }, message || 'The server did not answer.'),
      h('button', { type: 'button', class: 'btn btn-primary', onclick: () => location.reload() }, 'Try again'))));
}

function showSignIn(note) {
  document.body.className = 'route-signin';
  $('#signout').hidden = true;
  $('#mode-note').textContent = '';
  const input = h('input', {
    id: 'signin-key', name: 'key', type: 'password', autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'off', required: true, 'aria-describedby': 'signin-help signin-error',
  });
  const error = h('p', { id: 'signin-error', class: 'form-error', role: 'alert' }, note || '');
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', id: 'signin-submit' }, 'Sign in');
  const form = h('form', { id: 'signin-form', class: 'signin-form', novalidate: true },
    h('label', { for: 'signin-key' }, 'API key'),
    input,
    h('p', { id: 'signin-help', class: 'help' },
      'Kept in this browser tab only (session storage) and sent with each request. Create one with ',
      h('code', null, 'recall keys create'), '.'),
    error,
    submit);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) {
      error.textContent = 'Enter an API key.';
      input.setAttribute('aria-invalid', 'true');
      input.focus();
      return;
    }
    submit.disabled = true;
    error.textContent = '';
    const p = await probe(key);
    submit.disabled = false;
    if (p.ok) {
      state.key = key;
      sessionStorage.setItem(KEY_STORE, key);
      input.value = '';
      startApp();
      return;
    }
    input.setAttribute('aria-invalid', 'true');
    error.textContent = p.status === 401
      ? `That API key was not accepted (${p.message}).`
      : `Sign-in failed: ${p.message}`;
    input.focus();
    input.select();
  });
  $('#app').replaceChildren(h('main', { id: 'main', class: 'center-screen', tabindex: '-1' },
    h('div', { class: 'card signin-card' },
      h('h1', null, 'Sign in to recall'),
      h('p', { class: 'lead' }, 'Your conversations, their branches and the context each next request carries.'),
      form)));
  input.focus();
}

function onUnauthorized() {
  if (state.noAuth || !state.key) return;
  signOut('Your API key was refused by the server. Sign in again.');
}

function signOut(note) {
  if (state.stream) state.stream.controller.abort();
  sessionStorage.removeItem(KEY_STORE);
  state.key = null;
  state.chat = null;
  state.convs = [];
  state.convById.clear();
  state.convsLoaded = false;
  state.search = null;
  if (location.hash) history.replaceState(null, '', location.pathname + location.search);
  showSignIn(note || '');
}

// ---------------------------------------------------------------- shell

function wireGlobal() {
  $('#signout').addEventListener('click', () => signOut(''));
  $('#skip-link').addEventListener('click', () => {
    const target = $('#main');
    if (target) target.focus();
  });
  window.addEventListener('hashchange', () => { if (state.key || state.noAuth) route(true); });
  window.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.stream && !$('#dialog').open) {
      e.preventDefault();
      stopStream();
    }
  });
  window.addEventListener('resize', () => { if (state.chat) updateReserve(); });
}

function startApp() {
  $('#signout').hidden = state.noAuth;
  $('#mode-note').textContent = state.noAuth ? 'No sign-in: this server runs without API keys (loopback only)' : '';
  buildShell();
  loadConversations();
  route(false);
}

function buildShell() {
  const searchInput = h('input', {
    id: 'search-input', type: 'search', name: 'q', autocomplete: 'off',
    placeholder: 'Words in any message', 'aria-describedby': 'search-status',
  });
  const searchForm = h('form', { class: 'search', role: 'search', novalidate: true },
    h('label', { for: 'search-input', class: 'search-label' }, 'Search messages'),
    h('div', { class: 'search-row' }, searchInput,
      h('button', { type: 'submit', class: 'btn' }, 'Search')));
  let searchTimer = 0;
  searchForm.addEventListener('submit', (e) => { e.preventDefault(); clearTimeout(searchTimer); runSearch(searchInput.value); });
  searchInput.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => runSearch(searchInput.value), 350);
  });
  searchInput.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && searchInput.value) { e.stopPropagation(); searchInput.value = ''; runSearch(''); }
  });
  ui.searchStatus = h('p', { id: 'search-status', class: 'search-status', 'aria-live': 'polite' });
  ui.searchResults = h('div', { id: 'search-results', class: 'search-results' });
  ui.convList = h('ul', { id: 'conv-list', class: 'conv-list' });
  ui.convStatus = h('p', { class: 'conv-status', 'aria-live': 'polite' });
  ui.convMore = h('button', { type: 'button', class: 'btn btn-quiet conv-more', hidden: true }, 'Show more conversations');
  ui.convMore.addEventListener('click', () => { state.convsShown += LIST_SHOWN; renderConvList(); });
  ui.sidebar = h('nav', { id: 'sidebar', class: 'sidebar', 'aria-label': 'Conversations' },
    h('div', { class: 'side-head' },
      h('h2', { class: 'side-title' }, 'Conversations'),
      h('button', { type: 'button', class: 'btn btn-primary', id: 'new-conv', 'aria-label': 'New conversation', onclick: createConversation }, '+ New')),
    searchForm, ui.searchStatus, ui.searchResults,
    h('div', { class: 'conv-scroll' }, ui.convStatus, ui.convList, ui.convMore));
  // One <main> holds every screen (at 360 px only one of them shows), each a labelled region.
  ui.main = h('section', { id: 'main', class: 'main', tabindex: '-1', 'aria-label': 'Conversation' });
  ui.insp = h('section', { id: 'inspector', class: 'inspector', 'aria-labelledby': 'insp-title', hidden: true });
  $('#app').replaceChildren(h('main', { class: 'shell' },
    h('h1', { class: 'sr-only' }, 'recall'), ui.sidebar, ui.main, ui.insp));
}

// ---------------------------------------------------------------- routing

function parseHash() {
  let hsh = location.hash.replace(/^#/, '');
  try { hsh = decodeURIComponent(hsh); } catch (_) { /* kept as it is */ }
  const m = /^\/c\/([^/]+)(?:\/(inspect|m\/(\d{1,15})))?\/?$/.exec(hsh);
  if (m && ID_RE.test(m[1])) {
    if (m[2] === 'inspect') return { view: 'inspect', id: m[1], seq: null };
    return { view: 'chat', id: m[1], seq: m[3] ? parseInt(m[3], 10) : null };
  }
  return { view: 'list', id: null, seq: null };
}

function route(byUser) {
  const r = parseHash();
  const prev = state.route;
  state.route = r;
  document.body.className = 'route-' + r.view;
  if (r.view === 'list') {
    if (state.stream) stopStream();
    state.chat = null;
    renderPlaceholder();
    hideInspector();
    renderConvList();
    if (byUser && prev.id) {
      const back = ui.convList.querySelector(`a.conv-link[data-id="${prev.id}"]`);
      if (back && window.matchMedia('(max-width: 760px)').matches) back.focus();
    }
    return;
  }
  const sameChat = state.chat && state.chat.id === r.id;
  if (!sameChat) {
    if (state.stream) stopStream();
    openConversation(r.id, { seq: r.seq, focus: byUser });
  } else if (r.seq != null && r.seq !== prev.seq) {
    scrollToSeq(r.seq, true);
  }
  if (r.view === 'inspect') showInspector(); else hideInspector();
  updateInspectLink();
  renderConvList();
  if (byUser && sameChat && r.view === 'inspect') {
    const t = $('#insp-title');
    if (t) t.focus();
  } else if (byUser && sameChat && prev.view === 'inspect' && r.view === 'chat') {
    const t = $('#chat-title');
    if (t) t.focus();
  }
}

function go(hash) {
  if (location.hash === hash) route(true);
  else location.hash = hash;
}

// ---------------------------------------------------------------- conversation list

async function loadConversations() {
  const all = [];
  let after = null;
  let pages = 0;
  state.convError = null;
  try {
    do {
      const q = new URLSearchParams({ limit: '500' });
      if (after) q.set('after', after);
      const page = await api('GET', '/v1/conversations?' + q.toString());
      all.push(...page.data);
      after = page.next_after;
      pages++;
    } while (after && pages < 20);
    state.convsMore = !!after;
  } catch (e) {
    if (e.status === 401) return;
    state.convError = e.message;
  }
  all.sort((a, b) => (b.updated_at > a.updated_at ? 1 : b.updated_at < a.updated_at ? -1 : (b.created_at > a.created_at ? 1 : -1)));
  state.convs = all;
  state.convById = new Map(all.map((c) => [c.id, c]));
  state.convsLoaded = true;
  renderConvList();
}

function upsertConv(c) {
  if (!c || !c.id) return;
  const old = state.convById.get(c.id);
  const merged = Object.assign({}, old || {}, c);
  state.convById.set(c.id, merged);
  state.convs = state.convs.filter((x) => x.id !== c.id);
  state.convs.unshift(merged);
  renderConvList();
}

function removeConv(id) {
  state.convById.delete(id);
  state.convs = state.convs.filter((x) => x.id !== id);
  renderConvList();
}

function titleOf(c) {
  return c && c.title ? c.title : 'Untitled conversation';
}

function renderConvList() {
  if (!ui.convList) return;
  const cur = state.route.id;
  if (!state.convsLoaded) {
    ui.convStatus.textContent = 'Loading conversations…';
    return;
  }
  ui.convStatus.textContent = state.convError
    ? `Could not load the conversations: ${state.convError}`
    : state.convs.length ? '' : 'No conversations yet. Start one with “New conversation”.';
  const shown = state.convs.slice(0, state.convsShown);
  ui.convList.replaceChildren(...shown.map((c) => {
    const a = h('a', { class: 'conv-link', href: '#/c/' + c.id, 'data-id': c.id, 'aria-current': c.id === cur ? 'page' : null },
      h('span', { class: 'conv-title' }, titleOf(c)),
      h('span', { class: 'conv-meta' },
        `${plural(c.message_count, 'message', 'messages')} · ${plural(c.tokens, 'token', 'tokens')}`,
        c.forked_from ? ' · branch' : ''));
    return h('li', null, a);
  }));
  ui.convMore.hidden = state.convs.length <= state.convsShown;
  if (state.convsMore && state.convs.length <= state.convsShown) {
    ui.convStatus.textContent = `Showing the ${num(state.convs.length)} conversations read so far.`;
  }
}

async function createConversation() {
  try {
    const c = await api('POST', '/v1/conversations', {});
    upsertConv(c);
    state.focusAfterOpen = { composer: true };
    go('#/c/' + c.id);
    announce('New conversation created');
  } catch (e) {
    if (e.status !== 401) alertDialog('Could not create a conversation', e.message);
  }
}

// ---------------------------------------------------------------- search

let searchSeq = 0;
async function runSearch(raw) {
  const q = raw.trim();
  const mine = ++searchSeq;
  if (!q) {
    state.search = null;
    ui.searchStatus.textContent = '';
    ui.searchResults.replaceChildren();
    return;
  }
  ui.searchStatus.textContent = 'Searching…';
  try {
    const res = await api('GET', '/v1/search?' + new URLSearchParams({ q, limit: '20' }).toString());
    if (mine !== searchSeq) return;
    state.search = { q, results: res.data };
    renderSearch();
  } catch (e) {
    if (mine !== searchSeq) return;
    ui.searchStatus.textContent = `Search failed: ${e.message}`;
    ui.searchResults.replaceChildren();
  }
}

function snippet(text) {
  const frag = document.createDocumentFragment();
  String(text).split('**').forEach((part, i) => {
    if (!part) return;
    frag.append(i % 2 ? h('mark', null, part) : part);
  });
  return frag;
}

function renderSearch() {
  const s = state.search;
  if (!s) return;
  ui.searchStatus.textContent = s.results.length
    ? `${plural(s.results.length, 'message', 'messages')} found for “${s.q}”`
    : `Nothing found for “${s.q}”`;
  ui.searchResults.replaceChildren(h('ul', { class: 'hit-list', 'aria-label': 'Search results' },
    s.results.map((hit) => {
      const c = state.convById.get(hit.conversation_id);
      return h('li', null, h('a', {
        class: 'hit-link', href: `#/c/${hit.conversation_id}/m/${hit.seq}`, 'data-id': hit.conversation_id,
      },
      h('span', { class: 'hit-title' }, c ? titleOf(c) : `Conversation ${String(hit.conversation_id).slice(0, 8)}`),
      h('span', { class: 'hit-meta' }, `#${hit.seq} · ${ROLE_LABEL[hit.role] || hit.role}`),
      h('span', { class: 'hit-snippet' }, snippet(hit.snippet))));
    })));
}

// ---------------------------------------------------------------- chat view

function renderPlaceholder() {
  ui.main.replaceChildren(h('div', { class: 'placeholder' },
    h('h1', { id: 'main-title', tabindex: '-1' }, 'No conversation open'),
    h('p', null, 'Pick a conversation from the list, search your messages, or start a new one.'),
    h('button', { type: 'button', class: 'btn btn-primary', onclick: createConversation }, 'Start a new conversation')));
}

function newChat(id) {
  return {
    id, conv: null, items: [], atStart: false, atEnd: false, loadingOlder: false, loadingNewer: false,
    alts: new Map(), altCands: null, altLoading: new Set(), turnError: null, editing: null, pinned: true,
  };
}

function renderChatShell(chat) {
  const back = h('a', { class: 'btn btn-quiet back-btn', href: '#/' }, '‹ Conversations');
  ui.chatTitle = h('h1', { id: 'chat-title', class: 'chat-title', tabindex: '-1' }, 'Loading…');
  ui.chatMeta = h('p', { class: 'chat-meta' });
  ui.inspectLink = h('a', { class: 'btn', id: 'inspect-link', href: `#/c/${chat.id}/inspect` }, 'Inspect');
  ui.chatActions = h('div', { class: 'chat-actions', role: 'group', 'aria-label': 'Conversation actions' },
    ui.inspectLink,
    h('button', { type: 'button', class: 'btn', id: 'rename-btn', onclick: renameConversation }, 'Rename'),
    h('button', { type: 'button', class: 'btn', id: 'clear-btn', onclick: clearConversation }, 'Clear'),
    h('button', { type: 'button', class: 'btn btn-danger', id: 'delete-btn', onclick: deleteConversation }, 'Delete'));
  ui.olderStatus = h('p', { class: 'older-status', 'aria-live': 'polite' });
  ui.items = h('div', { class: 'items' });
  ui.notice = h('div', { class: 'turn-notice' });
  ui.spacer = h('div', { class: 'tail-spacer', 'aria-hidden': 'true' });
  ui.messages = h('section', { id: 'messages', class: 'messages', tabindex: '0', 'aria-label': 'Messages' },
    ui.olderStatus, ui.items, ui.notice, ui.spacer);
  ui.messages.addEventListener('scroll', onMessagesScroll, { passive: true });
  ui.input = h('textarea', {
    id: 'composer-input', rows: '1', placeholder: 'Write a message…', 'aria-describedby': 'composer-hint',
    autocomplete: 'off',
  });
  ui.input.addEventListener('keydown', onComposerKey);
  ui.input.addEventListener('input', autosize);
  ui.sendBtn = h('button', { type: 'submit', class: 'btn btn-primary', id: 'send-btn' }, 'Send');
  ui.stopBtn = h('button', { type: 'button', class: 'btn btn-danger', id: 'stop-btn', hidden: true, onclick: stopStream }, 'Stop');
  const composer = h('form', { class: 'composer', id: 'composer', novalidate: true },
    h('label', { for: 'composer-input', class: 'sr-only' }, 'Message'),
    h('div', { class: 'composer-row' }, ui.input, ui.sendBtn, ui.stopBtn),
    h('p', { id: 'composer-hint', class: 'hint' }, 'Enter sends · Shift+Enter adds a line · Esc stops a reply'));
  composer.addEventListener('submit', (e) => { e.preventDefault(); sendMessage(); });
  ui.composer = composer;
  ui.main.replaceChildren(h('div', { class: 'chat' },
    h('div', { class: 'chat-head' },
      h('div', { class: 'chat-head-row' }, back, h('div', { class: 'chat-heading' }, ui.chatTitle, ui.chatMeta)),
      ui.chatActions),
    ui.messages,
    composer));
}

function updateChatHeader() {
  const chat = state.chat;
  if (!chat || !chat.conv) return;
  const c = chat.conv;
  ui.chatTitle.textContent = titleOf(c);
  document.title = `${titleOf(c)} · recall`;
  const parts = [plural(c.message_count, 'message', 'messages'), plural(c.tokens, 'token', 'tokens')];
  ui.chatMeta.replaceChildren(parts.join(' · '));
  if (c.forked_from && ID_RE.test(c.forked_from.conversation_id)) {
    ui.chatMeta.append(' · branched at #' + c.forked_from.seq + ' from ',
      h('a', { href: `#/c/${c.forked_from.conversation_id}/m/${c.forked_from.seq}` }, 'its parent'));
  }
}

function updateInspectLink() {
  if (!ui.inspectLink || !state.chat) return;
  const open = state.route.view === 'inspect';
  ui.inspectLink.replaceChildren(open ? 'Close' : 'Inspect', h('span', { class: 'wide-only' }, open ? ' inspector' : ' context'));
  ui.inspectLink.setAttribute('href', open ? `#/c/${state.chat.id}` : `#/c/${state.chat.id}/inspect`);
}

async function openConversation(id, opts = {}) {
  const chat = newChat(id);
  state.chat = chat;
  renderChatShell(chat);
  updateInspectLink();
  const focusReq = state.focusAfterOpen;
  state.focusAfterOpen = null;
  let conv;
  try {
    conv = await api('GET', convUrl(id));
  } catch (e) {
    if (state.chat !== chat || e.status === 401) return;
    renderOpenError(e);
    return;
  }
  if (state.chat !== chat) return;
  chat.conv = conv;
  state.convById.set(conv.id, Object.assign({}, state.convById.get(conv.id) || {}, conv));
  updateChatHeader();
  const seq = opts.seq != null && opts.seq <= conv.last_seq ? opts.seq : null;
  const after = seq != null ? Math.max(0, seq - Math.floor(PAGE / 2)) : Math.max(0, conv.last_seq - PAGE);
  let msgs;
  try {
    msgs = await fetchRange(id, after, Infinity, PAGE);
  } catch (e) {
    if (state.chat !== chat || e.status === 401) return;
    renderOpenError(e);
    return;
  }
  if (state.chat !== chat) return;
  chat.atStart = after === 0 || msgs.length === 0 || msgs[0].seq > after + 1;
  chat.atEnd = msgs.length === 0 || msgs[msgs.length - 1].seq >= conv.last_seq;
  setItems(msgs);
  if (seq != null) scrollToSeq(seq, true); else scrollToBottom();
  performance.mark('recall:conversation-shown');
  if (state.route.view === 'inspect') loadInspector();
  if (focusReq && focusReq.composer) ui.input.focus();
  else if (focusReq && focusReq.branchNav) {
    const el = findItemEl(focusReq.seq);
    const btn = el && el.querySelector(`[data-testid="branch-${focusReq.branchNav}"]`);
    if (btn) btn.focus();
    else chat.focusBranch = focusReq;
  } else if (opts.focus) ui.chatTitle.focus();
  loadBranchInfo(chat);
  requestAnimationFrame(() => fillViewport());
}

function renderOpenError(e) {
  const notFound = e.status === 404;
  document.title = 'Not found · recall';
  ui.main.replaceChildren(h('div', { class: 'placeholder' },
    h('a', { class: 'btn btn-quiet back-btn', href: '#/' }, '‹ Conversations'),
    h('h1', { id: 'chat-title', tabindex: '-1' }, notFound ? 'Conversation not found' : 'Could not open the conversation'),
    h('div', { class: 'error-box', role: 'alert', 'data-testid': 'open-error' },
      h('p', null, notFound
        ? 'There is no conversation with this id that your API key can read.'
        : e.message),
      notFound ? h('p', { class: 'muted' }, e.message) : null),
    h('a', { class: 'btn', href: '#/' }, 'Back to the conversations')));
  ui.chatTitle = null;
  ui.messages = null;
  hideInspector();
}

function findItemEl(seq) {
  return ui.items ? ui.items.querySelector(`article.msg[data-seq="${Number(seq)}"]`) : null;
}

function setItems(msgs) {
  const chat = state.chat;
  chat.items = msgs.slice(-MAX_RENDERED);
  if (msgs.length > MAX_RENDERED) chat.atStart = false;
  ui.items.replaceChildren(...chat.items.map((m) => (m.el = renderMessage(m))));
  for (const m of chat.items) applyAlt(m.seq);
  renderNotice();
  updateOlderStatus();
}

function updateOlderStatus() {
  const chat = state.chat;
  if (!chat || !ui.olderStatus) return;
  if (chat.loadingOlder) ui.olderStatus.textContent = 'Loading older messages…';
  else if (chat.atStart && chat.items.length) ui.olderStatus.textContent = 'Beginning of the conversation';
  else if (!chat.items.length && chat.conv) ui.olderStatus.textContent = '';
  else ui.olderStatus.textContent = '';
  ui.olderStatus.hidden = !ui.olderStatus.textContent;
}

function renderMessage(m) {
  const msg = m.message || {};
  const role = typeof msg.role === 'string' ? msg.role : 'unknown';
  const roleCls = /^[a-z]+$/.test(role) ? role : 'unknown';
  const art = h('article', { class: `msg msg-${roleCls}`, 'data-seq': m.seq ?? null, 'data-status': m.status || null });
  const label = ROLE_LABEL[role] || role;
  art.setAttribute('aria-label', m.seq != null ? `${label}, message ${m.seq}` : label);
  const head = h('div', { class: 'msg-head' },
    h('span', { class: 'msg-role' }, label),
    m.seq != null ? h('span', { class: 'msg-seq', title: m.created_at ? new Date(m.created_at).toLocaleString() : null }, '#' + m.seq) : null,
    m.tokens != null ? h('span', { class: 'msg-tokens' }, plural(m.tokens, 'token', 'tokens')) : null);
  if (m.status === 'partial') {
    head.append(h('span', { class: 'badge badge-partial', 'data-testid': 'partial-badge' }, 'stopped — partial'));
  } else if (m.status === 'redacted') {
    head.append(h('span', { class: 'badge' }, 'redacted'));
  }
  head.append(h('span', { class: 'branch-slot' }));
  const actions = h('span', { class: 'msg-actions' });
  if (m.seq != null && m.status !== 'redacted') {
    if (role === 'user' && !hasToolResult(msg.content)) {
      actions.append(h('button', {
        type: 'button', class: 'btn btn-small msg-edit', 'aria-label': `Edit message ${m.seq}`,
        onclick: () => openEditor(m),
      }, 'Edit'));
    } else if (role === 'assistant') {
      actions.append(h('button', {
        type: 'button', class: 'btn btn-small msg-retry', 'aria-label': `Retry reply ${m.seq}`,
        onclick: () => retryReply(m.seq),
      }, 'Retry'));
    }
  }
  head.append(actions);
  const body = h('div', { class: 'msg-body' });
  body.append(renderContent(msg.content));
  art.append(head, body);
  return art;
}

// -------- paging and scrolling

function anchorOf() {
  const box = ui.messages;
  const top = box.scrollTop;
  for (const m of state.chat.items) {
    if (m.el && m.el.offsetTop + m.el.offsetHeight > top) return { el: m.el, off: m.el.offsetTop - top };
  }
  return null;
}

function keepAnchor(anchor) {
  if (anchor && anchor.el.isConnected) ui.messages.scrollTop = anchor.el.offsetTop - anchor.off;
}

async function loadOlder() {
  const chat = state.chat;
  if (!chat || chat.loadingOlder || chat.atStart || !chat.items.length || !ui.messages) return;
  const lo = chat.items[0].seq;
  if (lo <= 1) { chat.atStart = true; updateOlderStatus(); return; }
  chat.loadingOlder = true;
  updateOlderStatus();
  const after = Math.max(0, lo - 1 - PAGE);
  let msgs;
  try {
    msgs = await fetchRange(chat.id, after, lo - 1, lo - 1 - after);
  } catch (e) {
    chat.loadingOlder = false;
    if (state.chat === chat) ui.olderStatus.textContent = `Could not load older messages: ${e.message}`;
    return;
  }
  chat.loadingOlder = false;
  if (state.chat !== chat) return;
  if (!msgs.length || after === 0 || msgs[0].seq > after + 1) chat.atStart = true;
  if (msgs.length) {
    const anchor = anchorOf();
    const els = msgs.map((m) => (m.el = renderMessage(m)));
    ui.items.prepend(...els);
    chat.items = msgs.concat(chat.items);
    if (chat.items.length > MAX_RENDERED && !state.stream) {
      for (const m of chat.items.splice(MAX_RENDERED)) m.el.remove();
      chat.atEnd = false;
      ui.spacer.style.height = '0px';
      renderNotice();
    }
    keepAnchor(anchor);
    for (const m of msgs) applyAlt(m.seq);
    refreshAlts(chat);
  }
  updateOlderStatus();
}

async function loadNewer() {
  const chat = state.chat;
  if (!chat || chat.loadingNewer || chat.atEnd || !chat.items.length || !ui.messages) return;
  chat.loadingNewer = true;
  const hi = chat.items[chat.items.length - 1].seq;
  let msgs;
  try {
    msgs = await fetchRange(chat.id, hi, Infinity, PAGE);
  } catch (_) {
    chat.loadingNewer = false;
    return;
  }
  chat.loadingNewer = false;
  if (state.chat !== chat) return;
  if (!msgs.length || msgs[msgs.length - 1].seq >= chat.conv.last_seq) chat.atEnd = true;
  if (msgs.length) {
    const anchor = anchorOf();
    ui.items.append(...msgs.map((m) => (m.el = renderMessage(m))));
    chat.items = chat.items.concat(msgs);
    if (chat.items.length > MAX_RENDERED) {
      for (const m of chat.items.splice(0, chat.items.length - MAX_RENDERED)) m.el.remove();
      chat.atStart = false;
    }
    keepAnchor(anchor);
    for (const m of msgs) applyAlt(m.seq);
    refreshAlts(chat);
  }
  renderNotice();
  updateOlderStatus();
}

function onMessagesScroll() {
  const box = ui.messages;
  if (!box || !state.chat) return;
  const fromBottom = box.scrollHeight - box.scrollTop - box.clientHeight;
  state.chat.pinned = fromBottom < 48;
  if (box.scrollTop < 800) loadOlder();
  if (fromBottom < 800) loadNewer();
}

function fillViewport() {
  const box = ui.messages;
  const chat = state.chat;
  if (!box || !chat) return;
  if (box.scrollHeight <= box.clientHeight + 10 && !chat.atStart && !chat.loadingOlder) {
    loadOlder().then(() => { if (state.chat === chat) { scrollToBottom(); fillViewport(); } });
  }
}

function scrollToBottom() {
  if (!ui.messages) return;
  ui.messages.scrollTop = ui.messages.scrollHeight;
  if (state.chat) state.chat.pinned = true;
}

function scrollToSeq(seq, highlight) {
  const el = findItemEl(seq);
  if (!el) {
    if (state.chat) openConversation(state.chat.id, { seq });
    return;
  }
  ui.messages.scrollTop = Math.max(0, el.offsetTop - 24);
  if (highlight) {
    el.classList.add('msg-target');
    setTimeout(() => el.classList.remove('msg-target'), 2500);
  }
}

// -------- branches (alternatives)

/** Seqs that may have alternatives: one past each fork point on this path. */
async function loadBranchInfo(chat) {
  const cands = new Set();
  try {
    let conv = chat.conv;
    let upto = Infinity;
    for (let depth = 0; conv && depth < 16; depth++) {
      const forks = await api('GET', `${convUrl(conv.id)}/forks`);
      for (const f of forks.data) {
        if (f.forked_from && f.forked_from.seq < upto) cands.add(f.forked_from.seq + 1);
      }
      const ff = conv.forked_from;
      if (!ff || !ID_RE.test(ff.conversation_id)) break;
      cands.add(ff.seq + 1);
      upto = Math.min(upto, ff.seq);
      conv = await api('GET', convUrl(ff.conversation_id));
    }
  } catch (_) { /* branch navigation is a convenience */ }
  if (state.chat !== chat) return;
  chat.altCands = cands;
  refreshAlts(chat);
}

function refreshAlts(chat) {
  if (!chat.altCands || state.chat !== chat) return;
  for (const m of chat.items) {
    if (m.seq == null || !chat.altCands.has(m.seq) || chat.alts.has(m.seq) || chat.altLoading.has(m.seq)) continue;
    chat.altLoading.add(m.seq);
    api('GET', `${convUrl(chat.id)}/messages/${m.seq}/alternatives`).then((res) => {
      chat.altLoading.delete(m.seq);
      if (state.chat !== chat) return;
      chat.alts.set(m.seq, res.data);
      applyAlt(m.seq);
    }).catch(() => chat.altLoading.delete(m.seq));
  }
}

function applyAlt(seq) {
  const chat = state.chat;
  const list = chat && chat.alts.get(seq);
  const el = findItemEl(seq);
  if (!el) return;
  const slot = el.querySelector('.branch-slot');
  if (!list || list.length < 2) { slot.replaceChildren(); return; }
  let pos = list.findIndex((a) => a.current);
  if (pos < 0) pos = list.findIndex((a) => a.conversation_id === chat.id);
  const total = list.length;
  const goTo = (i, which) => {
    const target = list[i] && list[i].conversation_id;
    if (!target || !ID_RE.test(target)) return;
    state.focusAfterOpen = { branchNav: which, seq };
    go(`#/c/${target}/m/${seq}`);
  };
  const prev = h('button', {
    type: 'button', class: 'btn btn-small btn-icon', 'data-testid': 'branch-prev',
    'aria-label': 'Previous version', disabled: pos <= 0, onclick: () => goTo(pos - 1, 'prev'),
  }, '‹');
  const next = h('button', {
    type: 'button', class: 'btn btn-small btn-icon', 'data-testid': 'branch-next',
    'aria-label': 'Next version', disabled: pos >= total - 1, onclick: () => goTo(pos + 1, 'next'),
  }, '›');
  slot.replaceChildren(h('span', {
    class: 'branch-nav', role: 'group', 'data-testid': 'branch-nav', 'aria-label': `Version ${pos + 1} of ${total} of message ${seq}`,
  }, prev, h('span', { class: 'branch-pos', 'data-testid': 'branch-pos' }, `${pos + 1}/${total}`), next));
  if (chat.focusBranch && chat.focusBranch.seq === seq) {
    const which = chat.focusBranch.branchNav;
    chat.focusBranch = null;
    const b = which === 'prev' ? prev : next;
    (b.disabled ? (which === 'prev' ? next : prev) : b).focus();
  }
}

// -------- composer, streaming

function autosize() {
  const t = ui.input;
  t.style.height = 'auto';
  t.style.height = Math.min(t.scrollHeight + 2, 220) + 'px';
}

function onComposerKey(e) {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    sendMessage();
  } else if (e.key === 'Escape' && state.stream) {
    e.preventDefault();
    e.stopPropagation();
    stopStream();
  }
}

function setStreaming(on) {
  if (!ui.sendBtn) return;
  ui.sendBtn.hidden = on;
  ui.stopBtn.hidden = !on;
  for (const b of document.querySelectorAll('.msg-edit, .msg-retry, [data-testid="turn-retry"]')) b.disabled = on;
  if (on) {
    const focused = document.activeElement;
    if (focused === ui.sendBtn || !focused || focused === document.body) ui.stopBtn.focus();
  } else if (document.activeElement === ui.stopBtn || document.activeElement === document.body) {
    ui.input.focus();
  }
}

function stopStream() {
  if (state.stream) {
    state.stream.stopping = true;
    state.stream.controller.abort();
  }
}

function sendMessage() {
  const text = ui.input.value;
  if (!text.trim() || state.stream || !state.chat || !state.chat.conv) return;
  ui.input.value = '';
  autosize();
  runTurn({ path: 'chat', body: { content: text }, userText: text });
}

function retryReply(seq) {
  if (state.stream) return;
  runTurn({ path: 'retry', body: { seq }, removeFromSeq: seq });
}

function openEditor(m) {
  if (state.stream || !m.el) return;
  const body = m.el.querySelector('.msg-body');
  const original = textOf(m.message.content);
  const id = `edit-${m.seq}`;
  const ta = h('textarea', { id, class: 'edit-input', rows: '3' });
  ta.value = original;
  const cancel = () => {
    body.replaceChildren(renderContent(m.message.content));
    m.el.classList.remove('editing');
    const b = m.el.querySelector('.msg-edit');
    if (b) b.focus();
  };
  const save = () => {
    const v = ta.value;
    if (!v.trim()) { ta.focus(); return; }
    if (v === original) { cancel(); return; }
    runTurn({ path: 'edit', body: { seq: m.seq, content: v }, userText: v, removeFromSeq: m.seq });
  };
  const form = h('form', { class: 'edit-form', novalidate: true },
    h('label', { for: id }, `Edit message ${m.seq} (saving starts a new branch)`),
    ta,
    h('div', { class: 'edit-actions' },
      h('button', { type: 'submit', class: 'btn btn-primary edit-save' }, 'Save and send'),
      h('button', { type: 'button', class: 'btn edit-cancel', onclick: cancel }, 'Cancel')));
  form.addEventListener('submit', (e) => { e.preventDefault(); save(); });
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); cancel(); }
    else if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); save(); }
  });
  m.el.classList.add('editing');
  body.replaceChildren(form);
  ta.focus();
  ta.setSelectionRange(ta.value.length, ta.value.length);
}

function removeItemsFrom(seq) {
  const chat = state.chat;
  const keep = [];
  for (const m of chat.items) {
    if (m.seq != null && m.seq >= seq) m.el.remove(); else keep.push(m);
  }
  chat.items = keep;
}

function streamingBubble() {
  const body = h('div', { class: 'msg-body', 'aria-live': 'polite', 'aria-busy': 'true', 'aria-atomic': 'false' });
  const status = h('span', { class: 'typing', 'data-testid': 'streaming' }, h('span', { class: 'sr-only' }, 'Assistant is replying'));
  const art = h('article', { class: 'msg msg-assistant streaming', 'aria-label': 'Assistant reply (streaming)' },
    h('div', { class: 'msg-head' }, h('span', { class: 'msg-role' }, 'Assistant'), status),
    body);
  return { art, body, status };
}

/** Keeps the space below the newest messages so that a growing reply never moves the page. */
function updateReserve() {
  const chat = state.chat;
  if (!chat || !ui.spacer || !ui.messages) return;
  const box = ui.messages;
  if (!chat.reserveFrom || !chat.reserveFrom.isConnected || !chat.atEnd) {
    ui.spacer.style.height = '0px';
    return;
  }
  const start = chat.reserveFrom.offsetTop;
  const contentEnd = ui.spacer.offsetTop; // where the spacer starts = end of content
  const used = contentEnd - start;
  const avail = box.clientHeight - 24;
  ui.spacer.style.height = Math.max(0, avail - used) + 'px';
}

async function runTurn(opts) {
  const chat = state.chat;
  if (!chat || !chat.conv || state.stream) return;
  const s = {
    controller: new AbortController(), chat, convId: chat.id, userSeq: null, replySeq: null,
    parts: [], stopped: false, error: null, forkedTo: null, done: false, raf: 0, opts,
  };
  state.stream = s;
  chat.turnError = null;
  if (!chat.atEnd) {
    try { await reloadItems(chat); } catch (_) { /* the turn reports its own errors */ }
  }
  if (opts.removeFromSeq != null) removeItemsFrom(opts.removeFromSeq);
  renderNotice();
  let userEl = null;
  if (opts.userText != null) {
    userEl = renderMessage({ seq: null, status: 'complete', message: { role: 'user', content: opts.userText } });
    userEl.classList.add('pending');
    ui.items.append(userEl);
  }
  const bubble = streamingBubble();
  ui.items.append(bubble.art);
  s.userEl = userEl;
  s.bubble = bubble;
  chat.reserveFrom = userEl || bubble.art;
  setStreaming(true);
  updateReserve();
  ui.messages.scrollTop = Math.max(0, chat.reserveFrom.offsetTop - 12);
  ui.messages.scrollTop = ui.messages.scrollHeight; // the end (the reserve fills the view)
  chat.pinned = true;
  try {
    const res = await fetch(`${convUrl(chat.id)}/${opts.path}`, {
      method: 'POST',
      headers: Object.assign(authHeaders(true), { Accept: 'text/event-stream' }),
      body: JSON.stringify(opts.body),
      signal: s.controller.signal,
      cache: 'no-store',
    });
    if (!res.ok) {
      const err = await errorOf(res);
      if (err.status === 401) onUnauthorized(err);
      throw err;
    }
    await readSse(res.body, (ev, data) => onTurnEvent(s, ev, data));
    if (!s.done && !s.error) s.error = { message: 'The connection ended before the reply was complete.' };
  } catch (e) {
    if (e && e.name === 'AbortError') s.stopped = true;
    else s.error = { message: e && e.message ? e.message : String(e) };
  }
  cancelAnimationFrame(s.raf);
  renderStream(s);
  bubble.body.setAttribute('aria-busy', 'false');
  state.stream = null;
  setStreaming(false);
  await finishTurn(s);
}

async function readSse(stream, onEvent) {
  const reader = stream.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const flush = (raw) => {
    let ev = 'message';
    const data = [];
    for (let line of raw.split('\n')) {
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (!line || line[0] === ':') continue;
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      let v = c < 0 ? '' : line.slice(c + 1);
      if (v[0] === ' ') v = v.slice(1);
      if (field === 'event') ev = v;
      else if (field === 'data') data.push(v);
    }
    if (!data.length) return;
    let d;
    try { d = JSON.parse(data.join('\n')); } catch (_) { d = { text: data.join('\n') }; }
    onEvent(ev, d && typeof d === 'object' ? d : { value: d });
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true }).replace(/\r\n/g, '\n');
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      flush(buf.slice(0, i));
      buf = buf.slice(i + 2);
    }
  }
  if (buf.trim()) flush(buf);
}

function onTurnEvent(s, ev, data) {
  switch (ev) {
    case 'forked': {
      const id = String(data.conversation_id || '');
      if (!ID_RE.test(id)) break;
      s.forkedTo = id;
      if (state.chat === s.chat) {
        s.chat.id = id;
        s.chat.alts = new Map();
        s.chat.altCands = null;
        history.pushState(null, '', '#/c/' + id);
        state.route = { view: state.route.view === 'inspect' ? 'inspect' : 'chat', id, seq: null };
        if (state.route.view === 'inspect') history.replaceState(null, '', `#/c/${id}/inspect`);
        updateInspectLink();
        announce('Started a new branch');
      }
      break;
    }
    case 'user_stored':
      s.userSeq = Number(data.seq);
      if (s.userEl) {
        s.userEl.dataset.seq = String(s.userSeq);
        s.userEl.classList.remove('pending');
      }
      break;
    case 'assistant_chunk':
      addPart(s, 'text', String(data.delta ?? ''));
      break;
    case 'tool_use':
      s.parts.push({ type: 'tool_use', id: data.id, name: data.name, input: data.input });
      scheduleRender(s);
      break;
    case 'tool_result':
      s.parts.push({ type: 'tool_result', tool_use_id: data.tool_use_id, content: data.content, is_error: data.is_error });
      scheduleRender(s);
      break;
    case 'done':
      s.done = true;
      if (data.message_id != null) s.replySeq = Number(data.message_id);
      break;
    case 'error':
      s.error = { message: String(data.message || 'The reply failed.') };
      if (data.message_id != null) s.replySeq = Number(data.message_id);
      break;
    default:
      break;
  }
}

function addPart(s, type, text) {
  const last = s.parts[s.parts.length - 1];
  if (last && last.type === 'text') last.text += text;
  else s.parts.push({ type: 'text', text });
  scheduleRender(s);
}

function scheduleRender(s) {
  if (s.raf) return;
  s.raf = requestAnimationFrame(() => { s.raf = 0; renderStream(s); });
}

function renderStream(s) {
  if (state.chat !== s.chat || !s.bubble.art.isConnected) return;
  const box = ui.messages;
  const pinned = s.chat.pinned;
  if (s.parts.length) {
    s.bubble.body.replaceChildren(renderContent(s.parts));
    s.bubble.status.classList.add('has-text');
  }
  updateReserve();
  if (pinned) box.scrollTop = box.scrollHeight;
}

async function waitForReply(id, userSeq) {
  // The server stores the partial reply once it sees the client go away.
  for (let i = 0; i < 20; i++) {
    try {
      const after = userSeq != null ? userSeq : Math.max(0, (state.chat.conv.last_seq || 0));
      const page = await api('GET', `${convUrl(id)}/messages?after=${after}&limit=1`);
      if (page.data.length) return;
    } catch (_) { return; }
    await new Promise((r) => setTimeout(r, 150));
  }
}

async function finishTurn(s) {
  const chat = s.chat;
  if (state.chat !== chat) return;
  const id = chat.id;
  if (s.stopped) {
    await waitForReply(id, s.userSeq);
    announce('Stopped. What arrived is kept as a partial reply.');
  }
  let err = null;
  if (s.error) {
    let retry;
    if (s.replySeq != null) retry = { path: 'retry', body: { seq: s.replySeq }, removeFromSeq: s.replySeq };
    else if (s.userSeq != null) retry = { path: 'retry', body: { seq: s.userSeq } };
    else retry = s.opts;
    err = { message: s.error.message, retry };
  }
  try {
    await reloadItems(chat);
  } catch (e) {
    if (!err) err = { message: `Could not reload the conversation: ${e.message}`, retry: null };
  }
  if (state.chat !== chat) return;
  chat.turnError = err;
  renderNotice();
  updateReserve();
  if (chat.pinned) scrollToBottom();
  if (err) announce('The reply failed: ' + err.message);
  else if (!s.stopped) {
    const text = s.parts.filter((p) => p.type === 'text').map((p) => p.text).join(' ').trim();
    announce(text ? `Reply: ${text.length > 400 ? text.slice(0, 400) + '…' : text}` : 'Reply complete');
  }
  if (s.opts.path === 'chat' && chat.conv && !chat.conv.title && s.userSeq === 1 && typeof s.opts.userText === 'string') {
    autoTitle(chat, s.opts.userText);
  }
  if (s.forkedTo) loadConversations(); else if (chat.conv) upsertConv(chat.conv);
  loadBranchInfo(chat);
  if (state.route.view === 'inspect') loadInspector();
}

async function autoTitle(chat, text) {
  const t = text.replace(/\s+/g, ' ').trim().slice(0, 60);
  if (!t) return;
  try {
    const c = await api('PATCH', convUrl(chat.id), { title: t });
    if (state.chat === chat) { chat.conv = Object.assign({}, chat.conv, c); updateChatHeader(); }
    upsertConv(c);
  } catch (_) { /* a title is a nicety */ }
}

/** Re-reads the conversation and its newest page (after a turn, a clear, a stop). */
async function reloadItems(chat) {
  const conv = await api('GET', convUrl(chat.id));
  if (state.chat !== chat) return;
  chat.conv = conv;
  updateChatHeader();
  const after = Math.max(0, conv.last_seq - PAGE);
  const msgs = await fetchRange(chat.id, after, Infinity, PAGE);
  if (state.chat !== chat) return;
  const box = ui.messages;
  const wasPinned = chat.pinned;
  const anchorSeq = (() => {
    const a = anchorOf();
    return a && a.el.dataset.seq ? { seq: a.el.dataset.seq, off: a.off } : null;
  })();
  const reserveSeq = chat.reserveFrom && chat.reserveFrom.dataset ? chat.reserveFrom.dataset.seq : null;
  chat.atStart = after === 0 || msgs.length === 0 || msgs[0].seq > after + 1;
  chat.atEnd = true;
  setItems(msgs);
  chat.reserveFrom = reserveSeq ? findItemEl(reserveSeq) : null;
  if (!chat.reserveFrom && msgs.length) {
    // The newest user message and its reply keep the reserved space.
    for (let i = chat.items.length - 1; i >= 0; i--) {
      if (chat.items[i].message && chat.items[i].message.role === 'user') { chat.reserveFrom = chat.items[i].el; break; }
    }
  }
  updateReserve();
  if (wasPinned) box.scrollTop = box.scrollHeight;
  else if (anchorSeq) {
    const el = findItemEl(anchorSeq.seq);
    if (el) box.scrollTop = el.offsetTop - anchorSeq.off;
  }
}

function renderNotice() {
  const chat = state.chat;
  if (!chat || !ui.notice) return;
  const err = chat.turnError;
  if (err) {
    const retryBtn = err.retry ? h('button', {
      type: 'button', class: 'btn btn-primary', 'data-testid': 'turn-retry',
      onclick: () => { const r = err.retry; chat.turnError = null; runTurn(r); },
    }, 'Retry') : null;
    ui.notice.replaceChildren(h('div', { class: 'error-box turn-error', role: 'alert', 'data-testid': 'turn-error' },
      h('p', null, h('strong', null, 'The reply failed: '), err.message),
      h('div', { class: 'error-actions' }, retryBtn,
        h('button', { type: 'button', class: 'btn', onclick: () => { chat.turnError = null; renderNotice(); } }, 'Dismiss'))));
    return;
  }
  const last = chat.items[chat.items.length - 1];
  if (!state.stream && chat.atEnd && last && last.message && last.message.role === 'user' && last.seq != null && !hasToolResult(last.message.content)) {
    ui.notice.replaceChildren(h('div', { class: 'info-box', 'data-testid': 'unanswered' },
      h('p', null, 'This message has no reply.'),
      h('button', {
        type: 'button', class: 'btn', 'data-testid': 'turn-retry',
        onclick: () => runTurn({ path: 'retry', body: { seq: last.seq } }),
      }, 'Get a reply')));
    return;
  }
  if (chat.conv && chat.atEnd && !chat.items.length && !state.stream) {
    ui.notice.replaceChildren(h('div', { class: 'empty-chat' },
      h('p', null, chat.conv.message_count === 0 && chat.conv.last_seq > 0 ? 'This conversation was cleared.' : 'No messages yet. Write the first one below.')));
    return;
  }
  ui.notice.replaceChildren();
}

// ---------------------------------------------------------------- dialogs

function openModal(build, focusSel) {
  const dlg = $('#dialog');
  return new Promise((resolve) => {
    let done = false;
    const close = (v) => {
      if (done) return;
      done = true;
      if (dlg.open) dlg.close();
      resolve(v);
    };
    dlg.replaceChildren(build(close));
    dlg.addEventListener('close', () => close(null), { once: true });
    dlg.showModal();
    const f = focusSel ? dlg.querySelector(focusSel) : null;
    if (f) { f.focus(); if (f.select) f.select(); }
  });
}

function dialogFrame(title, ...kids) {
  return [h('h2', { id: 'dialog-title', class: 'dialog-title' }, title), ...kids];
}

function alertDialog(title, message) {
  return openModal((close) => h('div', { class: 'dialog-body' },
    dialogFrame(title, h('p', null, message),
      h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'btn btn-primary', onclick: () => close(true) }, 'OK')))), 'button');
}

function renameConversation() {
  const chat = state.chat;
  if (!chat || !chat.conv) return;
  openModal((close) => {
    const input = h('input', { id: 'dlg-input', type: 'text', maxlength: '500', autocomplete: 'off', value: chat.conv.title || '' });
    const err = h('p', { class: 'form-error', role: 'alert' });
    const form = h('form', { class: 'dialog-body', novalidate: true },
      dialogFrame('Rename conversation',
        h('label', { for: 'dlg-input' }, 'Title'), input, err,
        h('div', { class: 'dialog-actions' },
          h('button', { type: 'button', class: 'btn', onclick: () => close(null) }, 'Cancel'),
          h('button', { type: 'submit', class: 'btn btn-primary', id: 'dlg-ok' }, 'Save'))));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const v = input.value.trim();
      try {
        const c = await api('PATCH', convUrl(chat.id), { title: v || null });
        if (state.chat === chat) { chat.conv = Object.assign({}, chat.conv, c); updateChatHeader(); }
        upsertConv(c);
        announce('Renamed');
        close(true);
      } catch (x) {
        err.textContent = x.message;
      }
    });
    return form;
  }, '#dlg-input');
}

function confirmAction({ title, text, okLabel, run, conflictLabel, runConflict }) {
  return openModal((close) => {
    const err = h('p', { class: 'form-error', role: 'alert' });
    const extra = h('span', { class: 'dialog-extra' });
    const ok = h('button', { type: 'button', class: 'btn btn-danger', id: 'dlg-ok' }, okLabel);
    const attempt = async (fn) => {
      ok.disabled = true;
      try {
        await fn();
        close(true);
      } catch (x) {
        ok.disabled = false;
        err.textContent = x.message;
        if (x.status === 409 && conflictLabel && runConflict && !extra.firstChild) {
          extra.append(h('button', {
            type: 'button', class: 'btn btn-danger', id: 'dlg-cascade', onclick: () => attempt(runConflict),
          }, conflictLabel));
        }
      }
    };
    ok.addEventListener('click', () => attempt(run));
    return h('div', { class: 'dialog-body' }, dialogFrame(title, h('p', null, text), err,
      h('div', { class: 'dialog-actions' },
        h('button', { type: 'button', class: 'btn', id: 'dlg-cancel', onclick: () => close(null) }, 'Cancel'),
        extra, ok)));
  }, '#dlg-cancel');
}

function deleteConversation() {
  const chat = state.chat;
  if (!chat || !chat.conv) return;
  const done = (id) => {
    removeConv(id);
    announce('Conversation deleted');
    go('#/');
    loadConversations();
  };
  confirmAction({
    title: 'Delete this conversation?',
    text: `“${titleOf(chat.conv)}” and its ${plural(chat.conv.message_count, 'message', 'messages')} will be deleted for good.`,
    okLabel: 'Delete',
    run: async () => { await api('DELETE', convUrl(chat.id)); done(chat.id); },
    conflictLabel: 'Delete it and its branches',
    runConflict: async () => { await api('DELETE', convUrl(chat.id) + '?cascade=true'); done(chat.id); },
  });
}

function clearConversation() {
  const chat = state.chat;
  if (!chat || !chat.conv) return;
  confirmAction({
    title: 'Clear this conversation?',
    text: `All ${plural(chat.conv.message_count, 'message', 'messages')} of “${titleOf(chat.conv)}” will be removed; the conversation stays.`,
    okLabel: 'Clear messages',
    run: async () => {
      await api('POST', `${convUrl(chat.id)}/clear`);
      if (state.chat === chat) {
        chat.turnError = null;
        await reloadItems(chat);
        renderNotice();
        if (chat.conv) upsertConv(chat.conv);
        if (state.route.view === 'inspect') loadInspector();
      }
      announce('Conversation cleared');
    },
  });
}

// ---------------------------------------------------------------- inspector

function hideInspector() {
  if (ui.insp) {
    ui.insp.hidden = true;
    ui.insp.replaceChildren();
  }
}

function showInspector() {
  if (!ui.insp) return;
  if (ui.insp.hidden || !ui.insp.firstChild) {
    ui.insp.hidden = false;
    renderInspectorShell();
    if (state.chat && state.chat.conv) loadInspector();
  }
}

function renderInspectorShell() {
  const st = state.insp;
  const fmt = h('select', { id: 'insp-format', name: 'format' },
    h('option', { value: '' }, 'Conversation default'),
    FORMATS.map((f) => h('option', { value: f }, f)));
  fmt.value = st.format;
  const maxTok = h('input', {
    id: 'insp-max-tokens', name: 'max_tokens', type: 'number', min: '1', step: '1', inputmode: 'numeric',
    placeholder: 'policy', 'data-testid': 'inspect-max-tokens', value: st.maxTokens,
  });
  const recallTok = h('input', {
    id: 'insp-recall-tokens', name: 'recall_tokens', type: 'number', min: '0', step: '1', inputmode: 'numeric',
    placeholder: 'policy', value: st.recallTokens,
  });
  const current = h('input', {
    id: 'insp-current', name: 'current', type: 'text', autocomplete: 'off',
    placeholder: 'none: the history as it stands', value: st.current || '',
  });
  const trim = h('select', { id: 'insp-trim', name: 'trim' },
    h('option', { value: '' }, 'Policy default'), h('option', { value: 'sliding' }, 'sliding'), h('option', { value: 'stable' }, 'stable'));
  trim.value = st.trim;
  let timer = 0;
  const changed = () => {
    st.format = fmt.value;
    st.maxTokens = maxTok.value.trim();
    st.recallTokens = recallTok.value.trim();
    st.trim = trim.value;
    st.current = current.value;
    clearTimeout(timer);
    timer = setTimeout(loadInspector, 300);
  };
  for (const el of [fmt, trim]) el.addEventListener('change', changed);
  for (const el of [maxTok, recallTok, current]) el.addEventListener('input', changed);
  const form = h('form', { class: 'insp-form', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'insp-format' }, 'Format'), fmt),
    h('div', { class: 'field' }, h('label', { for: 'insp-max-tokens' }, 'Max tokens'), maxTok),
    h('div', { class: 'field' }, h('label', { for: 'insp-recall-tokens' }, 'Recall tokens'), recallTok),
    h('div', { class: 'field' }, h('label', { for: 'insp-trim' }, 'Trim'), trim),
    h('div', { class: 'field field-wide' }, h('label', { for: 'insp-current' }, 'Next message (optional; xml needs one)'), current),
    h('button', { type: 'submit', class: 'btn', id: 'insp-update' }, 'Update'));
  form.addEventListener('submit', (e) => { e.preventDefault(); clearTimeout(timer); changed(); clearTimeout(timer); loadInspector(); });
  ui.inspStatus = h('p', { class: 'insp-status', 'aria-live': 'polite' });
  ui.inspBody = h('div', { class: 'insp-body' });
  const back = state.chat ? h('a', { class: 'btn btn-quiet back-btn', href: `#/c/${state.chat.id}` }, '‹ Chat') : null;
  ui.insp.replaceChildren(
    h('div', { class: 'insp-head' }, back,
      h('h2', { id: 'insp-title', class: 'insp-title', tabindex: '-1' }, 'Context inspector'),
      state.chat ? h('a', { class: 'btn btn-quiet insp-close', href: `#/c/${state.chat.id}`, 'aria-label': 'Close the inspector' }, '×') : null),
    h('p', { class: 'help' }, 'What the next request of this conversation carries, under these settings.'),
    form, ui.inspStatus, ui.inspBody);
  ui.insp.dataset.status = 'idle';
}

/** The window's stored messages, as the server reports them (`window`; null: none). */
function windowRange(res) {
  const w = res && res.window;
  if (w && Number.isFinite(w.first_seq) && Number.isFinite(w.last_seq)) {
    return { first: w.first_seq, last: w.last_seq };
  }
  return null;
}

async function loadInspector() {
  const chat = state.chat;
  if (!chat || !ui.insp || ui.insp.hidden) return;
  if (!ui.inspBody) renderInspectorShell();
  const st = state.insp;
  const body = {};
  if (st.format) body.format = st.format;
  const mt = parseInt(st.maxTokens, 10);
  if (mt > 0) body.max_tokens = mt;
  const rt = parseInt(st.recallTokens, 10);
  if (rt >= 0 && st.recallTokens !== '') body.recall_tokens = rt;
  if (st.trim) body.trim = st.trim;
  if (st.current && st.current.trim()) body.current = st.current;
  const mine = ++st.req;
  ui.insp.dataset.status = 'loading';
  ui.inspStatus.textContent = 'Building the context…';
  let res;
  let conv;
  try {
    [res, conv] = await Promise.all([
      api('POST', `${convUrl(chat.id)}/context`, body),
      api('GET', convUrl(chat.id)),
    ]);
  } catch (e) {
    if (mine !== st.req) return;
    ui.insp.dataset.status = 'error';
    ui.inspStatus.textContent = '';
    ui.inspBody.replaceChildren(h('div', { class: 'error-box', role: 'alert' }, h('p', null, `Could not build the context: ${e.message}`)));
    return;
  }
  if (mine !== st.req || state.chat !== chat) return;
  chat.conv = conv;
  const stats = res.stats || {};
  const win = windowRange(res);
  // The window's share of the budget, as applied (recall and summary tokens are set apart).
  const budget = (res.policy && res.policy.max_tokens) || (mt > 0 ? mt : null)
    || (conv.policy && conv.policy.max_tokens) || null;
  renderInspector(chat, res, stats, win, budget, conv);
  ui.insp.dataset.status = 'ready';
  ui.insp.dataset.maxTokens = mt > 0 ? String(mt) : '';
  ui.insp.dataset.format = res.format || '';
  ui.inspStatus.textContent = `Context built: ${plural(stats.included || 0, 'message', 'messages')} in the window, ${num(stats.dropped || 0)} dropped.`;
  loadWindowRows(chat, win, mine);
}

function stat(label, value, testid, extra) {
  return h('div', { class: 'stat' }, h('dt', null, label),
    h('dd', null, h('span', { 'data-testid': testid || null }, value), extra || null));
}

function renderInspector(chat, res, stats, win, budget, conv) {
  const last = conv.last_seq || 0;
  const first = Math.max(1, last - (conv.message_count || 0) + 1);
  const tokens = stats.tokens || 0;
  const pct = budget ? Math.min(100, Math.round((tokens / budget) * 100)) : null;
  // Visual only: the figures are in the list below.
  const meter = budget ? h('div', { class: 'meter', 'aria-hidden': 'true' }, h('div', { class: 'meter-fill' })) : null;
  if (meter) meter.firstChild.style.width = pct + '%';

  // The bar of all messages, drawn from ranges.
  const segs = [];
  if (last > 0) {
    if (first > 1) segs.push({ from: 1, to: first - 1, kind: 'cleared' });
    segs.push({ from: first, to: last, kind: 'dropped' });
    const sum = stats.summary;
    if (sum && Number.isFinite(sum.from_seq)) segs.push({ from: sum.from_seq, to: sum.to_seq, kind: 'summary' });
    if (win) segs.push({ from: win.first, to: win.last, kind: 'window' });
    const rec = stats.recalled && Array.isArray(stats.recalled.messages) ? stats.recalled.messages : [];
    for (const r of rec) if (!r.conversation_id || r.conversation_id === chat.id) segs.push({ from: r.seq, to: r.seq, kind: 'recalled' });
  }
  const bar = last ? seqBar(1, last, segs, barLabel(first, last, win, stats)) : h('p', { class: 'muted' }, 'No messages yet.');
  // A window lost in a long bar gets a close-up of the newest messages too.
  let zoom = null;
  if (win && last > 0 && (win.last - win.first + 1) / last < 0.05) {
    const from = Math.max(1, win.first - 2 * (win.last - win.first + 1));
    zoom = seqBar(from, last, segs, `Close-up of messages #${from} to #${last}`);
  }
  const legendItem = (kind, text) => h('li', null, h('span', { class: 'swatch seg-' + kind, 'aria-hidden': 'true' }), text);
  const recalled = stats.recalled && Array.isArray(stats.recalled.messages) ? stats.recalled.messages : [];
  const legend = h('ul', { class: 'legend' },
    legendItem('window', `in the window${win ? ` (#${num(win.first)}–#${num(win.last)})` : ''}`),
    legendItem('dropped', `not sent (${num(stats.dropped || 0)} dropped)`),
    stats.summary ? legendItem('summary', `summarised (#${num(stats.summary.from_seq)}–#${num(stats.summary.to_seq)})`) : null,
    recalled.length ? legendItem('recalled', `recalled (${recalled.length})`) : null,
    first > 1 ? legendItem('cleared', 'cleared') : null);

  const dl = h('dl', { class: 'stats' },
    stat('Window', win ? '' : 'empty', 'window-range',
      win ? h('span', null, '#', h('span', { 'data-testid': 'window-first' }, String(win.first)), ' – #',
        h('span', { 'data-testid': 'window-last' }, String(win.last))) : null),
    stat('In the window', num(stats.included || 0), 'included'),
    stat('Dropped', String(stats.dropped || 0), 'dropped'),
    stat('Skipped', num(stats.skipped || 0), 'skipped'),
    stat('Tokens', String(tokens), 'total-tokens',
      h('span', { class: 'muted' }, budget ? ` of `: ' (no token limit)', budget ? h('span', { 'data-testid': 'budget' }, String(budget)) : null, pct != null ? ` (${pct}%)` : '')),
    stat('Turns', num(stats.turns || 0), 'turns'),
    stat('Characters', num(stats.chars || 0), 'chars'),
    stat('Format', String(res.format || ''), 'format'));
  const blocks = [h('div', { class: 'insp-section' }, h('h3', null, 'Messages'), bar, zoom, legend), dl];
  if (meter) blocks.splice(1, 0, meter);
  if (stats.notice) blocks.push(h('p', { class: 'notice', 'data-testid': 'trim-notice' }, String(stats.notice)));
  if (Array.isArray(stats.warnings) && stats.warnings.length) {
    blocks.push(h('div', { class: 'insp-section' }, h('h3', null, 'Warnings'),
      h('ul', { class: 'warnings' }, stats.warnings.slice(0, 50).map((w) => h('li', null, String(w))))));
  }
  if (stats.summary) {
    blocks.push(h('p', { class: 'insp-note' }, `Summary of #${num(stats.summary.from_seq)}–#${num(stats.summary.to_seq)}: ${plural(stats.summary.tokens, 'token', 'tokens')}.`));
  }
  if (stats.recalled) {
    const r = stats.recalled;
    blocks.push(h('div', { class: 'insp-section' },
      h('h3', null, 'Recalled'),
      h('p', { class: 'muted' }, `${num(r.tokens || 0)} of ${num(r.budget || 0)} recall tokens${r.complete === false ? ' (index still catching up)' : ''}`),
      recalled.length ? h('ul', { class: 'recalled' }, recalled.slice(0, 100).map((x) =>
        h('li', null, `#${x.seq} · score ${Number(x.score).toFixed(3)}${x.hit ? ' · hit' : ' · context'}`))) : h('p', { class: 'muted' }, 'Nothing recalled.')));
  }
  ui.windowList = h('ol', { class: 'window-list', 'aria-label': 'Messages in the window', tabindex: '0' });
  ui.windowStatus = h('p', { class: 'muted' });
  blocks.push(h('div', { class: 'insp-section' }, h('h3', null, 'In the window'), ui.windowStatus, ui.windowList));
  const promptText = typeof res.prompt === 'string' ? res.prompt : jsonText(res.prompt);
  const shown = promptText.length > PROMPT_SHOWN ? promptText.slice(0, PROMPT_SHOWN) : promptText;
  const copyBtn = h('button', { type: 'button', class: 'btn btn-small' }, 'Copy prompt');
  copyBtn.addEventListener('click', () => copyText(promptText, copyBtn));
  blocks.push(h('div', { class: 'insp-section' },
    h('div', { class: 'prompt-head' }, h('h3', { id: 'prompt-title' }, `Prompt (${String(res.format || '')})`), copyBtn),
    promptText.length > PROMPT_SHOWN ? h('p', { class: 'muted' }, `Showing the first ${num(PROMPT_SHOWN)} of ${num(promptText.length)} characters.`) : null,
    h('pre', { class: 'prompt', tabindex: '0', 'aria-labelledby': 'prompt-title', 'data-testid': 'prompt' }, shown)));
  ui.inspBody.replaceChildren(...blocks);
}

/** A bar of messages #from..#to, drawn from ranges: a few positioned divs, never one per message. */
function seqBar(from, to, segs, label) {
  const span = to - from + 1;
  const bar = h('div', { class: 'seqbar', role: 'img', 'aria-label': label });
  for (const sgm of segs) {
    const a = Math.max(sgm.from, from);
    const b = Math.min(sgm.to, to);
    if (b < a) continue;
    const d = h('div', { class: 'seg seg-' + sgm.kind });
    // A narrow segment keeps its few pixels inside the bar, even at its right end.
    d.style.left = `min(${((a - from) / span) * 100}%, calc(100% - 3px))`;
    d.style.width = (((b - a + 1) / span) * 100) + '%';
    bar.append(d);
  }
  return h('div', { class: 'seqbar-wrap' }, bar,
    h('div', { class: 'seqaxis', 'aria-hidden': 'true' }, h('span', null, '#' + num(from)), h('span', null, '#' + num(to))));
}

function barLabel(first, last, win, stats) {
  if (!last) return 'No messages';
  const parts = [`Messages #${first} to #${last}`];
  if (win) parts.push(`window #${win.first} to #${win.last}`);
  parts.push(`${stats.dropped || 0} dropped`);
  if (stats.summary) parts.push(`summary of #${stats.summary.from_seq} to #${stats.summary.to_seq}`);
  const rec = stats.recalled && stats.recalled.messages;
  if (rec && rec.length) parts.push(`${rec.length} recalled`);
  return parts.join(', ');
}

async function loadWindowRows(chat, win, mine) {
  if (!win) {
    ui.windowStatus.textContent = 'The window is empty.';
    return;
  }
  const count = win.last - win.first + 1;
  const want = Math.min(count, 200);
  ui.windowStatus.textContent = 'Loading…';
  let msgs;
  try {
    msgs = await fetchRange(chat.id, win.first - 1, win.last, want);
  } catch (e) {
    if (mine === state.insp.req) ui.windowStatus.textContent = `Could not read the messages: ${e.message}`;
    return;
  }
  if (mine !== state.insp.req || !ui.windowList) return;
  let sum = 0;
  ui.windowList.replaceChildren(...msgs.map((m) => {
    sum += m.tokens || 0;
    const role = m.message && m.message.role;
    const text = textOf(m.message && m.message.content).replace(/\s+/g, ' ').trim();
    return h('li', { 'data-seq': m.seq },
      h('span', { class: 'wl-seq' }, '#' + m.seq),
      h('span', { class: 'wl-role' }, ROLE_LABEL[role] || String(role || '')),
      h('span', { class: 'wl-text' }, text ? text.slice(0, 90) : '(no text)'),
      h('span', { class: 'wl-tokens' }, plural(m.tokens || 0, 'token', 'tokens')));
  }));
  ui.windowStatus.textContent = count > msgs.length
    ? `First ${num(msgs.length)} of ${num(count)} messages; stored tokens of these: ${num(sum)}.`
    : `${plural(msgs.length, 'message', 'messages')}, ${num(sum)} stored tokens (before caps).`;
}

// ---------------------------------------------------------------- go

boot();
