// The bai console: a single-page app over bai-webserver's session mode. Pages are routes of
// the History API (/sessions, /sessions/ID/terminal); every server call goes through api.js.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, explain, func, gql, setCsrf } from './api.js';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import './style.css';

// The page's Content-Security-Policy admits style elements that carry its nonce: the ones
// scripts make here (xterm.js makes some) get it; one injected into the markup could not.
const styleNonce = document.querySelector('meta[name="bai-style-nonce"]')?.content;
if (styleNonce) {
  const create = document.createElement.bind(document);
  document.createElement = (tag, options) => {
    const element = create(tag, options);
    if (String(tag).toLowerCase() === 'style') element.nonce = styleNonce;
    return element;
  };
}

function go(path) {
  history.pushState(null, '', path);
  dispatchEvent(new PopStateEvent('popstate'));
}

function Link({ href, children }) {
  const current = location.pathname === href ? 'page' : undefined;
  return (
    <a href={href} aria-current={current} onClick={(e) => { e.preventDefault(); go(href); }}>
      {children}
    </a>
  );
}

// A form's submit: busy while `action(formData, formElement)` runs; its error (thrown, or a
// message it returns) shown with what to do next.
function useSubmit(action) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      setError((await action(new FormData(e.target), e.target)) || '');
    } catch (err) {
      setError(explain(err));
    } finally {
      setBusy(false);
    }
  }
  return { submit, error, busy };
}

function SignIn({ onSignedIn }) {
  const { submit, error, busy } = useSubmit(async (form) => {
    const r = await call('POST', '/server/login', {
      username: form.get('username'), password: form.get('password'),
    });
    if (!r.authenticated) return `${r.data.details || 'Sign-in failed.'} Check the email and password.`;
    onSignedIn({ ...r.data, username: form.get('username') });
    return '';
  });
  return (
    <form class="signin card" onSubmit={submit} aria-label="Sign in">
      <h1>Sign in to bai</h1>
      <label for="username">Email</label>
      <input id="username" name="username" type="text" autocomplete="username" required autofocus />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      {error && <p class="error" role="alert">{error}</p>}
      <p><button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button></p>
    </form>
  );
}

const SESSION_FIELDS = 'id name status status_info image created_at occupying_slots';

function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  for (n = Number(n); n >= 1024 && i < units.length - 1; i++) n /= 1024;
  return `${Number.isInteger(n) ? n : n.toFixed(1)} ${units[i]}`;
}

// "cpu 1, mem 1 GiB, cuda.shares 0.5": what a session holds, memory in binary units.
function slots(json) {
  try {
    const o = JSON.parse(json || '{}');
    return Object.entries(o).filter(([, v]) => Number(v) > 0)
      .map(([k, v]) => `${k} ${k === 'mem' ? bytes(v) : v}`).join(', ');
  } catch {
    return '';
  }
}

// The session list: read once, then kept current by the manager's event stream (one SSE
// connection; each event re-reads only that session).
function Sessions() {
  const [sessions, setSessions] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let closed = false;
    const load = async () => {
      try {
        const d = await gql(`query($limit:Int!,$offset:Int!){compute_session_list(limit:$limit,offset:$offset){total_count items{${SESSION_FIELDS}}}}`,
          { limit: 1000, offset: 0 });
        if (!closed) setSessions(d.compute_session_list.items);
      } catch (err) {
        if (!closed) setError(explain(err));
      }
    };
    load();
    const events = new EventSource('/func/events/session');
    const refresh = async (e) => {
      let id;
      try { id = JSON.parse(e.data).sessionId; } catch { return; }
      if (!id) return;
      try {
        const d = await gql(`query($id:UUID!){compute_session(id:$id){${SESSION_FIELDS}}}`, { id });
        const s = d.compute_session;
        if (!s || closed) return;
        setSessions((list) => {
          const rest = (list || []).filter((x) => x.id !== s.id);
          return [s, ...rest];
        });
      } catch { /* the next event or a reload shows it */ }
    };
    for (const name of ['session_enqueued', 'session_scheduled', 'session_preparing', 'session_started',
      'session_terminating', 'session_terminated', 'session_cancelled', 'session_success', 'session_failure']) {
      events.addEventListener(name, refresh);
    }
    return () => { closed = true; events.close(); };
  }, []);
  return (
    <section>
      <StartSession />
      <div class="card">
        <h2>Sessions</h2>
        {error && <p class="error" role="alert">{error}</p>}
        {!sessions && !error && <p class="muted">Loading…</p>}
        {sessions && sessions.length === 0 && <p class="muted">No sessions yet. Start one above.</p>}
        {sessions && sessions.length > 0 && (
          <table>
            <thead><tr><th>Name</th><th>Status</th><th class="hide-narrow">Image</th><th class="hide-narrow">Resources</th><th>Age</th><th></th></tr></thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} data-session={s.name}>
                  <td>{s.name}</td>
                  <td><span class={`status ${s.status}`}>{s.status}</span>{s.status === 'PENDING' && s.status_info ? <div class="muted">{s.status_info}</div> : null}</td>
                  <td class="hide-narrow">{s.image}</td>
                  <td class="hide-narrow">{slots(s.occupying_slots)}</td>
                  <td>{age(s.created_at)}</td>
                  <td>{s.status === 'RUNNING' && <Link href={`/sessions/${s.id}/terminal`}>Terminal</Link>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </section>
  );
}

function StartSession() {
  const { submit, error, busy } = useSubmit(async (form, element) => {
    const name = form.get('name') || `web-${Math.random().toString(36).slice(2, 8)}`;
    const body = { name, image: form.get('image'), type: 'interactive' };
    await func('POST', '/session', body);
    element.reset();
    return '';
  });
  return (
    <form class="card" onSubmit={submit} aria-label="Start a session">
      <h2>Start a session</h2>
      <div class="row">
        <div><label for="image">Image</label><input id="image" name="image" defaultValue="python" required /></div>
        <div><label for="sname">Name (optional)</label><input id="sname" name="name" pattern="[A-Za-z0-9_.\-]{4,64}" /></div>
        <div><button type="submit" disabled={busy}>{busy ? 'Starting…' : 'Start'}</button></div>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
    </form>
  );
}

function b64encode(text) {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}
function b64decode(data) {
  const bin = atob(data);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return bytes;
}

// A terminal in the page: xterm.js over the session's /pty stream (bridged by the webserver).
function TerminalPage({ id }) {
  const box = useRef(null);
  const [state, setState] = useState('connecting');
  useEffect(() => {
    const term = new Terminal({ cursorBlink: true, convertEol: false, fontSize: 14 });
    term.open(box.current);
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(`${proto}//${location.host}/func/stream/session/${id}/pty`);
    const send = (o) => ws.readyState === 1 && ws.send(JSON.stringify(o));
    ws.onopen = () => {
      setState('connected');
      send({ type: 'resize', rows: term.rows, cols: term.cols });
      term.focus();
    };
    ws.onmessage = (e) => {
      let f;
      try { f = JSON.parse(e.data); } catch { return; }
      if (f.type === 'out') term.write(b64decode(f.data));
      else if (f.type === 'exit') setState(`ended (exit ${f.code})`);
      else if (f.type === 'error') term.write(`\r\n[${f.data}]\r\n`);
    };
    ws.onclose = (e) => setState((s) => (s.startsWith('ended') ? s : `closed (${e.code})`));
    const input = term.onData((d) => send({ type: 'stdin', chars: b64encode(d) }));
    const ping = setInterval(() => send({ type: 'ping' }), 30000);
    return () => { clearInterval(ping); input.dispose(); ws.close(); term.dispose(); };
  }, [id]);
  return (
    <section class="card">
      <h2>Terminal <span class="muted" data-terminal-state={state}>{state}</span></h2>
      <div class="term" ref={box} data-terminal />
      <p><Link href="/sessions">Back to sessions</Link></p>
    </section>
  );
}

function App() {
  const [who, setWho] = useState(undefined);
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const on = () => setPath(location.pathname);
    addEventListener('popstate', on);
    call('POST', '/server/login-check').then((r) => {
      if (r.authenticated) setCsrf(r.data.csrf_token);
      setWho(r.authenticated ? r.data : null);
    }).catch(() => setWho(null));
    return () => removeEventListener('popstate', on);
  }, []);
  if (who === undefined) return <p class="muted">Loading…</p>;
  if (!who) {
    return <SignIn onSignedIn={(d) => { setCsrf(d.csrf_token); setWho(d); go('/sessions'); }} />;
  }
  async function signOut() {
    try { await call('POST', '/server/logout'); } catch { /* signed out either way */ }
    setCsrf('');
    setWho(null);
    go('/');
  }
  const terminal = path.match(/^\/sessions\/([0-9a-f-]+)\/terminal$/);
  return (
    <>
      <header>
        <strong>bai</strong>
        <nav><Link href="/sessions">Sessions</Link></nav>
        <span class="who">{who.username || who.access_key} ({who.role})</span>
        <button class="secondary" onClick={signOut}>Sign out</button>
      </header>
      <main>
        {terminal ? <TerminalPage id={terminal[1]} /> : <Sessions />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app'));
