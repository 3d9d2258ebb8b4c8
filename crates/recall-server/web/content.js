// recall web app: A message's content blocks as DOM nodes.

import { h } from './dom.js';
import { markdown } from './markdown.js';

export function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((b) => b && (b.type === 'text' || b.type === 'input_text' || b.type === 'output_text'))
    .map((b) => String(b.text ?? '')).join('\n');
}

export function jsonText(v) {
  try { return JSON.stringify(v, null, 2) ?? ''; } catch (_) { return String(v); }
}

export function toolResultText(c) {
  if (c == null) return '(no content)';
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    return c.map((b) => (b && b.type === 'text' ? String(b.text ?? '') : b && b.type === 'image' ? '[image]' : jsonText(b))).join('\n');
  }
  return jsonText(c);
}

export function details(summaryText, body, cls) {
  return h('details', { class: 'tool ' + (cls || '') },
    h('summary', null, summaryText),
    h('pre', { tabindex: '0', class: 'tool-pre' }, body));
}

export function renderContent(content) {
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

export const ROLE_LABEL = { user: 'You', assistant: 'Assistant', system: 'System', tool: 'Tool', developer: 'Developer' };

export function hasToolResult(content) {
  return Array.isArray(content) && content.some((b) => b && b.type === 'tool_result');
}
