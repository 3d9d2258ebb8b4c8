// The web app end to end, in Debian's Chromium driven by playwright-core, against the
// `recall serve` processes that crates/recall-cli/tests/web_app.rs starts (see there for the
// environment). Each step is a named check; the script prints one line per check, then
// "N passed, M failed", writes RECALL_RESULTS and exits non-zero when any check failed.
//
// Run by hand: NODE_PATH=.tools/node_modules RECALL_URL=… RECALL_KEY_A=… node e2e.cjs
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const assert = require('node:assert/strict');
const { chromium } = require('playwright-core');

const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

function env(name, fallback) {
  const v = process.env[name];
  if (v == null || v === '') {
    if (fallback !== undefined) return fallback;
    throw new Error(`${name} is not set`);
  }
  return v;
}

const BASE = env('RECALL_URL').replace(/\/+$/, '');
const NOAUTH = env('RECALL_NOAUTH_URL', '').replace(/\/+$/, '');
const KEY_A = env('RECALL_KEY_A');
const KEY_B = env('RECALL_KEY_B', '');
const BIG_ID = env('RECALL_BIG_ID', '');
const OTHER_ID = env('RECALL_OTHER_ID', '');
const SHOTS = env('RECALL_SCREENSHOTS', '');
const RESULTS = env('RECALL_RESULTS', '');
const DESKTOP = { width: 1280, height: 800 };
const MOBILE = { width: 360, height: 740 };
const INSPECT_MAX_TOKENS = 200;

const results = { axe: {}, axe_details: {}, checks: {} };
const outcomes = [];
const consoleProblems = [];

function log(line) {
  process.stdout.write(line + '\n');
}

let currentPage = null;

async function check(name, fn) {
  const started = Date.now();
  try {
    await fn();
    outcomes.push({ name, ok: true });
    results.checks[name] = 'pass';
    log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    outcomes.push({ name, ok: false, error: e });
    results.checks[name] = 'fail: ' + String(e && e.message ? e.message : e).split('\n')[0];
    log(`FAIL ${name} (${Date.now() - started} ms)\n     ${String(e && e.stack ? e.stack : e).split('\n').slice(0, 8).join('\n     ')}`);
    if (SHOTS && currentPage) {
      const file = path.join(SHOTS, `failed-${name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.png`);
      await currentPage.screenshot({ path: file }).catch(() => {});
      log(`     screenshot: ${file}`);
    }
    // Leave no dialog open for the next check.
    if (currentPage) {
      await currentPage.evaluate(() => {
        const d = document.querySelector('#dialog');
        if (d && d.open) d.close();
      }).catch(() => {});
    }
  }
}

// ---------------------------------------------------------------- HTTP, outside the browser

async function http(method, p, opts = {}) {
  const base = opts.base || BASE;
  const key = opts.key === undefined ? KEY_A : opts.key;
  const headers = {};
  if (key) headers.Authorization = 'Bearer ' + key;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + p, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (_) { json = text; }
  if (opts.expect !== undefined) {
    assert.equal(res.status, opts.expect, `${method} ${p}: status ${res.status}: ${text.slice(0, 300)}`);
  } else if (!res.ok) {
    throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
  }
  return json;
}

// ---------------------------------------------------------------- browser helpers

async function axe(page, screen) {
  const has = await page.evaluate(() => typeof window.axe === 'object');
  // Evaluated through the DevTools protocol: the page's CSP (script-src 'self') stays on.
  if (!has) await page.evaluate(axeSource + '\n;true');
  const r = await page.evaluate(async () => {
    const out = await window.axe.run(document, { resultTypes: ['violations'] });
    return out.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
    }));
  });
  const bad = r.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  results.axe[screen] = bad.length;
  if (r.length) results.axe_details[screen] = r;
  for (const v of r) log(`     axe ${screen}: ${v.impact} ${v.id}: ${v.help} [${v.nodes.join(', ')}]`);
  assert.equal(bad.length, 0, `axe found ${bad.length} serious or critical violations on ${screen}: ${bad.map((v) => v.id).join(', ')}`);
}

async function shot(page, name) {
  if (!SHOTS) return;
  const vp = page.viewportSize();
  const kind = vp && vp.width <= 480 ? 'mobile' : 'desktop';
  // Let fonts and the last frame settle.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  await page.screenshot({ path: path.join(SHOTS, `${name}-${kind}.png`) });
}

function watchConsole(page, label) {
  page.on('console', (msg) => {
    const t = msg.text();
    if (msg.type() !== 'error' && !/Content Security Policy/i.test(t)) return;
    // The browser logs every 4xx answer it was asked to fetch; those are expected here
    // (a wrong key, another tenant's conversation).
    if (/Failed to load resource: the server responded with a status of (401|404|409)/.test(t)) return;
    consoleProblems.push(`${label}: ${msg.type()}: ${t}`);
  });
  page.on('pageerror', (e) => consoleProblems.push(`${label}: page error: ${e.message}`));
}

async function hashId(page) {
  const h = await page.evaluate(() => location.hash);
  const m = /^#\/c\/([A-Za-z0-9_-]+)/.exec(h);
  return m ? m[1] : null;
}

async function gotoHash(page, hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

async function signIn(page, key) {
  await page.locator('#signin-form').waitFor();
  await page.fill('#signin-key', key);
  await page.click('#signin-submit');
  await page.locator('#new-conv').waitFor();
}

async function send(page, text) {
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
}

/** The text of the newest stored message (in the DOM) of `role`. */
async function lastText(page, role) {
  const loc = page.locator(`#messages article.msg-${role}[data-seq]`).last();
  return (await loc.locator('.msg-body').textContent()) || '';
}

async function waitIdle(page) {
  await page.locator('#send-btn').waitFor({ state: 'visible' });
}

// ---------------------------------------------------------------- the run

async function main() {
  if (SHOTS) fs.mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.RECALL_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const ctx = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1 });
  const page = await ctx.newPage();
  currentPage = page;
  page.setDefaultTimeout(15000);
  watchConsole(page, 'desktop');

  let chatId = null;
  let branchOriginal = null;
  let branchEdited = null;
  let inspectId = null;

  try {
    await check('sign-in screen, asset size and axe', async () => {
      await page.goto(BASE + '/');
      await page.locator('#signin-form').waitFor();
      await page.waitForLoadState('load');
      const entries = await page.evaluate(() => [
        ...performance.getEntriesByType('navigation'),
        ...performance.getEntriesByType('resource'),
      ].map((e) => ({ name: e.name, type: e.initiatorType || 'navigation', transfer: e.transferSize, body: e.encodedBodySize })));
      const size = (e) => (e.transfer > 0 ? e.transfer : e.body);
      results.asset_bytes = entries.filter((e) => e.type !== 'fetch' && e.type !== 'xmlhttprequest').reduce((a, e) => a + size(e), 0);
      results.first_load_bytes = entries.reduce((a, e) => a + size(e), 0);
      results.first_load_entries = entries.map((e) => `${e.type} ${new URL(e.name).pathname} ${size(e)}`);
      assert.ok(results.asset_bytes > 1000, `asset bytes ${results.asset_bytes}: ${JSON.stringify(entries)}`);
      assert.ok(results.asset_bytes < 200 * 1024, `first load of ${results.asset_bytes} bytes`);
      const label = await page.locator('label[for="signin-key"]').textContent();
      assert.match(label, /API key/);
      await shot(page, 'signin');
      await axe(page, 'signin');
    });

    await check('a wrong key shows an error', async () => {
      await page.fill('#signin-key', 'rk_this_is_not_a_key_0000000000');
      await page.click('#signin-submit');
      await page.locator('#signin-error').filter({ hasText: /not accepted/ }).waitFor();
      assert.equal(await page.getAttribute('#signin-key', 'aria-invalid'), 'true');
      assert.equal(await page.evaluate(() => sessionStorage.length), 0, 'a refused key is not kept');
      await axe(page, 'signin-error');
    });

    await check('the right key signs in; the key stays in sessionStorage only', async () => {
      await page.fill('#signin-key', KEY_A);
      await page.click('#signin-submit');
      await page.locator('#new-conv').waitFor();
      const where = await page.evaluate((k) => ({
        session: Object.keys(sessionStorage).some((n) => sessionStorage.getItem(n) === k),
        local: Object.keys(localStorage).some((n) => (localStorage.getItem(n) || '').includes(k)),
        url: location.href.includes(k),
      }), KEY_A);
      assert.deepEqual(where, { session: true, local: false, url: false });
      await page.locator('#signout').waitFor({ state: 'visible' });
    });

    await check('conversation list', async () => {
      await page.locator('#conv-list a.conv-link').first().waitFor();
      const big = await page.locator('#conv-list a.conv-link', { hasText: 'A very long conversation' }).count();
      assert.equal(big, 1, 'the big conversation is listed');
      const meta = await page.locator('#conv-list a.conv-link', { hasText: 'A very long conversation' }).locator('.conv-meta').textContent();
      assert.match(meta, /100,000 messages/);
      assert.match(meta, /tokens/);
      await shot(page, 'conversations');
      await axe(page, 'conversations');
    });

    await check('create and rename a conversation', async () => {
      await page.click('#new-conv');
      await page.waitForFunction(() => /^#\/c\/[A-Za-z0-9_-]+$/.test(location.hash));
      chatId = await hashId(page);
      await page.locator('#composer-input').waitFor();
      await page.waitForFunction(() => document.activeElement && document.activeElement.id === 'composer-input');
      await page.click('#rename-btn');
      await page.locator('#dlg-input').waitFor();
      await axe(page, 'rename-dialog');
      await page.fill('#dlg-input', 'E2E chat');
      await page.click('#dlg-ok');
      await page.locator('#chat-title', { hasText: 'E2E chat' }).waitFor();
      await page.locator(`#conv-list a.conv-link[data-id="${chatId}"]`, { hasText: 'E2E chat' }).waitFor();
      const c = await http('GET', `/v1/conversations/${chatId}`);
      assert.equal(c.title, 'E2E chat');
    });

    await check('send a message; the reply streams in', async () => {
      await send(page, 'hello xylophone');
      await page.locator('#messages article.msg-assistant[data-seq="2"]').waitFor();
      await waitIdle(page);
      assert.match(await lastText(page, 'assistant'), /I was sent 1 messages\./);
      assert.match(await lastText(page, 'user'), /hello xylophone/);
    });

    await check('a slow reply grows in place without moving the page', async () => {
      await page.evaluate(() => {
        window.__shift = 0;
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) if (!e.hadRecentInput) window.__shift += e.value;
        }).observe({ type: 'layout-shift', buffered: false });
      });
      await send(page, 'tell me a slow story');
      const body = page.locator('#messages article.streaming .msg-body');
      await body.filter({ hasText: 'word2 ' }).waitFor();
      await page.locator('#stop-btn').waitFor({ state: 'visible' });
      const userTop = () => page.evaluate(() => {
        const all = document.querySelectorAll('#messages article.msg-user');
        return all[all.length - 1].getBoundingClientRect().top;
      });
      const t1 = await userTop();
      const l1 = ((await body.textContent()) || '').length;
      await page.waitForTimeout(800);
      const l2 = ((await body.textContent()) || '').length;
      const t2 = await userTop();
      assert.ok(l2 > l1, `the reply grows: ${l1} then ${l2} characters`);
      assert.ok(Math.abs(t2 - t1) < 1, `the sent message stays put while the reply grows: top ${t1} then ${t2}`);
      const live = await body.getAttribute('aria-live');
      assert.equal(live, 'polite');
      results.streaming_layout_shift = await page.evaluate(() => window.__shift);
      assert.ok(results.streaming_layout_shift < 0.05, `layout shift while streaming: ${results.streaming_layout_shift}`);
      await shot(page, 'chat-streaming');
    });

    await check('Esc stops the reply; it is stored and shown as partial', async () => {
      await page.keyboard.press('Escape');
      await page.locator('#messages article.msg-assistant [data-testid="partial-badge"]').last().waitFor();
      await waitIdle(page);
      const text = await lastText(page, 'assistant');
      assert.match(text, /word1 /);
      assert.doesNotMatch(text, /word100/, 'stopped before the end');
      const c = await http('GET', `/v1/conversations/${chatId}`);
      const page1 = await http('GET', `/v1/conversations/${chatId}/messages?after=${c.last_seq - 1}&limit=1`);
      assert.equal(page1.data.length, 1);
      assert.equal(page1.data[0].message.role, 'assistant');
      assert.equal(page1.data[0].status, 'partial', 'GET messages shows the last message partial');
      await page.waitForTimeout(400);
      assert.equal(await lastText(page, 'assistant'), text, 'nothing arrives after the stop');
    });

    await check('a failed reply shows an error with Retry; the retry answers', async () => {
      await send(page, 'please fail once now');
      await page.locator('[data-testid="turn-error"]').waitFor();
      const msg = await page.locator('[data-testid="turn-error"]').textContent();
      assert.match(msg, /failed/i);
      await shot(page, 'chat-error');
      await axe(page, 'chat-error');
      await page.click('[data-testid="turn-error"] [data-testid="turn-retry"]');
      await page.locator('[data-testid="turn-error"]').waitFor({ state: 'detached' });
      await waitIdle(page);
      await page.waitForFunction(() => {
        const all = document.querySelectorAll('#messages article[data-seq]');
        const last = all[all.length - 1];
        return last && last.classList.contains('msg-assistant') && /I was sent \d+ messages/.test(last.textContent);
      });
      const id = await hashId(page);
      const c = await http('GET', `/v1/conversations/${id}`);
      const tail = await http('GET', `/v1/conversations/${id}/messages?after=${c.last_seq - 2}&limit=2`);
      assert.equal(tail.data[0].message.role, 'user');
      assert.match(JSON.stringify(tail.data[0].message.content), /please fail once now/);
      assert.equal(tail.data[1].status, 'complete');
      results.retry_forked = id !== chatId;
    });

    await check('a reply cut at its output limit is marked as such', async () => {
      await send(page, 'this answer gets cut off');
      const last = page.locator('#messages article.msg-assistant').last();
      await last.locator('[data-testid="capped-badge"]').waitFor();
      await waitIdle(page);
      assert.match(await last.locator('[data-testid="capped-badge"]').textContent(), /cut at the output limit/);
      const id = await hashId(page);
      const c = await http('GET', `/v1/conversations/${id}`);
      const tail = await http('GET', `/v1/conversations/${id}/messages?after=${c.last_seq - 1}&limit=1`);
      assert.equal(tail.data[0].message.metadata.stop_reason, 'max_tokens');
      // A reply that ended on its own has no badge.
      const earlier = page.locator('#messages article.msg-assistant[data-seq="2"] [data-testid="capped-badge"]');
      assert.equal(await earlier.count(), 0);
    });

    await check('edit a user message: a new branch, and ‹ 2/2 › switches between them', async () => {
      await page.click('#new-conv');
      await page.waitForFunction((old) => /^#\/c\/[A-Za-z0-9_-]+$/.test(location.hash) && !location.hash.includes(old), chatId);
      branchOriginal = await hashId(page);
      await page.locator('#composer-input').waitFor();
      await send(page, 'first question?');
      await page.locator('#messages article.msg-assistant[data-seq="2"]', { hasText: 'You said: first question?' }).waitFor();
      await waitIdle(page);
      await page.click('#messages article.msg-user[data-seq="1"] .msg-edit');
      await page.locator('#messages article.msg-user[data-seq="1"] .edit-input').waitFor();
      await page.fill('#messages article.msg-user[data-seq="1"] .edit-input', 'edited question?');
      await page.click('#messages article.msg-user[data-seq="1"] .edit-save');
      await page.locator('#messages article.msg-assistant[data-seq="2"]', { hasText: 'You said: edited question?' }).waitFor();
      await waitIdle(page);
      branchEdited = await hashId(page);
      assert.notEqual(branchEdited, branchOriginal, 'the edit made a new conversation');
      const nav = page.locator('#messages article[data-seq="1"] [data-testid="branch-nav"]');
      await nav.locator('[data-testid="branch-pos"]', { hasText: '2/2' }).waitFor();
      await shot(page, 'chat');
      await axe(page, 'chat');
      await nav.locator('[data-testid="branch-prev"]').click();
      await page.waitForFunction((id) => location.hash.startsWith('#/c/' + id), branchOriginal);
      await page.locator('#messages article[data-seq="1"] [data-testid="branch-pos"]', { hasText: '1/2' }).waitFor();
      assert.match(await page.locator('#messages article[data-seq="1"] .msg-body').textContent(), /first question\?/);
      await page.locator('#messages article[data-seq="1"] [data-testid="branch-next"]').click();
      await page.waitForFunction((id) => location.hash.startsWith('#/c/' + id), branchEdited);
      await page.locator('#messages article[data-seq="1"] [data-testid="branch-pos"]', { hasText: '2/2' }).waitFor();
      assert.match(await page.locator('#messages article[data-seq="1"] .msg-body').textContent(), /edited question\?/);
    });

    await check('retry a reply: a new branch at the reply', async () => {
      const before = await hashId(page);
      await page.click('#messages article.msg-assistant[data-seq="2"] .msg-retry');
      await page.waitForFunction((id) => !location.hash.includes(id), before);
      await page.locator('#messages article.msg-assistant[data-seq="2"]', { hasText: 'You said: edited question?' }).waitFor();
      await waitIdle(page);
      await page.locator('#messages article[data-seq="2"] [data-testid="branch-pos"]', { hasText: '2/2' }).waitFor();
    });

    await check('search finds a conversation by a word in it', async () => {
      await page.fill('#search-input', 'xylophone');
      await page.press('#search-input', 'Enter');
      const hit = page.locator('#search-results a.hit-link', { hasText: 'E2E chat' });
      await hit.first().waitFor();
      assert.match(await hit.first().locator('mark').first().textContent(), /xylophone/i);
      await axe(page, 'search');
      await hit.first().click();
      await page.waitForFunction((id) => location.hash.startsWith('#/c/' + id), chatId);
      await page.locator('#messages article.msg-user[data-seq="1"]', { hasText: 'hello xylophone' }).waitFor();
      await page.fill('#search-input', '');
      await page.press('#search-input', 'Enter');
    });

    await check('clear and delete: a conversation with branches says why, then deletes them all', async () => {
      assert.ok(branchOriginal, 'the branch test made a conversation');
      await gotoHash(page, `#/c/${branchOriginal}`);
      await page.locator('#messages article[data-seq="1"]').waitFor();
      await page.click('#clear-btn');
      await page.click('#dlg-ok');
      await page.locator('#dialog .form-error').filter({ hasText: /./ }).waitFor();
      const why = await page.locator('#dialog .form-error').textContent();
      assert.ok(why.length > 5, `the conflict is explained: "${why}"`);
      await axe(page, 'clear-dialog');
      await page.click('#dlg-cancel');
      await page.click('#delete-btn');
      await page.click('#dlg-ok');
      await page.locator('#dialog .form-error').filter({ hasText: /./ }).waitFor();
      await page.click('#dlg-cascade');
      await page.waitForFunction(() => location.hash === '#/' || location.hash === '');
      await http('GET', `/v1/conversations/${branchOriginal}`, { expect: 404 });
      await http('GET', `/v1/conversations/${branchEdited}`, { expect: 404 });
      await page.waitForFunction((id) => !document.querySelector(`#conv-list a.conv-link[data-id="${id}"]`), branchOriginal);
      // A conversation without branches clears.
      const c = await http('POST', '/v1/conversations', { body: { title: 'To be cleared' } });
      await http('POST', `/v1/conversations/${c.id}/messages`, { body: { role: 'user', content: 'soon gone' } });
      await gotoHash(page, `#/c/${c.id}`);
      await page.locator('#messages article[data-seq="1"]').waitFor();
      await page.click('#clear-btn');
      await page.click('#dlg-ok');
      await page.locator('#messages article[data-seq="1"]').waitFor({ state: 'detached' });
      const after = await http('GET', `/v1/conversations/${c.id}`);
      assert.equal(after.message_count, 0);
    });

    await check('the inspector shows the window, drops and tokens of the next request', async () => {
      const conv = await http('POST', '/v1/conversations', { body: { title: 'Inspector sample' } });
      inspectId = conv.id;
      const messages = [];
      for (let i = 1; i <= 30; i++) {
        messages.push(i % 2
          ? { role: 'user', content: `Question ${i}: what do we know about topic number ${i} and its neighbours?` }
          : { role: 'assistant', content: `Answer ${i}: topic ${i - 1} is covered in **chapter ${i}**, with notes.` });
      }
      await http('POST', `/v1/conversations/${inspectId}/messages`, { body: { messages } });
      await gotoHash(page, `#/c/${inspectId}/inspect`);
      await page.locator('#inspector[data-status="ready"]').waitFor();
      await page.fill('#insp-max-tokens', String(INSPECT_MAX_TOKENS));
      await page.locator(`#inspector[data-status="ready"][data-max-tokens="${INSPECT_MAX_TOKENS}"]`).waitFor();
      const read = async (id) => {
        const t = await page.locator(`#inspector [data-testid="${id}"]`).textContent();
        return Number(t.replace(/[^0-9]/g, ''));
      };
      const shown = {
        id: inspectId,
        max_tokens: INSPECT_MAX_TOKENS,
        window_first: await read('window-first'),
        window_last: await read('window-last'),
        included: await read('included'),
        dropped: await read('dropped'),
        total_tokens: await read('total-tokens'),
        budget: await read('budget'),
      };
      results.inspect = shown;
      const ctxr = await http('POST', `/v1/conversations/${inspectId}/context`, { body: { max_tokens: INSPECT_MAX_TOKENS } });
      const s = ctxr.stats;
      assert.ok(s.dropped > 0, `messages are dropped at ${INSPECT_MAX_TOKENS} tokens: ${JSON.stringify(s)}`);
      assert.equal(shown.included, s.included, 'included');
      assert.equal(shown.dropped, s.dropped, 'dropped');
      assert.equal(shown.total_tokens, s.tokens, 'tokens');
      assert.equal(shown.budget, INSPECT_MAX_TOKENS);
      assert.equal(shown.window_last, 30);
      assert.deepEqual({ first_seq: shown.window_first, last_seq: shown.window_last }, ctxr.window, 'window');
      assert.equal(shown.window_last - shown.window_first + 1, s.included + (s.skipped || 0));
      const rows = await page.locator('#inspector .window-list li').count();
      assert.equal(rows, shown.included, 'one row per message in the window');
      const bar = page.locator('#inspector .seqbar').first();
      assert.equal(await bar.locator('.seg-window').count(), 1, 'the window is drawn as one range');
      assert.equal(await bar.locator('.seg-dropped').count(), 1, 'the dropped messages are drawn as one range');
      const prompt = await page.locator('#inspector [data-testid="prompt"]').textContent();
      assert.match(prompt, /Question 29/);
      assert.doesNotMatch(prompt, /Question 1:/);
      await shot(page, 'inspector');
      await axe(page, 'inspector');
      for (const f of ['anthropic', 'openai', 'bracket', 'xml']) {
        // xml renders the next message after the history: it needs one.
        await page.fill('#insp-current', f === 'xml' ? 'And topic 31?' : '');
        await page.selectOption('#insp-format', f);
        await page.locator(`#inspector[data-status="ready"][data-format="${f}"]`).waitFor();
        const p = await page.locator('#inspector [data-testid="prompt"]').textContent();
        assert.match(p, /Question 29/, `the ${f} prompt`);
        if (f === 'anthropic' || f === 'openai') assert.match(p.trim(), /^\{/, `the ${f} prompt is a request body`);
        if (f === 'xml') assert.match(p, /And topic 31\?/, 'the xml prompt ends with the next message');
      }
      await page.fill('#insp-current', '');
      await page.selectOption('#insp-format', '');
      await page.locator('#inspector[data-status="ready"][data-format]').waitFor();
    });

    await check('the inspector lists what recall adds, with the scores the server reports', async () => {
      assert.ok(results.inspect, 'the inspector check ran first');
      const id = results.inspect.id;
      await gotoHash(page, `#/c/${id}/inspect`);
      await page.locator('#inspector[data-status="ready"]').waitFor();
      await page.fill('#insp-max-tokens', '400');
      await page.fill('#insp-recall-tokens', '100');
      await page.click('#insp-update');
      await page.locator('#inspector[data-status="ready"] ul.recalled li').first().waitFor();
      const shown = await page.locator('#inspector ul.recalled li').allTextContents();
      const ctx = await http('POST', `/v1/conversations/${id}/context`, { body: { max_tokens: 400, recall_tokens: 100 } });
      const want = ctx.stats.recalled.messages.map((m) =>
        `#${m.seq} · score ${Number(m.score).toFixed(3)}${m.hit ? ' · hit' : ' · context'}`);
      assert.ok(want.length > 0, `something is recalled: ${JSON.stringify(ctx.stats.recalled)}`);
      assert.deepEqual(shown, want);
      // Recalled messages are older than the window.
      for (const m of ctx.stats.recalled.messages) assert.ok(m.seq < ctx.window.first_seq, `#${m.seq} is before the window`);
      await shot(page, 'inspector-recall');
      await page.fill('#insp-recall-tokens', '');
      await page.fill('#insp-max-tokens', '');
    });

    await check('markdown renders as DOM; message HTML and script URLs stay text', async () => {
      const conv = await http('POST', '/v1/conversations', { body: { title: '<img src=x onerror="window.__pwned=1"> title' } });
      const evil = [
        '# Heading one',
        'Some **bold**, *italic*, `inline code` and a [safe link](https://example.com/a?b=1).',
        '',
        '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>',
        '[bad link](javascript:window.__pwned=3) and <a href="javascript:void(0)">raw anchor</a>',
        '',
        '> a quote',
        '',
        '- one',
        '- two',
        '',
        '1. first',
        '2. second',
        '',
        '```js',
        'const x = "<b>not bold</b>";',
        '```',
      ].join('\n');
      await http('POST', `/v1/conversations/${conv.id}/messages`, {
        body: { messages: [
          { role: 'user', content: 'Show me markdown' },
          { role: 'assistant', content: [
            { type: 'text', text: evil },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: '<b>Oslo</b>' } },
          ] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'rainy <i>and</i> cold' }] },
        ] },
      });
      await gotoHash(page, `#/c/${conv.id}`);
      const body = page.locator('#messages article.msg-assistant[data-seq="2"] .msg-body');
      await body.waitFor();
      const dom = await body.evaluate((el) => ({
        img: el.querySelectorAll('img, script, iframe').length,
        anchors: [...el.querySelectorAll('a')].map((a) => ({ href: a.getAttribute('href'), rel: a.rel, target: a.target, text: a.textContent })),
        h: el.querySelectorAll('h2').length,
        strong: el.querySelectorAll('strong').length,
        em: el.querySelectorAll('em').length,
        code: el.querySelectorAll(':not(pre) > code').length,
        quote: el.querySelectorAll('blockquote').length,
        ul: el.querySelectorAll('ul > li').length,
        ol: el.querySelectorAll('ol > li').length,
        pre: el.querySelector('.code-block pre') ? el.querySelector('.code-block pre').textContent : null,
        copy: el.querySelectorAll('.code-block button').length,
        details: el.querySelectorAll('details').length,
        text: el.textContent,
      }));
      assert.equal(dom.img, 0, 'no element from message HTML');
      assert.deepEqual(dom.anchors, [{ href: 'https://example.com/a?b=1', rel: 'noopener noreferrer', target: '_blank', text: 'safe link' }]);
      assert.ok(dom.text.includes('<img src=x onerror='), 'the HTML is shown as text');
      assert.ok(dom.text.includes('javascript:window.__pwned=3'), 'the script link is shown as text');
      assert.deepEqual([dom.h, dom.strong, dom.em, dom.code, dom.quote, dom.ul, dom.ol, dom.copy, dom.details],
        [1, 1, 1, 1, 1, 2, 2, 1, 1]);
      assert.equal(dom.pre, 'const x = "<b>not bold</b>";');
      await page.locator('#messages article[data-seq="3"] details').waitFor();
      assert.equal(await page.evaluate(() => window.__pwned), undefined, 'no script ran');
      assert.ok((await page.locator('#chat-title').textContent()).startsWith('<img'), 'the title is text');
      await shot(page, 'markdown');
      await axe(page, 'markdown');
    });

    await check("another tenant's conversation is not found by URL", async () => {
      assert.ok(OTHER_ID, 'RECALL_OTHER_ID');
      let secret = ['7781', "Tenant b's private plans"];
      if (KEY_B) {
        const c = await http('GET', `/v1/conversations/${OTHER_ID}`, { key: KEY_B });
        secret = [c.title, '7781'].filter(Boolean);
      }
      await http('GET', `/v1/conversations/${OTHER_ID}`, { expect: 404 });
      await gotoHash(page, `#/c/${OTHER_ID}`);
      await page.locator('[data-testid="open-error"]').waitFor();
      assert.match(await page.locator('#chat-title').textContent(), /not found/i);
      const text = await page.evaluate(() => document.body.innerText);
      for (const s of secret) assert.ok(!text.includes(s), `the page shows "${s}" of tenant b`);
      await shot(page, 'not-found');
      await axe(page, 'not-found');
    });

    await check('the 100,000-message conversation opens fast with a bounded DOM', async () => {
      assert.ok(BIG_ID, 'RECALL_BIG_ID');
      const big = await http('GET', `/v1/conversations/${BIG_ID}`);
      const last = big.last_seq;
      await page.goto('about:blank');
      await page.goto(`${BASE}/#/c/${BIG_ID}`);
      const ms = await page.waitForFunction((seq) => {
        const el = document.querySelector(`#messages article[data-seq="${seq}"]`);
        if (!el) return false;
        const r = el.getBoundingClientRect();
        const box = document.querySelector('#messages').getBoundingClientRect();
        return r.height > 0 && r.top < box.bottom && r.bottom > box.top ? performance.now() : false;
      }, last, { polling: 'raf', timeout: 30000 });
      results.big_open_ms = Math.round((await ms.jsonValue()) * 10) / 10;
      const count = () => page.evaluate(() => document.getElementsByTagName('*').length);
      results.big_dom_elements = await count();
      assert.ok(results.big_dom_elements < 5000, `${results.big_dom_elements} elements`);
      await shot(page, 'big');
      // Scroll up through many pages: older messages load, the DOM stays bounded.
      const firstSeq = () => page.evaluate(() => Number(document.querySelector('#messages article[data-seq]').dataset.seq));
      const start = await firstSeq();
      for (let i = 0; i < 12; i++) {
        const before = await firstSeq();
        await page.evaluate(() => { document.querySelector('#messages').scrollTop = 0; });
        await page.waitForFunction((b) => Number(document.querySelector('#messages article[data-seq]').dataset.seq) < b, before);
      }
      const reached = await firstSeq();
      assert.ok(reached <= start - 500, `scrolled up from #${start} to #${reached}`);
      results.big_dom_elements_after_scroll = await count();
      assert.ok(results.big_dom_elements_after_scroll < 5000, `${results.big_dom_elements_after_scroll} elements after scrolling`);
      const rendered = await page.locator('#messages article[data-seq]').count();
      assert.ok(rendered <= 200, `${rendered} messages rendered`);
    });

    await check('sign out clears the key', async () => {
      await page.click('#signout');
      await page.locator('#signin-form').waitFor();
      assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    });

    await check('a --no-auth server opens without sign-in', async () => {
      assert.ok(NOAUTH, 'RECALL_NOAUTH_URL');
      const c2 = await browser.newContext({ viewport: DESKTOP, deviceScaleFactor: 1 });
      const p2 = await c2.newPage();
      currentPage = p2;
      watchConsole(p2, 'no-auth');
      p2.setDefaultTimeout(15000);
      await p2.goto(NOAUTH + '/');
      await p2.locator('#new-conv').waitFor();
      assert.equal(await p2.locator('#signin-form').count(), 0, 'no sign-in form');
      assert.equal(await p2.locator('#signout').isVisible(), false, 'no sign-out button');
      await p2.click('#new-conv');
      await p2.locator('#composer-input').waitFor();
      await send(p2, 'hello without keys');
      await p2.locator('#messages article.msg-assistant[data-seq="2"]', { hasText: 'I was sent 1 messages.' }).waitFor();
      await shot(p2, 'noauth');
      await axe(p2, 'noauth');
      await c2.close();
      currentPage = page;
    });

    await check('mobile: each screen at 360 px', async () => {
      const mc = await browser.newContext({ viewport: MOBILE, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
      const mp = await mc.newPage();
      currentPage = mp;
      watchConsole(mp, 'mobile');
      mp.setDefaultTimeout(15000);
      await mp.goto(BASE + '/');
      await mp.locator('#signin-form').waitFor();
      await shot(mp, 'signin');
      await axe(mp, 'signin-mobile');
      await signIn(mp, KEY_A);
      await mp.locator('#conv-list a.conv-link', { hasText: 'E2E chat' }).waitFor();
      assert.equal(await mp.locator('#main').isVisible(), false, 'the list is a screen of its own');
      await shot(mp, 'conversations');
      await axe(mp, 'conversations-mobile');
      const overflow = () => mp.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(await overflow() <= 0, 'no horizontal scrolling');
      await mp.locator('#conv-list a.conv-link', { hasText: 'E2E chat' }).click();
      await mp.locator('#messages article.msg-assistant').first().waitFor();
      assert.equal(await mp.locator('#sidebar').isVisible(), false, 'the chat is a screen of its own');
      assert.ok(await overflow() <= 0, 'no horizontal scrolling in the chat');
      await shot(mp, 'chat');
      await axe(mp, 'chat-mobile');
      await gotoHash(mp, `#/c/${inspectId || chatId}/inspect`);
      await mp.locator('#inspector[data-status="ready"]').waitFor();
      assert.equal(await mp.locator('#main').isVisible(), false, 'the inspector is a screen of its own');
      await mp.fill('#insp-max-tokens', String(INSPECT_MAX_TOKENS));
      await mp.locator(`#inspector[data-status="ready"][data-max-tokens="${INSPECT_MAX_TOKENS}"]`).waitFor();
      assert.ok(await overflow() <= 0, 'no horizontal scrolling in the inspector');
      await shot(mp, 'inspector');
      await axe(mp, 'inspector-mobile');
      await mp.locator('#inspector a.back-btn').click();
      await mp.locator('#messages').waitFor({ state: 'visible' });
      await mc.close();
      currentPage = page;
    });

    await check('keyboard: the sign-in form and the composer work without a mouse', async () => {
      const kc = await browser.newContext({ viewport: DESKTOP });
      const kp = await kc.newPage();
      currentPage = kp;
      watchConsole(kp, 'keyboard');
      kp.setDefaultTimeout(15000);
      await kp.goto(BASE + '/');
      await kp.locator('#signin-form').waitFor();
      assert.equal(await kp.evaluate(() => document.activeElement.id), 'signin-key');
      await kp.keyboard.type(KEY_A);
      await kp.keyboard.press('Enter');
      await kp.locator('#new-conv').waitFor();
      await kp.focus('#new-conv');
      await kp.keyboard.press('Enter');
      await kp.waitForFunction(() => document.activeElement && document.activeElement.id === 'composer-input');
      await kp.keyboard.type('line one');
      await kp.keyboard.press('Shift+Enter');
      await kp.keyboard.type('line two');
      assert.equal(await kp.inputValue('#composer-input'), 'line one\nline two', 'Shift+Enter adds a line');
      await kp.keyboard.press('Enter');
      await kp.locator('#messages article.msg-assistant[data-seq="2"]').waitFor();
      const outline = await kp.evaluate(() => {
        const b = document.querySelector('#rename-btn');
        b.focus();
        return getComputedStyle(b).outlineStyle;
      });
      assert.notEqual(outline, 'none', 'focus is visible');
      await kc.close();
      currentPage = page;
    });

    await check('no script errors and no CSP violations', async () => {
      assert.deepEqual(consoleProblems, []);
    });
  } finally {
    await browser.close().catch(() => {});
  }

  const failed = outcomes.filter((o) => !o.ok);
  if (RESULTS) {
    fs.writeFileSync(RESULTS, JSON.stringify(results, null, 2));
    log(`results: ${RESULTS}`);
  }
  log(`big_open_ms: ${results.big_open_ms}, asset_bytes: ${results.asset_bytes}, inspect: ${JSON.stringify(results.inspect || null)}`);
  log(`${outcomes.length - failed.length} passed, ${failed.length} failed`);
  process.exitCode = failed.length ? 1 : 0;
}

main().catch((e) => {
  log(`FAIL the run: ${e && e.stack ? e.stack : e}`);
  log(`${outcomes.filter((o) => o.ok).length} passed, ${outcomes.filter((o) => !o.ok).length + 1} failed`);
  process.exitCode = 1;
});
