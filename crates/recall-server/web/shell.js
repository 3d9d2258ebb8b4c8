// recall web app: Boot, sign-in, the page shell and hash routing.

import { errorOf } from './api.js';
import { openConversation, renderPlaceholder, scrollToSeq, updateInspectLink } from './chat.js';
import { stopStream, updateReserve } from './composer.js';
import { $, h } from './dom.js';
import { provide } from './hooks.js';
import { hideInspector, showInspector } from './inspector.js';
import { createConversation, loadConversations, renderConvList, runSearch } from './list.js';
import { link } from './markdown.js';
import { ID_RE, KEY_STORE, LIST_SHOWN, state, ui } from './state.js';

export async function probe(key) {
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

export async function boot() {
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

export function showFatal(message) {
  document.body.className = 'route-fatal';
  $('#app').replaceChildren(h('main', { id: 'main', class: 'center-screen', tabindex: '-1' },
    h('div', { class: 'card' },
      h('h1', null, 'recall is not reachable'),
      h('p', { role: 'alert' }, message || 'The server did not answer.'),
      h('button', { type: 'button', class: 'btn btn-primary', onclick: () => location.reload() }, 'Try again'))));
}

export function showSignIn(note) {
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

export function onUnauthorized() {
  if (state.noAuth || !state.key) return;
  signOut('Your API key was refused by the server. Sign in again.');
}

export function signOut(note) {
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

export function wireGlobal() {
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

export function startApp() {
  $('#signout').hidden = state.noAuth;
  $('#mode-note').textContent = state.noAuth ? 'No sign-in: this server runs without API keys (loopback only)' : '';
  buildShell();
  loadConversations();
  route(false);
}

export function buildShell() {
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

export function parseHash() {
  let hsh = location.hash.replace(/^#/, '');
  try { hsh = decodeURIComponent(hsh); } catch (_) { /* kept as it is */ }
  const m = /^\/c\/([^/]+)(?:\/(inspect|m\/(\d{1,15})))?\/?$/.exec(hsh);
  if (m && ID_RE.test(m[1])) {
    if (m[2] === 'inspect') return { view: 'inspect', id: m[1], seq: null };
    return { view: 'chat', id: m[1], seq: m[3] ? parseInt(m[3], 10) : null };
  }
  return { view: 'list', id: null, seq: null };
}

export function route(byUser) {
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

export function go(hash) {
  if (location.hash === hash) route(true);
  else location.hash = hash;
}

provide({ go, onUnauthorized });
