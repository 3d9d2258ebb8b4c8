// recall web app: The inspector: what the model saw, the window and its stats.

import { api, convUrl, fetchRange } from './api.js';
import { ROLE_LABEL, jsonText, textOf } from './content.js';
import { h, num, plural } from './dom.js';
import { copyText } from './markdown.js';
import { FORMATS, PROMPT_SHOWN, state, ui } from './state.js';

export function hideInspector() {
  if (ui.insp) {
    ui.insp.hidden = true;
    ui.insp.replaceChildren();
  }
}

export function showInspector() {
  if (!ui.insp) return;
  if (ui.insp.hidden || !ui.insp.firstChild) {
    ui.insp.hidden = false;
    renderInspectorShell();
    if (state.chat && state.chat.conv) loadInspector();
  }
}

export function renderInspectorShell() {
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
export function windowRange(res) {
  const w = res && res.window;
  if (w && Number.isFinite(w.first_seq) && Number.isFinite(w.last_seq)) {
    return { first: w.first_seq, last: w.last_seq };
  }
  return null;
}

export async function loadInspector() {
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

export function stat(label, value, testid, extra) {
  return h('div', { class: 'stat' }, h('dt', null, label),
    h('dd', null, h('span', { 'data-testid': testid || null }, value), extra || null));
}

export function renderInspector(chat, res, stats, win, budget, conv) {
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
export function seqBar(from, to, segs, label) {
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

export function barLabel(first, last, win, stats) {
  if (!last) return 'No messages';
  const parts = [`Messages #${first} to #${last}`];
  if (win) parts.push(`window #${win.first} to #${win.last}`);
  parts.push(`${stats.dropped || 0} dropped`);
  if (stats.summary) parts.push(`summary of #${stats.summary.from_seq} to #${stats.summary.to_seq}`);
  const rec = stats.recalled && stats.recalled.messages;
  if (rec && rec.length) parts.push(`${rec.length} recalled`);
  return parts.join(', ');
}

export async function loadWindowRows(chat, win, mine) {
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
