// recall web app: The API client: every call with the key, errors typed.

import { enc } from './dom.js';
import { hooks } from './hooks.js';
import { state } from './state.js';

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function authHeaders(json) {
  const hd = {};
  if (state.key) hd.Authorization = 'Bearer ' + state.key;
  if (json) hd['Content-Type'] = 'application/json';
  return hd;
}

export async function errorOf(res) {
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

export async function api(method, path, body, opts = {}) {
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
    if (err.status === 401 && !opts.quiet401) hooks.onUnauthorized(err);
    throw err;
  }
  return res.json();
}

export const convUrl = (id) => `/v1/conversations/${enc(id)}`;

/** Messages after `after`, at most `want`, none above `maxSeq`, following `next_after`. */
export async function fetchRange(id, after, maxSeq, want) {
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
