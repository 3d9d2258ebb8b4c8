// recall web app: The composer and a streamed turn (SSE).

import { api, authHeaders, convUrl, errorOf, fetchRange } from './api.js';
import { hasToolResult, renderContent, textOf } from './content.js';
import { announce, h } from './dom.js';
import { hooks, provide } from './hooks.js';
import { loadInspector } from './inspector.js';
import { loadConversations, upsertConv } from './list.js';
import { ID_RE, PAGE, state, ui } from './state.js';

export function autosize() {
  const t = ui.input;
  t.style.height = 'auto';
  t.style.height = Math.min(t.scrollHeight + 2, 220) + 'px';
}

export function onComposerKey(e) {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey && !e.ctrlKey && !e.metaKey) {
    e.preventDefault();
    sendMessage();
  } else if (e.key === 'Escape' && state.stream) {
    e.preventDefault();
    e.stopPropagation();
    stopStream();
  }
}

export function setStreaming(on) {
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

export function stopStream() {
  if (state.stream) {
    state.stream.stopping = true;
    state.stream.controller.abort();
  }
}

export function sendMessage() {
  const text = ui.input.value;
  if (!text.trim() || state.stream || !state.chat || !state.chat.conv) return;
  ui.input.value = '';
  autosize();
  runTurn({ path: 'chat', body: { content: text }, userText: text });
}

export function retryReply(seq) {
  if (state.stream) return;
  runTurn({ path: 'retry', body: { seq }, removeFromSeq: seq });
}

export function openEditor(m) {
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

export function removeItemsFrom(seq) {
  const chat = state.chat;
  const keep = [];
  for (const m of chat.items) {
    if (m.seq != null && m.seq >= seq) m.el.remove(); else keep.push(m);
  }
  chat.items = keep;
}

export function streamingBubble() {
  const body = h('div', { class: 'msg-body', 'aria-live': 'polite', 'aria-busy': 'true', 'aria-atomic': 'false' });
  const status = h('span', { class: 'typing', 'data-testid': 'streaming' }, h('span', { class: 'sr-only' }, 'Assistant is replying'));
  const art = h('article', { class: 'msg msg-assistant streaming', 'aria-label': 'Assistant reply (streaming)' },
    h('div', { class: 'msg-head' }, h('span', { class: 'msg-role' }, 'Assistant'), status),
    body);
  return { art, body, status };
}

/** Keeps the space below the newest messages so that a growing reply never moves the page. */
export function updateReserve() {
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

export async function runTurn(opts) {
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
    userEl = hooks.renderMessage({ seq: null, status: 'complete', message: { role: 'user', content: opts.userText } });
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
      if (err.status === 401) hooks.onUnauthorized(err);
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

export async function readSse(stream, onEvent) {
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

export function onTurnEvent(s, ev, data) {
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
        hooks.updateInspectLink();
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

export function addPart(s, type, text) {
  const last = s.parts[s.parts.length - 1];
  if (last && last.type === 'text') last.text += text;
  else s.parts.push({ type: 'text', text });
  scheduleRender(s);
}

export function scheduleRender(s) {
  if (s.raf) return;
  s.raf = requestAnimationFrame(() => { s.raf = 0; renderStream(s); });
}

export function renderStream(s) {
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

export async function waitForReply(id, userSeq) {
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

export async function finishTurn(s) {
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
  if (chat.pinned) hooks.scrollToBottom();
  if (err) announce('The reply failed: ' + err.message);
  else if (!s.stopped) {
    const text = s.parts.filter((p) => p.type === 'text').map((p) => p.text).join(' ').trim();
    announce(text ? `Reply: ${text.length > 400 ? text.slice(0, 400) + '…' : text}` : 'Reply complete');
  }
  if (s.opts.path === 'chat' && chat.conv && !chat.conv.title && s.userSeq === 1 && typeof s.opts.userText === 'string') {
    autoTitle(chat, s.opts.userText);
  }
  if (s.forkedTo) loadConversations(); else if (chat.conv) upsertConv(chat.conv);
  hooks.loadBranchInfo(chat);
  if (state.route.view === 'inspect') loadInspector();
}

export async function autoTitle(chat, text) {
  const t = text.replace(/\s+/g, ' ').trim().slice(0, 60);
  if (!t) return;
  try {
    const c = await api('PATCH', convUrl(chat.id), { title: t });
    if (state.chat === chat) { chat.conv = Object.assign({}, chat.conv, c); hooks.updateChatHeader(); }
    upsertConv(c);
  } catch (_) { /* a title is a nicety */ }
}

/** Re-reads the conversation and its newest page (after a turn, a clear, a stop). */
export async function reloadItems(chat) {
  const conv = await api('GET', convUrl(chat.id));
  if (state.chat !== chat) return;
  chat.conv = conv;
  hooks.updateChatHeader();
  const after = Math.max(0, conv.last_seq - PAGE);
  const msgs = await fetchRange(chat.id, after, Infinity, PAGE);
  if (state.chat !== chat) return;
  const box = ui.messages;
  const wasPinned = chat.pinned;
  const anchorSeq = (() => {
    const a = hooks.anchorOf();
    return a && a.el.dataset.seq ? { seq: a.el.dataset.seq, off: a.off } : null;
  })();
  const reserveSeq = chat.reserveFrom && chat.reserveFrom.dataset ? chat.reserveFrom.dataset.seq : null;
  chat.atStart = after === 0 || msgs.length === 0 || msgs[0].seq > after + 1;
  chat.atEnd = true;
  hooks.setItems(msgs);
  chat.reserveFrom = reserveSeq ? hooks.findItemEl(reserveSeq) : null;
  if (!chat.reserveFrom && msgs.length) {
    // The newest user message and its reply keep the reserved space.
    for (let i = chat.items.length - 1; i >= 0; i--) {
      if (chat.items[i].message && chat.items[i].message.role === 'user') { chat.reserveFrom = chat.items[i].el; break; }
    }
  }
  updateReserve();
  if (wasPinned) box.scrollTop = box.scrollHeight;
  else if (anchorSeq) {
    const el = hooks.findItemEl(anchorSeq.seq);
    if (el) box.scrollTop = el.offsetTop - anchorSeq.off;
  }
}

export function renderNotice() {
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

provide({ reloadItems, renderNotice });
