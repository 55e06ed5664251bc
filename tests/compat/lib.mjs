// lib.mjs: what the compatibility suite needs around Backend.AI's JavaScript
// SDK (backend.ai-client 21.3.1, backend.ai-client-node.js) under Node 20:
// the browser globals the SDK touches, a cookie jar for its SESSION mode,
// shape checks for the answers, signed set-up requests, time limits.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

// ---- browser globals ------------------------------------------------------------------------
// The node build uses the global fetch, Headers, FormData, Blob and
// AbortController (Node 20 has them); it also writes a request log to
// localStorage after every answer, reads navigator.onLine when a request
// cannot be sent, and maintenance.attach_background_task opens an
// EventSource. Node 20 has none of those three: small stand-ins follow.
if (typeof globalThis.localStorage === 'undefined') {
  const store = new Map();
  globalThis.localStorage = {
    getItem: (k) => (store.has(k) ? store.get(k) : null),
    setItem: (k, v) => { store.set(k, String(v)); },
    removeItem: (k) => { store.delete(k); },
    clear: () => store.clear(),
    key: (i) => [...store.keys()][i] ?? null,
    get length() { return store.size; },
  };
}
if (typeof globalThis.navigator === 'undefined') globalThis.navigator = { onLine: true };

// A browser keeps the login cookie of SESSION mode by itself; Node's fetch
// does not. Requests the SDK marks `credentials: 'include'` (all of them in
// SESSION mode, none in API mode) send and keep cookies here, as a browser
// would: nothing more (no CSRF header, no Origin).
const jar = new Map();
const realFetch = globalThis.fetch;
export function clearCookies() { jar.clear(); }
// A cookie the browser holds before a request (single sign-on's sToken).
export function setCookie(name, value) { jar.set(name, value); }
function setCookieLines(headers) {
  if (typeof headers.getSetCookie === 'function') return headers.getSetCookie();
  const all = headers.get('set-cookie'); // older fetch: the lines joined by ", "
  return all ? all.split(/,(?=\s*[^;,=\s]+=)/) : [];
}
function keepCookies(resp) {
  for (const line of setCookieLines(resp.headers)) {
    const [pair, ...attrs] = line.split(';');
    const eq = pair.indexOf('=');
    if (eq < 1) continue;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const gone = attrs.some((a) => /^\s*max-age\s*=\s*0\s*$/i.test(a)) || value === '';
    if (gone) jar.delete(name); else jar.set(name, value);
  }
}
function cookieHeader() { return [...jar].map(([k, v]) => `${k}=${v}`).join('; '); }
globalThis.fetch = async (url, init = {}) => {
  const withJar = init && init.credentials === 'include';
  if (withJar && jar.size) {
    const h = new Headers(init.headers || {});
    h.set('Cookie', cookieHeader());
    init = { ...init, headers: h };
  }
  const resp = await realFetch(url, init);
  if (withJar) keepCookies(resp);
  return resp;
};

// EventSource: enough for attach_background_task: GET the URL (with the
// jar's cookies when withCredentials), 'open' on a 200 text/event-stream,
// 'error' otherwise; `data:` lines become 'message' events.
class MiniEventSource {
  constructor(url, opts = {}) {
    this.url = url;
    this.readyState = 0;
    this.status = null;
    this._listeners = {};
    this._abort = new AbortController();
    const headers = new Headers({ Accept: 'text/event-stream' });
    if (opts.withCredentials && jar.size) headers.set('Cookie', cookieHeader());
    realFetch(url, { headers, signal: this._abort.signal }).then(async (resp) => {
      this.status = resp.status;
      const type = resp.headers.get('Content-Type') || '';
      if (!resp.ok || !type.startsWith('text/event-stream')) {
        this.readyState = 2;
        this._detail = `${resp.status} ${type} ${(await resp.text()).slice(0, 200)}`;
        this._emit('error', { status: resp.status, detail: this._detail });
        return;
      }
      this.readyState = 1;
      this._emit('open', {});
      const dec = new TextDecoder();
      let buf = '';
      for await (const chunk of resp.body) {
        buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const data = block.split('\n').filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart()).join('\n');
          const ev = (block.split('\n').find((l) => l.startsWith('event:')) || 'event: message')
            .slice(6).trim();
          this._emit(ev || 'message', { data });
        }
      }
    }).catch((e) => {
      if (this.readyState === 2) return;
      this.readyState = 2;
      this._detail = String(e && e.message ? e.message : e);
      this._emit('error', { detail: this._detail });
    });
  }
  addEventListener(type, fn) { (this._listeners[type] ||= []).push(fn); }
  removeEventListener(type, fn) {
    this._listeners[type] = (this._listeners[type] || []).filter((f) => f !== fn);
  }
  _emit(type, ev) {
    const on = this[`on${type}`];
    if (typeof on === 'function') on(ev);
    for (const fn of this._listeners[type] || []) fn(ev);
  }
  close() { this.readyState = 2; this._abort.abort(); }
}
if (typeof globalThis.EventSource === 'undefined') globalThis.EventSource = MiniEventSource;

// The SDK prints with console.log (listAll prints a count, check_login its
// errors): keep that off the table, on stderr.
const sdkLog = (...a) => process.stderr.write(
  `sdk: ${a.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ')}\n`);
console.log = sdkLog;
console.warn = sdkLog;

export const ai = require('backend.ai-client/backend.ai-client-node.js');

// ---- time limits -------------------------------------------------------------------------------
export function withTimeout(promise, ms, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s (${what})`)), ms);
  });
  return Promise.race([Promise.resolve(promise), limit]).finally(() => clearTimeout(timer));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- errors --------------------------------------------------------------------------------------
// The SDK throws objects {type, title, message, description, statusCode, ...};
// some methods throw strings or an Error.
export function describeError(e) {
  if (e === null || e === undefined) return String(e);
  if (typeof e === 'string') return e;
  if (e instanceof Error) {
    const cause = e.cause ? ` (${describeError(e.cause)})` : '';
    return `${e.name}: ${e.message}${cause}`;
  }
  if (typeof e === 'object') {
    // a failed fetch leaves the Error itself in description/title
    const status = e.statusCode !== undefined ? `${e.statusCode} ` : '';
    const text = e.description || e.message || e.title;
    if (text instanceof Error || (text && typeof text === 'object')) return `${status}${describeError(text)}`.trim();
    let out = `${status}${text || JSON.stringify(e)}`.trim();
    // answers the SDK reads raw (rawFile) leave no message: name the request
    if (e.requestUrl && e.requestMethod && !e.description) {
      const where = String(e.requestUrl).replace(/^[a-z]+:\/\/[^/]+/, '').replace(/(token=)[^&]+/, '$1...');
      out = `${status}${e.requestMethod} ${where}: `
        + `${e.statusText || ''}`.trim();
    }
    return out;
  }
  return String(e);
}

// ---- shape checks ---------------------------------------------------------------------------------
// A check takes the SDK's answer and returns null (as expected) or why not.
const kind = (v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'object'
  ? (v.constructor && v.constructor !== Object ? v.constructor.name : 'object') : typeof v);
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const brief = (v) => {
  let s;
  try { s = JSON.stringify(v); } catch { s = String(v); }
  return s === undefined ? String(v) : s.length > 120 ? `${s.slice(0, 117)}...` : s;
};
function missingKeys(v, keys) {
  const miss = keys.filter((k) => !(k in v));
  return miss.length ? `missing ${miss.join(', ')} in ${brief(v)}` : null;
}

export const S = {
  // anything the SDK resolves with (the call did not throw)
  any: () => null,
  // an object with these keys
  obj: (...keys) => (v) => (isObj(v) ? missingKeys(v, keys) : `not an object: ${kind(v)} ${brief(v)}`),
  // an array; with keys, every item has them; min: the least length
  arr: (keys = [], min = 0) => (v) => {
    if (!Array.isArray(v)) return `not an array: ${kind(v)} ${brief(v)}`;
    if (v.length < min) return `${v.length} items, expected at least ${min}`;
    for (const it of v) {
      if (keys.length && !isObj(it)) return `an item is ${kind(it)}`;
      const m = keys.length ? missingKeys(it, keys) : null;
      if (m) return `item: ${m}`;
    }
    return null;
  },
  // a member of an object, checked in turn
  at: (key, inner) => (v) => {
    if (!isObj(v)) return `not an object: ${kind(v)} ${brief(v)}`;
    if (!(key in v)) return `no ${key} in ${brief(v)}`;
    const r = inner(v[key]);
    return r ? `${key}: ${r}` : null;
  },
  // Backend.AI 21.03's POST /admin/graphql answers the query's fields at the
  // top level (the SDK reads answer.<root>); {"data": ...} is the newer /admin/gql.
  gql: (root, inner = () => null) => (v) => {
    if (!isObj(v)) return `not an object: ${kind(v)} ${brief(v)}`;
    if (!(root in v)) {
      const wrapped = isObj(v.data) && root in v.data ? ' (it is under data: the SDK reads it at the top)' : '';
      return `no ${root} in the answer${wrapped}: ${brief(v)}`;
    }
    const r = inner(v[root]);
    return r ? `${root}: ${r}` : null;
  },
  // a GraphQL mutation's {root: {ok: true, msg}}
  mutation: (root) => S.gql(root, (m) => (isObj(m) && m.ok === true ? null : `ok is not true: ${brief(m)}`)),
  type: (t) => (v) => (typeof v === t ? null : `not a ${t}: ${kind(v)} ${brief(v)}`),
  equals: (want) => (v) => (v === want ? null : `${brief(v)}, expected ${brief(want)}`),
  matches: (re) => (v) => (typeof v === 'string' && re.test(v) ? null : `${brief(v)} does not match ${re}`),
  all: (...checks) => (v) => {
    for (const c of checks) {
      const r = c(v);
      if (r) return r;
    }
    return null;
  },
};

// ---- signed set-up requests --------------------------------------------------------------------
// What the suite prepares around a method (users, keypairs, a folder to
// share, an uploaded file) goes through Tessera's REST API, signed by the
// SDK itself (newSignedRequest), so that a method is tested on its own even
// when the SDK's own way to make that object is not served yet.
export async function raw(client, method, path, body = null, { okStatus = null, timeout = 30000 } = {}) {
  const rq = client.newSignedRequest(method, path, body);
  const init = { method, headers: rq.headers };
  if (method !== 'GET' && method !== 'HEAD' && body !== null) init.body = rq.body;
  const resp = await withTimeout(realFetch(rq.uri, init), timeout, `${method} ${path}`);
  const text = await resp.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  const out = { status: resp.status, body: json, text, headers: resp.headers };
  if (okStatus && !okStatus.includes(resp.status)) {
    throw new Error(`set-up ${method} ${path}: ${resp.status} ${text.slice(0, 300)}`);
  }
  return out;
}

export { realFetch };
