// recall web app: The chat view: messages, paging and scrolling, branches.

import { api, convUrl, fetchRange } from './api.js';
import { autosize, onComposerKey, openEditor, renderNotice, retryReply, sendMessage, stopStream } from './composer.js';
import { ROLE_LABEL, hasToolResult, renderContent } from './content.js';
import { clearConversation, deleteConversation, renameConversation } from './dialogs.js';
import { h, plural } from './dom.js';
import { hooks, provide } from './hooks.js';
import { hideInspector, loadInspector } from './inspector.js';
import { createConversation, titleOf } from './list.js';
import { ID_RE, MAX_RENDERED, PAGE, state, ui } from './state.js';

export function renderPlaceholder() {
  ui.main.replaceChildren(h('div', { class: 'placeholder' },
    h('h1', { id: 'main-title', tabindex: '-1' }, 'No conversation open'),
    h('p', null, 'Pick a conversation from the list, search your messages, or start a new one.'),
    h('button', { type: 'button', class: 'btn btn-primary', onclick: createConversation }, 'Start a new conversation')));
}

export function newChat(id) {
  return {
    id, conv: null, items: [], atStart: false, atEnd: false, loadingOlder: false, loadingNewer: false,
    alts: new Map(), altCands: null, altLoading: new Set(), turnError: null, editing: null, pinned: true,
  };
}

export function renderChatShell(chat) {
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

export function updateChatHeader() {
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

export function updateInspectLink() {
  if (!ui.inspectLink || !state.chat) return;
  const open = state.route.view === 'inspect';
  ui.inspectLink.replaceChildren(open ? 'Close' : 'Inspect', h('span', { class: 'wide-only' }, open ? ' inspector' : ' context'));
  ui.inspectLink.setAttribute('href', open ? `#/c/${state.chat.id}` : `#/c/${state.chat.id}/inspect`);
}

export async function openConversation(id, opts = {}) {
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

export function renderOpenError(e) {
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

export function findItemEl(seq) {
  return ui.items ? ui.items.querySelector(`article.msg[data-seq="${Number(seq)}"]`) : null;
}

export function setItems(msgs) {
  const chat = state.chat;
  chat.items = msgs.slice(-MAX_RENDERED);
  if (msgs.length > MAX_RENDERED) chat.atStart = false;
  ui.items.replaceChildren(...chat.items.map((m) => (m.el = renderMessage(m))));
  for (const m of chat.items) applyAlt(m.seq);
  renderNotice();
  updateOlderStatus();
}

export function updateOlderStatus() {
  const chat = state.chat;
  if (!chat || !ui.olderStatus) return;
  if (chat.loadingOlder) ui.olderStatus.textContent = 'Loading older messages…';
  else if (chat.atStart && chat.items.length) ui.olderStatus.textContent = 'Beginning of the conversation';
  else if (!chat.items.length && chat.conv) ui.olderStatus.textContent = '';
  else ui.olderStatus.textContent = '';
  ui.olderStatus.hidden = !ui.olderStatus.textContent;
}

export function renderMessage(m) {
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
  } else if (role === 'assistant' && msg.metadata && msg.metadata.stop_reason === 'max_tokens') {
    // A reply cut at the output limit looks finished otherwise.
    head.append(h('span', {
      class: 'badge badge-capped', 'data-testid': 'capped-badge',
      title: 'The reply stopped at its output-token limit; raise max_output_tokens for longer replies.',
    }, 'cut at the output limit'));
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

export function anchorOf() {
  const box = ui.messages;
  const top = box.scrollTop;
  for (const m of state.chat.items) {
    if (m.el && m.el.offsetTop + m.el.offsetHeight > top) return { el: m.el, off: m.el.offsetTop - top };
  }
  return null;
}

export function keepAnchor(anchor) {
  if (anchor && anchor.el.isConnected) ui.messages.scrollTop = anchor.el.offsetTop - anchor.off;
}

export async function loadOlder() {
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

export async function loadNewer() {
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

export function onMessagesScroll() {
  const box = ui.messages;
  if (!box || !state.chat) return;
  const fromBottom = box.scrollHeight - box.scrollTop - box.clientHeight;
  state.chat.pinned = fromBottom < 48;
  if (box.scrollTop < 800) loadOlder();
  if (fromBottom < 800) loadNewer();
}

export function fillViewport() {
  const box = ui.messages;
  const chat = state.chat;
  if (!box || !chat) return;
  if (box.scrollHeight <= box.clientHeight + 10 && !chat.atStart && !chat.loadingOlder) {
    loadOlder().then(() => { if (state.chat === chat) { scrollToBottom(); fillViewport(); } });
  }
}

export function scrollToBottom() {
  if (!ui.messages) return;
  ui.messages.scrollTop = ui.messages.scrollHeight;
  if (state.chat) state.chat.pinned = true;
}

export function scrollToSeq(seq, highlight) {
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
export async function loadBranchInfo(chat) {
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

export function refreshAlts(chat) {
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

export function applyAlt(seq) {
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
    hooks.go(`#/c/${target}/m/${seq}`);
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

provide({ anchorOf, findItemEl, loadBranchInfo, renderMessage, scrollToBottom, setItems, updateChatHeader, updateInspectLink });
