// recall web app: Dialogs: rename, delete, clear, alerts.

import { api, convUrl } from './api.js';
import { $, announce, h, plural } from './dom.js';
import { hooks, provide } from './hooks.js';
import { loadInspector } from './inspector.js';
import { loadConversations, removeConv, titleOf, upsertConv } from './list.js';
import { state } from './state.js';

export function openModal(build, focusSel) {
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

export function dialogFrame(title, ...kids) {
  return [h('h2', { id: 'dialog-title', class: 'dialog-title' }, title), ...kids];
}

export function alertDialog(title, message) {
  return openModal((close) => h('div', { class: 'dialog-body' },
    dialogFrame(title, h('p', null, message),
      h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'btn btn-primary', onclick: () => close(true) }, 'OK')))), 'button');
}

export function renameConversation() {
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
        if (state.chat === chat) { chat.conv = Object.assign({}, chat.conv, c); hooks.updateChatHeader(); }
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

export function confirmAction({ title, text, okLabel, run, conflictLabel, runConflict }) {
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

export function deleteConversation() {
  const chat = state.chat;
  if (!chat || !chat.conv) return;
  const done = (id) => {
    removeConv(id);
    announce('Conversation deleted');
    hooks.go('#/');
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

export function clearConversation() {
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
        await hooks.reloadItems(chat);
        hooks.renderNotice();
        if (chat.conv) upsertConv(chat.conv);
        if (state.route.view === 'inspect') loadInspector();
      }
      announce('Conversation cleared');
    },
  });
}

provide({ alertDialog });
