// The gateway's session-mode API: /server/* for the login, /func/<API path>
// for everything else (docs/api.md), with the CSRF token on every request.

let csrfToken = null;
let onLoginEnded = () => {};

export class ApiError extends Error {
  constructor(status, problem, fallback) {
    const p = problem && typeof problem === 'object' ? problem : {};
    super(p.msg || p.title || fallback || `request failed (HTTP ${status})`);
    this.status = status;
    this.problem = p;
    this.retryAfter = null;
  }
}

export function setCsrf(token) {
  csrfToken = token || null;
}
export function setLoginEndedHandler(fn) {
  onLoginEnded = fn;
}

async function readBody(res) {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function send(method, url, body, headers = {}) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json', ...headers } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new ApiError(0, null, 'Cannot reach the server: check your connection and try again.');
  }
  const data = await readBody(res);
  if (!res.ok) {
    const err = new ApiError(res.status, data, typeof data === 'string' && data.length < 200 ? data : null);
    err.retryAfter = res.headers.get('Retry-After');
    throw err;
  }
  return data;
}

// Session mode (Backend.AI's webserver).
export const server = {
  login: (username, password, domain) =>
    send('POST', '/server/login', domain ? { username, password, domain } : { username, password }),
  // POST: a browser always sends Origin with it, which the gateway wants
  // before it hands out the CSRF token (a GET carries none on plain HTTP)
  check: () => send('POST', '/server/login-check'),
  // single sign-on: the token from the URL, or {} for the sToken cookie
  tokenLogin: (token) => send('POST', '/server/token-login', token ? { sToken: token } : {}),
  logout: (everywhere = false) =>
    send(
      'POST',
      '/server/logout',
      everywhere ? { everywhere: true } : {},
      csrfToken ? { 'X-CSRF-Token': csrfToken } : {},
    ),
};

// An API call: api('GET', '/session', {query: {status: 'RUNNING'}}).
export async function api(method, path, { query, body } = {}) {
  let url = '/func' + path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    const s = q.toString();
    if (s) url += (url.includes('?') ? '&' : '?') + s;
  }
  const headers = csrfToken ? { 'X-CSRF-Token': csrfToken } : {};
  try {
    return await send(method, url, body, headers);
  } catch (e) {
    if (e.status === 401) onLoginEnded(e.message);
    throw e;
  }
}

export const get = (path, query) => api('GET', path, { query });
export const post = (path, body = {}) => api('POST', path, { body });
export const enc = encodeURIComponent;

// The gateway's open endpoints (GET /, /readyz: no login needed); /readyz
// answers 503 with the same JSON when a check fails, so that is read too.
export async function openGet(path) {
  const res = await fetch(path, { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  const data = await readBody(res);
  if (!data || typeof data !== 'object') throw new ApiError(res.status, null, `${path} answered HTTP ${res.status}`);
  return { status: res.status, data };
}
