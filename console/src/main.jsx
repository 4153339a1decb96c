// The bai console: a single-page app over bai-webserver's session mode. Pages are routes of
// the History API; every server call goes through api.js. Page modules: sessions.jsx, data.jsx,
// usage.jsx, admin.jsx; shared pieces in ui.jsx.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { call, func, setCsrf } from './api.js';
import { ErrorText, Link, go, useSubmit } from './ui.jsx';
import { SessionDetail, Sessions, TerminalPage } from './sessions.jsx';
import { FolderView, Folders } from './data.jsx';
import { Usage } from './usage.jsx';
import { Admin } from './admin.jsx';
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

function SignIn({ onSignedIn }) {
  // A domain named once is remembered; empty: the server finds the email's own.
  let remembered = '';
  try { remembered = localStorage.getItem('bai.domain') || ''; } catch { /* storage off */ }
  const { submit, error, busy } = useSubmit(async (form) => {
    const domain = String(form.get('domain') || '').trim();
    const body = { username: form.get('username'), password: form.get('password') };
    if (domain) body.domain = domain;
    const r = await call('POST', '/server/login', body);
    if (!r.authenticated) return `${r.data.details || 'Sign-in failed.'} Check the email and password${domain ? ' and the domain' : ''}.`;
    try {
      if (domain) localStorage.setItem('bai.domain', domain);
      else localStorage.removeItem('bai.domain');
    } catch { /* storage off */ }
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
      <label for="domain">Domain <span class="muted">(optional: found from your email)</span></label>
      <input id="domain" name="domain" type="text" autocomplete="organization" defaultValue={remembered} />
      <ErrorText error={error} />
      <p><button type="submit" disabled={busy}>{busy ? 'Signing in…' : 'Sign in'}</button></p>
    </form>
  );
}

function Account({ who }) {
  const { submit, error, busy } = useSubmit(async (form, element) => {
    if (form.get('new1') !== form.get('new2')) return 'The two new passwords differ. Type the same one twice.';
    await func('POST', '/auth/update-password', {
      old_password: form.get('old'), new_password: form.get('new1'), new_password2: form.get('new2'),
    });
    element.reset();
    return '';
  });
  const [done, setDone] = useState(false);
  return (
    <form class="card narrow" onSubmit={async (e) => { setDone(false); await submit(e); setDone(true); }} aria-label="Change password">
      <h2>Your account</h2>
      <p>Signed in as <strong>{who.username || who.access_key}</strong> ({who.role}).</p>
      <h3>Change your password</h3>
      <label for="old">Current password</label><input id="old" name="old" type="password" autocomplete="current-password" required />
      <label for="new1">New password</label><input id="new1" name="new1" type="password" autocomplete="new-password" required minLength="8" />
      <label for="new2">New password again</label><input id="new2" name="new2" type="password" autocomplete="new-password" required minLength="8" />
      <ErrorText error={error} />
      {done && !error && !busy && <p class="ok" role="status">Password changed.</p>}
      <p><button type="submit" disabled={busy}>Change password</button></p>
    </form>
  );
}

function Page({ path, who }) {
  let m;
  if ((m = path.match(/^\/sessions\/([0-9a-f-]+)\/terminal$/))) return <TerminalPage id={m[1]} />;
  if ((m = path.match(/^\/sessions\/([0-9a-f-]+)$/))) return <SessionDetail id={m[1]} />;
  if ((m = path.match(/^\/data\/([^/]+)(?:\/(.*))?$/))) {
    const dir = (m[2] || '').split('/').filter(Boolean).map(decodeURIComponent).join('/');
    return <FolderView name={decodeURIComponent(m[1])} dir={dir} />;
  }
  if (path === '/data') return <Folders />;
  if (path === '/usage') return <Usage who={who} />;
  if (path === '/account') return <Account who={who} />;
  if ((m = path.match(/^\/admin(?:\/([a-z]+))?$/))) {
    if (!['admin', 'superadmin'].includes(who.role)) return <p class="card">Administration is for administrators. Ask one for what you need.</p>;
    return <Admin tab={m[1]} who={who} />;
  }
  return <Sessions />;
}

function App() {
  const [who, setWho] = useState(undefined);
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const on = () => setPath(location.pathname);
    addEventListener('popstate', on);
    // Signed in only when this page's stored token is its login's (see api.js).
    call('POST', '/server/login-check').then((r) => {
      setCsrf(r.authenticated ? r.data.csrf_token : '');
      setWho(r.authenticated ? r.data : null);
    }).catch(() => setWho(null));
    return () => removeEventListener('popstate', on);
  }, []);
  if (who === undefined) return <p class="muted">Loading…</p>;
  if (!who) {
    return <SignIn onSignedIn={(d) => { setCsrf(d.csrf_token); setWho(d); go(location.pathname === '/' ? '/sessions' : location.pathname); }} />;
  }
  async function signOut() {
    try { await call('POST', '/server/logout'); } catch { /* signed out either way */ }
    setCsrf('');
    setWho(null);
    go('/');
  }
  const admin = ['admin', 'superadmin'].includes(who.role);
  return (
    <>
      <header>
        <strong>bai</strong>
        <nav aria-label="Main">
          <Link href="/sessions">Sessions</Link>
          <Link href="/data">Data</Link>
          <Link href="/usage">Usage</Link>
          {admin && <Link href="/admin/users">Administration</Link>}
        </nav>
        <Link href="/account" class="who">{who.username || who.access_key} ({who.role})</Link>
        <button class="secondary" onClick={signOut} data-signout>Sign out</button>
      </header>
      <main>
        <Page path={path} who={who} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app'));
