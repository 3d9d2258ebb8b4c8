// recall web app: plain JavaScript modules, no dependencies, no build step. This file starts
// the page; each module holds one screen or concern (state.js, dom.js, api.js, markdown.js,
// content.js, shell.js, list.js, chat.js, composer.js, dialogs.js, inspector.js).
//
// Security rules every module keeps:
// - Every piece of server data (titles, messages, errors) reaches the page through
//   textContent / text nodes built by `h` (dom.js) and the markdown renderer (markdown.js); nothing is ever
//   assigned to innerHTML, and links are made only for absolute http(s) URLs.
// - The API key lives in sessionStorage only (this tab), is sent as `Authorization: Bearer`,
//   and is never logged or put in a URL.
// - Routing is by the URL's hash: `#/`, `#/c/<id>`, `#/c/<id>/m/<seq>`, `#/c/<id>/inspect`.

import { boot } from './shell.js';

boot();
