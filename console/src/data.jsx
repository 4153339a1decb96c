// Data: folders (create, rename, share, usage) and a folder's files (browse, mkdir, move,
// delete, preview, resumable uploads, downloads). Transfers go through the webserver's storage
// relay (the ticket's console_url): a page may only talk to its own origin.
import { useRef, useState } from "preact/hooks";
import { explain, func } from './api.js';
import { ErrorText, Link, bytes, go, parseSize, useLoad, useSubmit } from './ui.jsx';

export function Folders() {
  const list = useLoad(() => func('GET', '/folders'));
  const create = useSubmit(async (form, element) => {
    const body = { name: form.get('fname') };
    if (form.get('quota')) body.quota = form.get('quota');
    await func('POST', '/folders', body);
    element.reset();
    list.reload();
    return '';
  });
  const folders = list.data || [];
  return (
    <section>
      <form class="card" onSubmit={create.submit} aria-label="Create a folder">
        <h2>Create a folder</h2>
        <div class="row">
          <div><label for="fname">Name</label><input id="fname" name="fname" required pattern="[A-Za-z0-9_.\-]{1,64}" title="Letters, digits, _ . - (up to 64)" /></div>
          <div><label for="quota">Quota (optional)</label><input id="quota" name="quota" placeholder="10g" /></div>
          <div><button type="submit" disabled={create.busy}>{create.busy ? 'Creating…' : 'Create'}</button></div>
        </div>
        <ErrorText error={create.error} />
      </form>
      <Invitations onAccepted={list.reload} />
      <div class="card">
        <h2>Folders</h2>
        <ErrorText error={list.error} />
        {list.loading && !list.data && <p class="muted">Loading…</p>}
        {list.data && folders.length === 0 && <p class="muted">No folders yet. Create one above; mount it in a session to keep files after the session ends.</p>}
        {folders.length > 0 && (
          <table>
            <thead><tr><th>Name</th><th class="hide-narrow">Host</th><th>Access</th><th class="hide-narrow">Owner</th></tr></thead>
            <tbody>
              {folders.map((f) => (
                <tr key={f.id} data-folder={f.name}>
                  <td><Link href={`/data/${encodeURIComponent(f.name)}`}>{f.name}</Link></td>
                  <td class="hide-narrow">{f.host}</td>
                  <td>{f.permission === 'ro' ? 'read-only' : f.permission === 'wd' ? 'read, write, delete' : f.permission === 'rw' ? 'read, write' : f.permission}{f.is_owner ? '' : ' (shared with you)'}</td>
                  <td class="hide-narrow">{f.ownership_type === 'group' ? 'project' : 'you'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </section>
  );
}

// Folders others invited the user to share.
function Invitations({ onAccepted }) {
  const list = useLoad(() => func('GET', '/folders/invitations/list'));
  const [error, setError] = useState('');
  async function answer(id, accept) {
    setError('');
    try {
      await func('POST', accept ? '/folders/invitations/accept' : '/folders/invitations/delete', { inv_id: id });
      list.reload();
      if (accept) onAccepted();
    } catch (err) { setError(explain(err)); }
  }
  const pending = (list.data?.invitations || []).filter((i) => !i.status || i.status === 'pending' || i.state === 'pending');
  if (!pending.length && !error) return null;
  return (
    <div class="card" data-invitations>
      <h2>Invitations</h2>
      <ErrorText error={error} />
      <ul>{pending.map((i) => (
        <li key={i.id}>{i.inviter} invites you to <strong>{i.vfolder_name}</strong> ({i.perm === 'ro' ? 'read' : i.perm === 'rw' ? 'read and write' : 'read, write, delete'})
          {' '}<button type="button" class="secondary" onClick={() => answer(i.id, true)}>Accept</button>
          {' '}<button type="button" class="secondary" onClick={() => answer(i.id, false)}>Decline</button></li>
      ))}</ul>
    </div>
  );
}

const join = (dir, name) => (dir ? `${dir}/${name}` : name);

// Where an upload stands across page reloads: the file's identity and the folder path. A new
// ticket for the same path and size resumes the upload the storage proxy kept.
const JOURNAL = 'bai-uploads';
function journal() {
  try { return JSON.parse(localStorage.getItem(JOURNAL) || '{}'); } catch { return {}; }
}
function journalKey(folder, path, file) { return `${folder}\n${path}\n${file.size}\n${file.lastModified}`; }
function remember(key, value) {
  const j = journal();
  if (value) j[key] = value; else delete j[key];
  localStorage.setItem(JOURNAL, JSON.stringify(j));
}

// Chunks start at 16 MiB (a dropped connection costs at most that, and a slow uplink sends one in
// well under a minute) and double while one takes under two seconds, up to what the storage
// proxy takes (its Tus-Max-Size) and 64 MiB (what the webserver's relay takes, and memory the
// proxy holds per chunk): a fast link makes fewer, larger requests.
const FIRST_CHUNK = 16 * 1024 * 1024;
const LARGEST_CHUNK = 64 * 1024 * 1024;
// Files of 16 MiB and more go as parts sent at once (tus concatenation, when the storage proxy
// offers it): a browser pushes one request's body through its network code at a time, and
// the proxy writes one part while the next arrives. Up to 4 parts of 8 MiB or more.
const PART_MIN = 8 * 1024 * 1024;
const MOST_PARTS = 4;
// A part's chunks start smaller (its link is shared): 4 MiB, doubling as above.
const PART_FIRST_CHUNK = 4 * 1024 * 1024;
async function tusOptions(target, headers) {
  try {
    const r = await fetch(target, { method: 'OPTIONS', headers });
    const n = Number(r.headers.get('Tus-Max-Size'));
    const extensions = (r.headers.get('Tus-Extension') || '').split(',').map((e) => e.trim());
    return { largest: n > 0 ? Math.min(n, LARGEST_CHUNK) : FIRST_CHUNK, concat: extensions.includes('concatenation') };
  } catch {
    return { largest: FIRST_CHUNK, concat: false };
  }
}

async function refusal(r) {
  let msg = `HTTP ${r.status}`;
  try { const b = await r.json(); msg = b.msg || b.detail || b.title || msg; } catch { /* keep */ }
  return new Error(`${msg}. Choose the file again to resume.`);
}

// Sends bytes [from + offset, from + length) of `file` to the tus upload at `url`, reporting
// each chunk's new offset.
async function sendChunks(url, file, from, length, offset, first, largest, tus, signal, onOffset) {
  let size = Math.min(first, largest);
  while (offset < length) {
    const chunk = file.slice(from + offset, from + Math.min(length, offset + size));
    const began = performance.now();
    const r = await fetch(url, {
      method: 'PATCH',
      headers: { ...tus, 'Upload-Offset': String(offset), 'Content-Type': 'application/offset+octet-stream' },
      body: chunk,
      signal,
    });
    if (r.status !== 204) throw await refusal(r);
    offset = Number(r.headers.get('Upload-Offset'));
    onOffset(offset);
    if (performance.now() - began < 2000) size = Math.min(2 * size, largest);
  }
}

// An upload in parts: each part's offset (a HEAD when resuming; null when the parts are gone),
// then all sent at once, then the final request that makes the file whole.
async function sendParts(target, file, lengths, offsets, largest, tus, signal, onProgress, resumedAt) {
  const url = (k) => `${target}&part=${k}`;
  const sent = [...offsets];
  await Promise.all(lengths.map((length, k) => {
    const from = lengths.slice(0, k).reduce((a, b) => a + b, 0);
    return sendChunks(url(k), file, from, length, offsets[k], PART_FIRST_CHUNK, largest, tus, signal, (off) => {
      sent[k] = off;
      onProgress(sent.reduce((a, b) => a + b, 0), file.size, resumedAt);
    });
  }));
  const r = await fetch(target, {
    method: 'POST',
    headers: { ...tus, 'Upload-Concat': `final;${lengths.map((_, k) => url(k)).join(' ')}` },
    signal,
  });
  if (r.status !== 201) throw await refusal(r);
}

// Storage proxies this page may send uploads to itself (the webserver lists them in the page and
// its policy): the file then skips the webserver's relay, as Backend.AI's WebUI uploads.
const DIRECT = new Set((document.querySelector('meta[name="bai-storage-origins"]')?.content || '').split(' ').filter(Boolean));
function transferUrl(ticket) {
  const token = `?token=${encodeURIComponent(ticket.token)}`;
  try {
    if (DIRECT.has(new URL(ticket.url).origin)) return ticket.url + token;
  } catch { /* not a URL: the relay */ }
  return ticket.console_url + token;
}

// Uploads `file` to `path` of `folder` with tus, reporting (sent, total); resumes an upload
// this browser started (and a reload cut short), whole or in parts.
async function upload(folder, path, file, onProgress, signal) {
  const key = journalKey(folder, path, file);
  const earlier = journal()[key];
  remember(key, { started: Date.now(), parts: earlier?.parts || 0 });
  const ticketFor = (restart) => func('POST', `/folders/${encodeURIComponent(folder)}/request-upload`, { path, size: file.size, restart });
  let target = transferUrl(await ticketFor(!earlier));
  const tus = { 'Tus-Resumable': '1.0.0' };
  const opts = file.size > FIRST_CHUNK ? await tusOptions(target, tus) : { largest: FIRST_CHUNK, concat: false };
  if (earlier?.parts) {
    // Where each part stands; a part gone (the upload was taken back or expired) starts over.
    const heads = await Promise.all([...Array(earlier.parts).keys()].map(async (k) => {
      const r = await fetch(`${target}&part=${k}`, { method: 'HEAD', headers: tus });
      return r.ok ? { offset: Number(r.headers.get('Upload-Offset')), length: Number(r.headers.get('Upload-Length')) } : null;
    }));
    if (heads.every(Boolean)) {
      const resumedAt = heads.reduce((a, h) => a + h.offset, 0);
      onProgress(resumedAt, file.size, resumedAt);
      await sendParts(target, file, heads.map((h) => h.length), heads.map((h) => h.offset), opts.largest, tus, signal, onProgress, resumedAt);
      remember(key, null);
      return resumedAt;
    }
    remember(key, { started: Date.now(), parts: 0 });
    target = transferUrl(await ticketFor(true));
  }
  let offset = 0;
  if (earlier && !earlier.parts) {
    const head = await fetch(target, { method: 'HEAD', headers: tus });
    if (head.ok) offset = Number(head.headers.get('Upload-Offset') || 0);
  }
  const resumedAt = offset;
  onProgress(offset, file.size, resumedAt);
  const n = opts.concat && offset === 0 ? Math.min(MOST_PARTS, Math.floor(file.size / PART_MIN)) : 1;
  if (n >= 2) {
    const each = Math.ceil(file.size / n);
    const lengths = [...Array(n).keys()].map((k) => Math.min(each, file.size - k * each));
    let made = 0;
    for (const length of lengths) {
      const r = await fetch(target, { method: 'POST', headers: { ...tus, 'Upload-Concat': 'partial', 'Upload-Length': String(length) }, signal });
      if (r.status !== 201) break;  // e.g. bytes sent whole meanwhile: the whole way below
      made += 1;
    }
    if (made === n) {
      remember(key, { started: Date.now(), parts: n });
      await sendParts(target, file, lengths, lengths.map(() => 0), opts.largest, tus, signal, onProgress, 0);
      remember(key, null);
      return 0;
    }
  }
  // An empty file is made by the ticket itself (as `bai vfolder upload` does it: no PATCH); a
  // PATCH at 0 takes back parts made above.
  await sendChunks(target, file, 0, file.size, offset, FIRST_CHUNK, opts.largest, tus, signal, (off) => onProgress(off, file.size, resumedAt));
  remember(key, null);
  return resumedAt;
}

// A download ticket's two ways: `direct`, the storage proxy's own URL (a navigation: the
// browser streams it to disk at full speed, whatever its size), and `relayed`, through this
// origin (what a page's fetch may read: previews).
async function downloadTicket(folder, path) {
  const t = await func('POST', `/folders/${encodeURIComponent(folder)}/request-download`, { path });
  const token = `?token=${encodeURIComponent(t.token)}`;
  return { direct: t.url + token, relayed: t.console_url + token };
}

// A folder's own quota in bytes (bai's exact figure, else 23.09's MiB), 0 for none.
function quotaBytes(f) {
  if (!f) return 0;
  if (f.max_size_bytes !== undefined && f.max_size_bytes !== null) return Number(f.max_size_bytes);
  return Number(f.max_size || 0) * 1048576;
}

export function FolderView({ name, dir }) {
  const files = useLoad(() => func('GET', `/folders/${encodeURIComponent(name)}/files?path=${encodeURIComponent(dir || '.')}`), [name, dir]);
  const info = useLoad(() => func('GET', `/folders/${encodeURIComponent(name)}`), [name, files.data]);
  const [error, setError] = useState('');
  const [progress, setProgress] = useState(null);
  const [preview, setPreview] = useState(null);
  const abort = useRef(null);
  const pending = Object.keys(journal()).filter((k) => k.startsWith(`${name}\n`)).map((k) => k.split('\n')[1]);
  const there = (p) => `/data/${encodeURIComponent(name)}${p ? `/${p.split('/').map(encodeURIComponent).join('/')}` : ''}`;
  async function act(work) {
    setError('');
    try { await work(); files.reload(); } catch (err) { setError(explain(err)); }
  }
  // The folder's own quota (its owner; 0 or empty: none). Its owner's scope quota, from the
  // user or project resource policy, holds besides.
  const quota = useSubmit(async (form) => {
    const text = String(form.get('fquota') || '').trim();
    const size = text === '' || text === '0' || text === 'none' ? 0 : parseSize(text);
    if (Number.isNaN(size)) return 'A quota is a size like 10g or 512m (empty: none).';
    await func('POST', '/folders/_/quota', { folder_host: info.data.host, id: info.data.id, input: { size_bytes: size } });
    info.reload();
    return '';
  });
  const mkdir = useSubmit(async (form, element) => {
    await func('POST', `/folders/${encodeURIComponent(name)}/mkdir`, { path: join(dir, form.get('dirname')), parents: true, exist_ok: false });
    element.reset();
    files.reload();
    return '';
  });
  async function onFiles(e) {
    const chosen = [...e.target.files];
    e.target.value = '';
    setError('');
    for (const file of chosen) {
      const path = join(dir, file.name);
      abort.current = new AbortController();
      try {
        const resumedAt = await upload(name, path, file, (sent, total, from) => setProgress({ file: file.name, sent, total, from }), abort.current.signal);
        setProgress({ file: file.name, sent: file.size, total: file.size, from: resumedAt, done: true });
      } catch (err) {
        setError(err.name === 'AbortError' ? `Upload of ${file.name} paused. Choose the file again to resume.` : `${file.name}: ${explain(err)}`);
        break;
      }
    }
    files.reload();
  }
  async function download(item) {
    await act(async () => {
      const a = document.createElement('a');
      a.href = (await downloadTicket(name, join(dir, item.name))).direct;
      a.download = item.name;
      document.body.appendChild(a);
      a.click();
      a.remove();
    });
  }
  async function show(item) {
    await act(async () => {
      const r = await fetch((await downloadTicket(name, join(dir, item.name))).relayed, { headers: { Range: 'bytes=0-1048575' } });
      if (r.status === 416) return setPreview({ name: item.name, text: '' });  // empty
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const blob = await r.blob();
      if (/\.(png|jpe?g|gif|webp)$/i.test(item.name)) {
        setPreview({ name: item.name, image: URL.createObjectURL(blob) });
      } else {
        const text = await blob.text();
        setPreview({ name: item.name, text: text + (item.size > blob.size ? '\n… (the first MiB)' : '') });
      }
    });
  }
  async function rename(item) {
    const to = prompt(`New name (or path inside ${name}) for ${item.name}:`, item.name);
    if (!to || to === item.name) return;
    await act(() => (to.includes('/')
      ? func('POST', `/folders/${encodeURIComponent(name)}/move-file`, { src: join(dir, item.name), dst: to })
      : func('POST', `/folders/${encodeURIComponent(name)}/rename-file`, { target_path: join(dir, item.name), new_name: to })));
  }
  async function remove(item) {
    if (!confirm(`Delete ${item.name}${item.type === 'DIRECTORY' ? ' and everything in it' : ''}? This cannot be undone.`)) return;
    await act(() => func('POST', `/folders/${encodeURIComponent(name)}/delete-files`, { files: [join(dir, item.name)], recursive: true }));
  }
  const items = files.data?.items || [];
  const parts = dir ? dir.split('/') : [];
  return (
    <section>
      <div class="card">
        <h2>
          <Link href="/data">Folders</Link> / <Link href={there('')}>{name}</Link>
          {parts.map((p, i) => <span key={i}> / <Link href={there(parts.slice(0, i + 1).join('/'))}>{p}</Link></span>)}
        </h2>
        {info.data && (
          <p class="muted" data-usage>
            {info.data.num_files ?? 0} files, {bytes(info.data.used_bytes ?? info.data.cur_size ?? 0)}
            {quotaBytes(info.data) ? ` of a ${bytes(quotaBytes(info.data))} quota` : ' (no quota)'}
            {info.data.permission ? `; you may ${info.data.permission === 'ro' ? 'read' : info.data.permission === 'rw' ? 'read and write' : 'read, write and delete'}` : ''}
          </p>
        )}
        <div class="row">
          <div>
            <label for="upload">Upload files</label>
            <input id="upload" type="file" multiple onChange={onFiles} data-upload />
          </div>
          {info.data?.is_owner && (
            <form class="row" onSubmit={quota.submit} aria-label="Folder quota">
              <div><label for="fquota">Quota (empty: none)</label><input id="fquota" name="fquota" placeholder={quotaBytes(info.data) ? `now ${bytes(quotaBytes(info.data))}` : '10g'} /></div>
              <div><button type="submit" class="secondary" disabled={quota.busy} data-set-quota>Set</button></div>
              <ErrorText error={quota.error} />
            </form>
          )}
          <form class="row" onSubmit={mkdir.submit} aria-label="New folder">
            <div><label for="dirname">New directory</label><input id="dirname" name="dirname" required /></div>
            <div><button type="submit" class="secondary" disabled={mkdir.busy}>Make</button></div>
          </form>
        </div>
        {pending.length > 0 && !progress && <p class="muted" data-pending-upload>Unfinished upload{pending.length > 1 ? 's' : ''}: {pending.join(', ')}. Choose the same file again to resume where it stopped.</p>}
        {progress && (
          <div data-progress={progress.done ? 'done' : 'running'}>
            <progress max={progress.total || 1} value={progress.sent} />
            <span> {progress.file}: {bytes(progress.sent)} of {bytes(progress.total)}{progress.from > 0 ? ` (resumed at ${bytes(progress.from)})` : ''}{progress.done ? ', done' : ''}</span>
            {!progress.done && <button type="button" class="secondary" onClick={() => abort.current?.abort()}>Pause</button>}
          </div>
        )}
        <ErrorText error={files.error || mkdir.error || error} />
      </div>
      <div class="card">
        {files.loading && !files.data && <p class="muted">Loading…</p>}
        {files.data && items.length === 0 && <p class="muted">Empty. Upload files or make a directory.</p>}
        {items.length > 0 && (
          <table>
            <thead><tr><th>Name</th><th>Size</th><th class="hide-narrow">Modified</th><th></th></tr></thead>
            <tbody>
              {items.map((f) => (
                <tr key={f.name} data-file={f.name}>
                  <td>{f.type === 'DIRECTORY'
                    ? <Link href={there(join(dir, f.name))}>{f.name}/</Link>
                    : <button type="button" class="linkish" onClick={() => show(f)}>{f.name}</button>}</td>
                  <td>{f.type === 'DIRECTORY' ? '' : bytes(f.size)}</td>
                  <td class="hide-narrow">{f.modified ? new Date(f.modified).toLocaleString() : ''}</td>
                  <td class="actions">
                    {f.type !== 'DIRECTORY' && <button type="button" class="secondary" onClick={() => download(f)} data-download>Download</button>}
                    <button type="button" class="secondary" onClick={() => rename(f)}>Rename</button>
                    <button type="button" class="secondary" onClick={() => remove(f)}>Delete</button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
      {preview && (
        <div class="card" data-preview>
          <h3>{preview.name} <button type="button" class="secondary" onClick={() => setPreview(null)}>Close</button></h3>
          {preview.image ? <img src={preview.image} alt={preview.name} class="preview" /> : <pre class="logs">{preview.text}</pre>}
        </div>
      )}
      <FolderSharing name={name} />
    </section>
  );
}

function FolderSharing({ name }) {
  const invite = useSubmit(async (form, element) => {
    const emails = String(form.get('emails')).split(/[\s,]+/).filter(Boolean);
    const r = await func('POST', `/folders/${encodeURIComponent(name)}/invite`, { perm: form.get('perm'), emails });
    element.reset();
    const sent = r?.invited_ids?.length ?? emails.length;
    return sent ? '' : 'Nobody was invited: check the addresses.';
  });
  const rename = useSubmit(async (form) => {
    await func('POST', `/folders/${encodeURIComponent(name)}/rename`, { new_name: form.get('newname') });
    go(`/data/${encodeURIComponent(form.get('newname'))}`);
    return '';
  });
  return (
    <div class="card">
      <h3>Share and rename</h3>
      <form class="row" onSubmit={invite.submit} aria-label="Invite">
        <div><label for="emails">Invite by email</label><input id="emails" name="emails" required placeholder="ana@example.com, bo@example.com" /></div>
        <div>
          <label for="perm">They may</label>
          <select id="perm" name="perm"><option value="ro">read</option><option value="rw">read and write</option><option value="wd">read, write, delete</option></select>
        </div>
        <div><button type="submit" class="secondary" disabled={invite.busy}>Invite</button></div>
      </form>
      <ErrorText error={invite.error} />
      <form class="row" onSubmit={rename.submit} aria-label="Rename folder">
        <div><label for="newname">Rename to</label><input id="newname" name="newname" required pattern="[A-Za-z0-9_.\-]{1,64}" /></div>
        <div><button type="submit" class="secondary" disabled={rename.busy}>Rename</button></div>
      </form>
      <ErrorText error={rename.error} />
    </div>
  );
}


