// recall web app: Constants and the one state object every screen reads and writes.

export const KEY_STORE = 'recall.apiKey';
export const PAGE = 50; // messages per page read
export const MAX_RENDERED = 150; // messages kept in the DOM at once
export const LIST_SHOWN = 200; // conversations rendered per "show more"
export const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;
export const FORMATS = ['transcript', 'bracket', 'xml', 'task', 'anthropic', 'openai'];
export const PROMPT_SHOWN = 200000; // characters of a rendered prompt shown in the inspector

export const state = {
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
export const ui = {};
