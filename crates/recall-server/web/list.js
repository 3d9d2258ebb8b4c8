// recall web app: The conversation list and search.

import { api } from './api.js';
import { ROLE_LABEL } from './content.js';
import { announce, h, num, plural } from './dom.js';
import { hooks } from './hooks.js';
import { state, ui } from './state.js';

export async function loadConversations() {
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

export function upsertConv(c) {
  if (!c || !c.id) return;
  const old = state.convById.get(c.id);
  const merged = Object.assign({}, old || {}, c);
  state.convById.set(c.id, merged);
  state.convs = state.convs.filter((x) => x.id !== c.id);
  state.convs.unshift(merged);
  renderConvList();
}

export function removeConv(id) {
  state.convById.delete(id);
  state.convs = state.convs.filter((x) => x.id !== id);
  renderConvList();
}

export function titleOf(c) {
  return c && c.title ? c.title : 'Untitled conversation';
}

export function renderConvList() {
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

export async function createConversation() {
  try {
    const c = await api('POST', '/v1/conversations', {});
    upsertConv(c);
    state.focusAfterOpen = { composer: true };
    hooks.go('#/c/' + c.id);
    announce('New conversation created');
  } catch (e) {
    if (e.status !== 401) hooks.alertDialog('Could not create a conversation', e.message);
  }
}

// ---------------------------------------------------------------- search

let searchSeq = 0;
export async function runSearch(raw) {
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

export function snippet(text) {
  const frag = document.createDocumentFragment();
  String(text).split('**').forEach((part, i) => {
    if (!part) return;
    frag.append(i % 2 ? h('mark', null, part) : part);
  });
  return frag;
}

export function renderSearch() {
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
