// The console's one way to the server: same-origin requests to bai-webserver, which signs them
// on to a manager (/func/*). Every request carries the login's CSRF token, kept in this origin's
// storage: a page on another port of this host (a session's app) can replace the login cookie
// (cookies ignore ports) but cannot read this, so the webserver knows which login is ours.
const KEY = 'bai.csrf';
let csrf = '';
try { csrf = localStorage.getItem(KEY) || ''; } catch { /* storage off: this tab only */ }

export function setCsrf(token) {
  csrf = token || '';
  try {
    if (csrf) localStorage.setItem(KEY, csrf);
    else localStorage.removeItem(KEY);
  } catch { /* storage off */ }
}

export function csrfToken() {
  return csrf;
}

// A URL for an EventSource or a WebSocket, which cannot carry headers: the token in the query.
export function withToken(url) {
  return `${url}${url.includes('?') ? '&' : '?'}bai_csrf=${encodeURIComponent(csrf)}`;
}

export class ApiError extends Error {
  constructor(status, body) {
    const detail = (body && (body.msg || body.detail || body.title)) || `HTTP ${status}`;
    super(detail);
    this.status = status;
    this.body = body;
  }
}

export async function call(method, path, body) {
  const headers = { 'X-BackendAI-Version': 'v8.20240915' };
  if (csrf) headers['X-BAI-CSRF-Token'] = csrf;
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const r = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
  const text = await r.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { msg: text };
  }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

export const func = (method, path, body) => call(method, '/func' + path, body);

export async function gql(query, variables = {}) {
  const r = await func('POST', '/admin/gql', { query, variables });
  if (r && r.errors && r.errors.length) throw new ApiError(400, { msg: r.errors[0].message });
  return r.data;
}

// What to tell the user about an error, with what to do next.
export function explain(err) {
  if (!(err instanceof ApiError)) return `Cannot reach the server (${err.message}). Check your connection and retry.`;
  if (err.status === 401) return 'Your sign-in has ended. Sign in again.';
  if (err.status === 403) return `Refused: ${err.message}`;
  if (/user group \(or project\)/.test(err.message) && !/Yours:|no project/.test(err.message)) return `${err.message} You are in no project here: ask an administrator to add you to one.`;
  if (err.status === 429) return `${err.message}`;
  if (err.status >= 500) return `The server failed (${err.message}). Retry in a moment.`;
  return err.message;
}
