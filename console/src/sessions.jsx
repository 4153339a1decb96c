// Sessions: the live list, the start form, a session's page (apps, logs, events, actions) and
// its terminals.
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, csrfToken, explain, func, gql, withToken } from './api.js';
import { ErrorText, Link, age, bytes, go, parseSize, saveBlob, slots, useLoad, useSubmit } from './ui.jsx';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';

const SESSION_FIELDS = 'id name status status_info image created_at occupying_slots requested_slots type';
const SESSION_EVENTS = ['session_enqueued', 'session_scheduled', 'session_preparing', 'session_started',
  'session_terminating', 'session_terminated', 'session_cancelled', 'session_success', 'session_failure',
  'kernel_pulling'];

// status_info while the agent pulls the image ("pulling IMAGE (DONE/TOTAL bytes)", the one
// codec of protocol::EncodePullInfo); null otherwise.
function pullOf(info) {
  const m = /^pulling (.+) \((\d+)\/(\d+) bytes\)$/.exec(info || '');
  return m ? { image: m[1], done: Number(m[2]), total: Number(m[3]) } : null;
}

function PullProgress({ info }) {
  const p = pullOf(info);
  if (!p) return null;
  return (
    <div class="muted pull" role="status">
      <progress value={p.done} max={p.total || 1} aria-label={`pulling ${p.image}`} />{' '}
      pulling {bytes(p.done)} of {bytes(p.total)}
    </div>
  );
}

// The manager's session events, one SSE connection; `onEvent(name, data)`.
function useSessionEvents(query, onEvent) {
  useEffect(() => {
    const events = new EventSource(withToken(`/func/events/session${query}`));
    for (const name of SESSION_EVENTS) {
      events.addEventListener(name, (e) => {
        let data = {};
        try { data = JSON.parse(e.data); } catch { /* not JSON: no details */ }
        onEvent(name, data);
      });
    }
    return () => events.close();
  }, [query]);
}

// The session list: read once, then kept current by the event stream (each event re-reads only
// that session).
export function Sessions() {
  const [sessions, setSessions] = useState(null);
  const [error, setError] = useState('');
  useEffect(() => {
    let closed = false;
    gql(`query($limit:Int!,$offset:Int!){compute_session_list(limit:$limit,offset:$offset){total_count items{${SESSION_FIELDS}}}}`,
      { limit: 1000, offset: 0 })
      .then((d) => { if (!closed) setSessions(d.compute_session_list.items); })
      .catch((err) => { if (!closed) setError(explain(err)); });
    return () => { closed = true; };
  }, []);
  useSessionEvents('', async (name, data) => {
    const id = data.sessionId;
    if (!id) return;
    try {
      const d = await gql(`query($id:UUID!){compute_session(id:$id){${SESSION_FIELDS}}}`, { id });
      const s = d.compute_session;
      if (!s) return;
      setSessions((list) => [s, ...(list || []).filter((x) => x.id !== s.id)]);
    } catch { /* the next event or a reload shows it */ }
  });
  return (
    <section>
      <StartSession />
      <div class="card">
        <h2>Sessions</h2>
        <ErrorText error={error} />
        {!sessions && !error && <p class="muted">Loading…</p>}
        {sessions && sessions.length === 0 && <p class="muted">No sessions yet. Start one above.</p>}
        {sessions && sessions.length > 0 && (
          <table>
            <thead><tr><th>Name</th><th>Status</th><th class="hide-narrow">Image</th><th class="hide-narrow">Resources</th><th>Age</th><th></th></tr></thead>
            <tbody>
              {sessions.map((s) => (
                <tr key={s.id} data-session={s.name}>
                  <td><Link href={`/sessions/${s.id}`}>{s.name}</Link></td>
                  <td><span class={`status ${s.status}`}>{s.status}</span>{s.status === 'PENDING' && s.status_info ? <div class="muted">{s.status_info}</div> : null}{s.status === 'PREPARING' ? <PullProgress info={s.status_info} /> : null}</td>
                  <td class="hide-narrow">{s.image}</td>
                  <td class="hide-narrow">{slots(s.status === 'PENDING' ? s.requested_slots : s.occupying_slots)}</td>
                  <td>{age(s.created_at)}</td>
                  <td>{s.status === 'RUNNING' && <Link href={`/sessions/${s.id}/terminal`} data-terminal-link>Terminal</Link>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </section>
  );
}

// What a request of `want` slots meets: the first limit it passes, or ''. `remaining` objects
// come from check-presets (keypair_remaining, scaling_group_remaining).
function shortOf(want, remaining) {
  for (const [k, v] of Object.entries(want)) {
    for (const [where, left] of remaining) {
      if (left && left[k] !== undefined && left[k] !== null && Number(v) > Number(left[k])) {
        return `${k} ${k === 'mem' ? bytes(v) : v} wanted, ${k === 'mem' ? bytes(left[k]) : Number(left[k])} left ${where}`;
      }
    }
  }
  return '';
}

function parseEnv(text) {
  const env = {};
  for (const raw of String(text || '').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`"${line}" is not NAME=VALUE.`);
    env[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return env;
}

export function StartSession() {
  const presets = useLoad(() => func('POST', '/resource/check-presets', {}));
  const folders = useLoad(() => func('GET', '/folders'));
  const images = useLoad(() => gql('{images{name tag registry}}').catch(() => ({ images: [] })));
  const mine = useLoad(() => gql('{user{groups{id name}}}').catch(() => ({ user: { groups: [] } })));
  const projects = mine.data?.user?.groups || [];
  const [image, setImage] = useState('python');
  const [project, setProject] = useState('');
  const [verdict, setVerdict] = useState(null);
  const [choice, setChoice] = useState('');
  const [custom, setCustom] = useState({ cpu: '1', mem: '1g', shares: '', devices: '' });
  const [kind, setKind] = useState('interactive');
  const [more, setMore] = useState(false);
  const list = presets.data?.presets || [];
  const remaining = presets.data
    ? [['for your keypair', presets.data.keypair_remaining], ['in the resource group', presets.data.scaling_group_remaining]]
    : [];
  const preset = list.find((p) => p.name === choice);
  function wanted() {
    if (preset) return { ...preset.resource_slots };
    const r = { cpu: custom.cpu, mem: String(parseSize(custom.mem)) };
    if (custom.shares) r['cuda.shares'] = custom.shares;
    if (custom.devices) r['cuda.device'] = custom.devices;
    return r;
  }
  // The fit check asks the manager with the start's own rules (POST /session/_/check: image,
  // project, slots the cluster offers, policy limits), then compares with what is free now.
  const group = projects.length > 1 ? (project || (projects.some((p) => p.name === 'default') ? 'default' : projects[0].name)) : '';
  let asked = null;
  try { asked = wanted(); } catch { asked = null; }
  const askedKey = JSON.stringify([image, asked, group]);
  useEffect(() => {
    if (!asked || (!preset && Number.isNaN(Number(asked.mem))) || !image) { setVerdict(null); return undefined; }
    let live = true;
    const timer = setTimeout(() => {
      const body = { name: `web-check-${Math.random().toString(36).slice(2, 8)}`, image, type: 'interactive', config: { resources: asked } };
      if (group) body.group = group;
      func('POST', '/session/_/check', body)
        .then(() => { if (live) setVerdict({ ok: true }); })
        .catch((err) => { if (live) setVerdict({ error: explain(err) }); });
    }, 250);
    return () => { live = false; clearTimeout(timer); };
  }, [askedKey]);
  let fit = '';
  if (asked && !preset && Number.isNaN(Number(asked.mem))) fit = 'Memory is a size like 512m or 4g.';
  else if (verdict?.error) fit = `Would not start: ${verdict.error}`;
  else if (verdict?.ok && presets.data) {
    const short = shortOf(asked, remaining);
    fit = short ? `Would wait in the queue: ${short}.` : 'Fits now.';
  }
  const { submit, error, busy } = useSubmit(async (form, element) => {
    const name = form.get('name') || `web-${Math.random().toString(36).slice(2, 8)}`;
    const config = { resources: wanted() };
    if (!preset && Number.isNaN(Number(config.resources.mem))) return 'Memory is a size like 512m or 4g.';
    const mounts = form.getAll('mount');
    if (mounts.length) {
      config.mounts = mounts;
      config.mount_options = {};
      for (const m of mounts) config.mount_options[m] = { permission: form.get(`ro-${m}`) ? 'ro' : 'rw' };
    }
    let env;
    try { env = parseEnv(form.get('env')); } catch (err) { return `${err.message} Write one NAME=VALUE per line.`; }
    if (Object.keys(env).length) config.environ = env;
    const ports = String(form.get('preopen') || '').split(/[\s,]+/).filter(Boolean).map(Number);
    if (ports.some((p) => !Number.isInteger(p) || p < 1024 || p > 65535)) return 'Ports to open are numbers from 1024 to 65535.';
    if (ports.length) config.preopen_ports = ports;
    if (form.get('network')) config.network = form.get('network');
    const body = { name, image: form.get('image'), type: kind, config };
    if (group) body.group = group;
    if (kind === 'batch') {
      body.startupCommand = form.get('command');
      if (!body.startupCommand) return 'A batch session needs a command to run.';
    }
    await func('POST', '/session', body);
    element.reset();
    setChoice('');
    presets.reload();
    return '';
  });
  const folderList = (folders.data || []).filter((f) => !f.name.startsWith('.'));
  return (
    <form class="card" onSubmit={submit} aria-label="Start a session">
      <h2>Start a session</h2>
      <div class="row">
        <div>
          <label for="image">Image</label>
          <input id="image" name="image" value={image} onInput={(e) => setImage(e.target.value)} required list="images" />
          {/* A registry's image by its whole reference (REGISTRY/PROJECT/NAME:TAG): "lab/app:1" alone would be Docker Hub's. */}
          <datalist id="images">{(images.data?.images || []).map((i) => {
            const ref = !i.registry || i.registry === 'local' ? `${i.name}:${i.tag}` : `${i.registry}/${i.name}:${i.tag}`;
            return <option key={ref} value={ref} />;
          })}</datalist>
        </div>
        {projects.length > 1 && (
          <div>
            <label for="project">Project</label>
            <select id="project" value={group} onChange={(e) => setProject(e.target.value)}>
              {projects.map((p) => <option value={p.name} key={p.id}>{p.name}</option>)}
            </select>
          </div>
        )}
        <div><label for="sname">Name (optional)</label><input id="sname" name="name" pattern="[A-Za-z0-9_.\-]{4,64}" title="4 to 64 letters, digits, _ . -" /></div>
        <div>
          <label for="preset">Resources</label>
          <select id="preset" value={choice} onChange={(e) => setChoice(e.target.value)}>
            <option value="">Custom</option>
            {list.map((p) => (
              <option value={p.name} key={p.name}>{p.name}: {slots(p.resource_slots)}{p.allocatable ? '' : ' (does not fit now)'}</option>
            ))}
          </select>
        </div>
        <div><button type="submit" disabled={busy}>{busy ? 'Starting…' : 'Start'}</button></div>
      </div>
      {!preset && (
        <div class="row">
          <div><label for="cpu">CPU cores</label><input id="cpu" inputMode="decimal" value={custom.cpu} onInput={(e) => setCustom({ ...custom, cpu: e.target.value })} /></div>
          <div><label for="mem">Memory</label><input id="mem" value={custom.mem} onInput={(e) => setCustom({ ...custom, mem: e.target.value })} placeholder="1g" /></div>
          <div><label for="shares">GPU shares (cuda.shares)</label><input id="shares" inputMode="decimal" value={custom.shares} onInput={(e) => setCustom({ ...custom, shares: e.target.value })} placeholder="0.5" /></div>
          <div><label for="devices">Whole GPUs (cuda.device)</label><input id="devices" inputMode="numeric" value={custom.devices} onInput={(e) => setCustom({ ...custom, devices: e.target.value })} placeholder="0" /></div>
        </div>
      )}
      <p class={fit.startsWith('Fits') ? 'ok' : fit.startsWith('Would not') ? 'error' : 'muted'} data-fit>{fit}</p>
      <p><button type="button" class="secondary" aria-expanded={more} onClick={() => setMore(!more)}>{more ? 'Fewer options' : 'More options'}</button></p>
      <div hidden={!more}>
        <div class="row">
          <div>
            <label for="kind">Kind</label>
            <select id="kind" value={kind} onChange={(e) => setKind(e.target.value)}>
              <option value="interactive">Interactive (terminal, apps)</option>
              <option value="batch">Batch (runs a command, then ends)</option>
            </select>
          </div>
          {kind === 'batch' && <div><label for="command">Command</label><input id="command" name="command" placeholder="python train.py" /></div>}
          <div><label for="preopen">Ports to open as apps</label><input id="preopen" name="preopen" placeholder="8080, 6006" /></div>
          <div>
            <label for="network">Network</label>
            <select id="network" name="network" defaultValue="">
              <option value="">The agent's (a bridge with NAT unless the site chose none)</option>
              <option value="bridge">Bridge: an address of its own, NAT to the outside</option>
              <option value="none">None: loopback only</option>
            </select>
          </div>
        </div>
        <label for="env">Environment (NAME=VALUE per line)</label>
        <textarea id="env" name="env" rows="3" />
        <fieldset>
          <legend>Folders to mount at /home/work/NAME</legend>
          {folders.error && <ErrorText error={folders.error} />}
          {folderList.length === 0 && !folders.error && <p class="muted">No folders yet (Data).</p>}
          {folderList.map((f) => (
            <div class="mount" key={f.id || f.name}>
              <label><input type="checkbox" name="mount" value={f.name} /> {f.name}</label>
              <label class="muted"><input type="checkbox" name={`ro-${f.name}`} /> read-only</label>
            </div>
          ))}
        </fieldset>
      </div>
      <ErrorText error={error} />
    </form>
  );
}

// A session's page: what it is, its apps, live logs and events, and what can be done to it.
export function SessionDetail({ id }) {
  const [s, setS] = useState(null);
  const [error, setError] = useState('');
  const [events, setEvents] = useState([]);
  const load = async () => {
    try {
      const d = await gql(`query($id:UUID!){compute_session(id:$id){${SESSION_FIELDS} terminated_at scaling_group mounts exit_code}}`, { id });
      if (!d.compute_session) setError('No such session (it may belong to someone else). Go back to the list.');
      setS(d.compute_session);
    } catch (err) {
      setError(explain(err));
    }
  };
  useEffect(() => { load(); }, [id]);
  useSessionEvents(`?sessionName=${encodeURIComponent(s?.name || '*')}`, (name, data) => {
    if (data.sessionId && data.sessionId !== id) return;
    setEvents((list) => [...list.slice(-49), { name, at: new Date().toLocaleTimeString(), reason: data.reason }]);
    load();
  });
  if (error) return <section class="card"><ErrorText error={error} /><Link href="/sessions">Back to sessions</Link></section>;
  if (!s) return <p class="muted">Loading…</p>;
  const running = s.status === 'RUNNING';
  return (
    <section>
      <div class="card">
        <h2 data-session-name>{s.name} <span class={`status ${s.status}`}>{s.status}</span></h2>
        {s.status_info && <p class="muted">{s.status === 'PENDING' ? 'Waiting: ' : ''}{s.status_info}</p>}
        {s.status === 'PREPARING' && <PullProgress info={s.status_info} />}
        <dl class="facts">
          <dt>Image</dt><dd>{s.image}</dd>
          <dt>Kind</dt><dd>{s.type}</dd>
          <dt>Resources</dt><dd>{slots(running ? s.occupying_slots : s.requested_slots)}</dd>
          <dt>Started</dt><dd>{s.created_at ? `${new Date(s.created_at).toLocaleString()} (${age(s.created_at)} ago)` : ''}</dd>
          {s.mounts && s.mounts.length > 0 && <><dt>Folders</dt><dd>{s.mounts.join(', ')}</dd></>}
          {s.exit_code !== null && s.exit_code !== undefined && <><dt>Exit code</dt><dd>{s.exit_code}</dd></>}
        </dl>
        <SessionActions s={s} onChanged={load} />
      </div>
      {running && <Apps id={id} />}
      {running && <SessionFiles id={id} />}
      <Logs id={id} name={s.name} live={!['TERMINATED', 'CANCELLED', 'ERROR'].includes(s.status)} />
      <div class="card">
        <h3>Events</h3>
        {events.length === 0 ? <p class="muted">Events that happen while this page is open appear here.</p> : (
          <ul class="events">{events.map((e, i) => <li key={i}><span class="muted">{e.at}</span> {e.name.replace('session_', '')}{e.reason ? ` (${e.reason})` : ''}</li>)}</ul>
        )}
      </div>
      <p><Link href="/sessions">Back to sessions</Link></p>
    </section>
  );
}

function SessionActions({ s, onChanged }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState('');
  const running = s.status === 'RUNNING';
  const ended = ['TERMINATED', 'CANCELLED'].includes(s.status);
  async function act(what, work) {
    setBusy(what);
    setError('');
    try { await work(); await onChanged(); } catch (err) { setError(explain(err)); } finally { setBusy(''); }
  }
  const rename = useSubmit(async (form) => {
    await func('POST', `/session/${s.id}/rename?name=${encodeURIComponent(form.get('newname'))}`);
    await onChanged();
    return '';
  });
  return (
    <div>
      <div class="row actions">
        {running && <Link href={`/sessions/${s.id}/terminal`} class="button">Open terminal</Link>}
        {running && <button type="button" class="secondary" disabled={!!busy} onClick={() => act('restart', () => func('PATCH', `/session/${s.id}`))}>{busy === 'restart' ? 'Restarting…' : 'Restart'}</button>}
        {!ended && <button type="button" class="danger" disabled={!!busy} onClick={() => {
          if (confirm(`Terminate ${s.name}? Its processes stop; files outside mounted folders are lost.`)) {
            act('terminate', () => func('DELETE', `/session/${s.id}`));
          }
        }}>{busy === 'terminate' ? 'Terminating…' : 'Terminate'}</button>}
      </div>
      {running && (
        <form class="row" onSubmit={rename.submit} aria-label="Rename">
          <div><label for="newname">New name</label><input id="newname" name="newname" required pattern="[A-Za-z0-9_.\-]{4,64}" /></div>
          <div><button type="submit" class="secondary" disabled={rename.busy}>Rename</button></div>
        </form>
      )}
      <ErrorText error={error || rename.error} />
    </div>
  );
}

// The session's apps: HTTP ones open in a new tab through the webserver's app ports.
function Apps({ id }) {
  const apps = useLoad(() => func('GET', `/stream/session/${id}/apps`), [id]);
  const [error, setError] = useState('');
  const [opening, setOpening] = useState('');
  async function open(app) {
    // Opened at once (a browser allows a new tab only from the click), pointed once ready.
    const tab = window.open('', '_blank');
    setOpening(app.name);
    setError('');
    try {
      const r = await call('POST', '/server/apps', { session: id, app: app.name });
      if (tab) {
        tab.opener = null;
        tab.location.href = r.url;
      } else {
        location.href = r.url;
      }
    } catch (err) {
      if (tab) tab.close();
      setError(explain(err));
    } finally {
      setOpening('');
    }
  }
  const list = (apps.data || []).filter((a) => a.protocol !== 'pty');
  return (
    <div class="card">
      <h3>Apps</h3>
      <ErrorText error={apps.error || error} />
      {apps.data && list.length === 0 && <p class="muted">This session serves no apps. Start one with ports to open (More options) or an image with Jupyter.</p>}
      <div class="row">
        {list.map((a) => (a.protocol === 'tcp'
          ? <p key={a.name} class="muted">{a.name} (TCP): <code>bai session app {id.slice(0, 8)} {a.name}</code> on your machine.</p>
          : <div key={a.name}><button type="button" data-app={a.name} disabled={opening === a.name} onClick={() => open(a)}>{opening === a.name ? 'Opening…' : `Open ${a.name}`}</button></div>))}
      </div>
    </div>
  );
}

// Files in the session's /home/work: browse, download one.
function SessionFiles({ id }) {
  const [dir, setDir] = useState('.');
  const list = useLoad(() => func('GET', `/session/${id}/files?path=${encodeURIComponent(dir)}`), [id, dir]);
  const [error, setError] = useState('');
  let files = list.data?.files || [];
  if (typeof files === 'string') { try { files = JSON.parse(files); } catch { files = []; } }
  const isDir = (f) => String(f.mode || '').startsWith('d');
  const path = (f) => (dir === '.' ? f.filename : `${dir}/${f.filename}`);
  async function download(f) {
    setError('');
    try {
      const r = await fetch(`/func/session/${id}/download_single`, {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-BackendAI-Version': 'v8.20240915', 'X-BAI-CSRF-Token': csrfToken() },
        body: JSON.stringify({ file: path(f) }),
      });
      if (!r.ok) throw new Error((await r.json().catch(() => ({}))).msg || `HTTP ${r.status}`);
      saveBlob(await r.blob(), f.filename);
    } catch (err) { setError(`${f.filename}: ${err.message}`); }
  }
  return (
    <div class="card">
      <h3>Files in /home/work{dir === '.' ? '' : `/${dir}`}</h3>
      {dir !== '.' && <p><button type="button" class="linkish" onClick={() => setDir(dir.includes('/') ? dir.slice(0, dir.lastIndexOf('/')) : '.')}>Up one level</button></p>}
      <ErrorText error={list.error || error} />
      {list.data && files.length === 0 && <p class="muted">No files here.</p>}
      {files.length > 0 && (
        <table>
          <thead><tr><th>Name</th><th>Size</th><th class="hide-narrow">Modified</th></tr></thead>
          <tbody>{files.map((f) => (
            <tr key={f.filename} data-session-file={f.filename}>
              <td>{isDir(f)
                ? <button type="button" class="linkish" onClick={() => setDir(path(f))}>{f.filename}/</button>
                : <button type="button" class="linkish" onClick={() => download(f)}>{f.filename}</button>}</td>
              <td>{isDir(f) ? '' : bytes(f.size)}</td>
              <td class="hide-narrow">{f.mtime ? new Date(Number(f.mtime) * 1000 || f.mtime).toLocaleString() : ''}</td>
            </tr>
          ))}</tbody>
        </table>
      )}
    </div>
  );
}

// The session's output: read whole, then followed as it comes (the manager's log stream).
function Logs({ id, name, live }) {
  const [text, setText] = useState('');
  const [error, setError] = useState('');
  const [follow, setFollow] = useState(live);
  const box = useRef(null);
  useEffect(() => {
    if (follow) {
      setText('');
      const stream = new EventSource(withToken(`/func/session/${id}/logs?follow=true`));
      stream.addEventListener('output', (e) => {
        try { const d = JSON.parse(e.data); setText((t) => (t + d.data).slice(-2000000)); } catch { /* skip */ }
      });
      stream.addEventListener('end', () => { stream.close(); setFollow(false); });
      stream.onerror = () => { if (stream.readyState === EventSource.CLOSED) setError('The log stream ended; reload to read it again.'); };
      return () => stream.close();
    }
    func('GET', `/session/${id}/logs`).then((r) => setText(r?.result?.logs ?? '')).catch((err) => setError(explain(err)));
    return undefined;
  }, [id, follow]);
  useEffect(() => { if (box.current && follow) box.current.scrollTop = box.current.scrollHeight; }, [text]);
  return (
    <div class="card">
      <h3>Logs</h3>
      <div class="row actions">
        <label class="inline"><input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow</label>
        <button type="button" class="secondary" onClick={() => saveBlob(new Blob([text], { type: 'text/plain' }), `${name}.log`)}>Download</button>
      </div>
      <ErrorText error={error} />
      <pre class="logs" ref={box} data-logs tabIndex="0">{text || (follow ? 'Waiting for output…' : 'No output.')}</pre>
    </div>
  );
}

function b64encode(text) {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}
function b64decode(data) {
  const bin = atob(data);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// One terminal: xterm.js over the session's /pty stream (bridged by the webserver).
function TerminalView({ id, visible, onState }) {
  const box = useRef(null);
  const term = useRef(null);
  useEffect(() => {
    const t = new Terminal({ cursorBlink: true, convertEol: false, fontSize: 14 });
    term.current = t;
    t.open(box.current);
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(withToken(`${proto}//${location.host}/func/stream/session/${id}/pty`));
    const send = (o) => ws.readyState === 1 && ws.send(JSON.stringify(o));
    ws.onopen = () => {
      onState('connected');
      send({ type: 'resize', rows: t.rows, cols: t.cols });
      t.focus();
    };
    ws.onmessage = (e) => {
      let f;
      try { f = JSON.parse(e.data); } catch { return; }
      if (f.type === 'out') t.write(b64decode(f.data));
      else if (f.type === 'exit') onState(`ended (exit ${f.code})`);
      else if (f.type === 'error') t.write(`\r\n[${f.data}]\r\n`);
    };
    ws.onclose = (e) => onState((s) => (s.startsWith('ended') ? s : `closed (${e.code})`));
    const input = t.onData((d) => send({ type: 'stdin', chars: b64encode(d) }));
    const ping = setInterval(() => send({ type: 'ping' }), 30000);
    return () => { clearInterval(ping); input.dispose(); ws.close(); t.dispose(); };
  }, [id]);
  useEffect(() => { if (visible && term.current) term.current.focus(); }, [visible]);
  return <div class="term" ref={box} hidden={!visible} data-terminal />;
}

// Terminals of a session, in tabs (each its own shell).
export function TerminalPage({ id }) {
  const [tabs, setTabs] = useState([{ key: 1, state: 'connecting' }]);
  const [current, setCurrent] = useState(1);
  const next = useRef(2);
  const setState = (key) => (v) => setTabs((list) => list.map((t) => (t.key === key ? { ...t, state: typeof v === 'function' ? v(t.state) : v } : t)));
  const shown = tabs.find((t) => t.key === current) || tabs[0];
  function add() {
    const key = next.current++;
    setTabs((list) => [...list, { key, state: 'connecting' }]);
    setCurrent(key);
  }
  function close(key) {
    const rest = tabs.filter((t) => t.key !== key);
    if (rest.length === 0) return go(`/sessions/${id}`);
    setTabs(rest);
    if (current === key) setCurrent(rest[rest.length - 1].key);
  }
  return (
    <section class="card">
      <h2>Terminal <span class="muted" data-terminal-state={shown?.state}>{shown?.state}</span></h2>
      <div class="tabs" role="tablist" aria-label="Terminals">
        {tabs.map((t, i) => (
          <span key={t.key} class="tab">
            <button type="button" role="tab" aria-selected={t.key === shown?.key} class={t.key === shown?.key ? '' : 'secondary'} onClick={() => setCurrent(t.key)}>Shell {i + 1}</button>
            <button type="button" class="secondary close" aria-label={`Close shell ${i + 1}`} onClick={() => close(t.key)}>×</button>
          </span>
        ))}
        {tabs.length < 8 && <button type="button" class="secondary" onClick={add} data-new-tab>New tab</button>}
      </div>
      {tabs.map((t) => <TerminalView key={t.key} id={id} visible={t.key === shown?.key} onState={setState(t.key)} />)}
      <p><Link href={`/sessions/${id}`}>Back to the session</Link></p>
    </section>
  );
}
