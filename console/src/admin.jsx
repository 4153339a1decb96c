// Administration (admins and superadmins): users, keypairs, resource policies, projects,
// domains, resource groups, agents with what each session holds, images.
import { useState } from 'preact/hooks';
import { ApiError, explain, gql, withToken } from './api.js';
import { ErrorText, Link, bytes, parseSize, slots, slotsJson, slotsWords, useLoad, useSubmit } from './ui.jsx';

const TABS = [['users', 'Users'], ['keypairs', 'Keypairs'], ['policies', 'Policies'], ['agents', 'Agents'],
  ['images', 'Images'], ['organization', 'Projects and domains']];

export function Admin({ tab, who }) {
  const current = TABS.find(([k]) => k === tab) ? tab : 'users';
  return (
    <section>
      <nav class="tabs" aria-label="Administration">
        {TABS.map(([k, label]) => <Link key={k} href={`/admin/${k}`} aria-current={k === current ? 'page' : undefined}>{label}</Link>)}
      </nav>
      {current === 'users' && <Users />}
      {current === 'keypairs' && <Keypairs />}
      {current === 'policies' && <><Policies /><ScopePolicies kind="user" /><ScopePolicies kind="project" /></>}
      {current === 'agents' && <Agents superadmin={who.role === 'superadmin'} />}
      {current === 'images' && <><Registries superadmin={who.role === 'superadmin'} /><Images /></>}
      {current === 'organization' && <Organization />}
    </section>
  );
}

// Runs a mutation; its {ok, msg} refusal becomes an error with the server's words.
async function mutate(query, variables, field) {
  const d = await gql(query, variables);
  const r = d[field];
  if (r && r.ok === false) throw new ApiError(400, { msg: r.msg || 'Refused.' });
  return r;
}

function Users() {
  const users = useLoad(() => gql('{users{email username full_name role status domain_name resource_policy} groups{id name}}'));
  const projects = users.data?.groups || [];
  const create = useSubmit(async (form, element) => {
    await mutate(`mutation($email:String!,$props:UserInput!){create_user(email:$email,props:$props){ok msg}}`, {
      email: form.get('email'),
      props: {
        username: form.get('uname') || form.get('email').split('@')[0], password: form.get('upass'),
        need_password_change: Boolean(form.get('mustchange')), role: form.get('role'), status: 'active',
        is_active: true, domain_name: 'default', full_name: form.get('full') || '',
        group_ids: form.get('project') ? [form.get('project')] : [],
      },
    }, 'create_user');
    element.reset();
    users.reload();
    return '';
  });
  async function setStatus(email, status) {
    await mutate(`mutation($email:String!,$props:ModifyUserInput!){modify_user(email:$email,props:$props){ok msg}}`,
      { email, props: { status, is_active: status === 'active' } }, 'modify_user');
    users.reload();
  }
  const [error, setError] = useState('');
  return (
    <>
      <form class="card" onSubmit={create.submit} aria-label="Create a user">
        <h2>Create a user</h2>
        <div class="row">
          <div><label for="email">Email</label><input id="email" name="email" type="email" required /></div>
          <div><label for="uname">User name</label><input id="uname" name="uname" /></div>
          <div><label for="full">Full name</label><input id="full" name="full" /></div>
        </div>
        <div class="row">
          <div><label for="upass">Password</label><input id="upass" name="upass" type="password" autocomplete="new-password" required minLength="8" /></div>
          <div>
            <label for="role">Role</label>
            <select id="role" name="role"><option value="user">user</option><option value="admin">admin (of the domain)</option><option value="superadmin">superadmin</option></select>
          </div>
          <div>
            <label for="project">Project</label>
            <select id="project" name="project">{projects.map((g) => <option key={g.id} value={g.id} selected={g.name === 'default'}>{g.name}</option>)}<option value="">none</option></select>
          </div>
          <div><label class="inline"><input type="checkbox" name="mustchange" /> must change the password at first sign-in</label></div>
          <div><button type="submit" disabled={create.busy}>Create</button></div>
        </div>
        <ErrorText error={create.error} />
      </form>
      <div class="card">
        <h2>Users</h2>
        <ErrorText error={users.error || error} />
        <table>
          <thead><tr><th>Email</th><th class="hide-narrow">Name</th><th>Role</th><th>Status</th><th class="hide-narrow">Policy</th><th></th></tr></thead>
          <tbody>
            {(users.data?.users || []).map((u) => (
              <tr key={u.email} data-user={u.email}>
                <td>{u.email}</td><td class="hide-narrow">{u.full_name || u.username}</td><td>{u.role}</td><td>{u.status}</td><td class="hide-narrow">{u.resource_policy}</td>
                <td>{u.status === 'active'
                  ? <button type="button" class="secondary" onClick={() => setStatus(u.email, 'inactive').catch((e) => setError(e.message))}>Deactivate</button>
                  : <button type="button" class="secondary" onClick={() => setStatus(u.email, 'active').catch((e) => setError(e.message))}>Activate</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function Keypairs() {
  const keys = useLoad(() => gql('{keypairs{access_key user_id is_active is_admin resource_policy created_at} keypair_resource_policies{name}}'));
  const [made, setMade] = useState(null);
  const [error, setError] = useState('');
  const policies = (keys.data?.keypair_resource_policies || []).map((p) => p.name);
  async function setPolicy(access_key, resource_policy) {
    setError('');
    try {
      await mutate(`mutation($k:String!,$p:ModifyKeyPairInput!){modify_keypair(access_key:$k,props:$p){ok msg}}`, { k: access_key, p: { resource_policy } }, 'modify_keypair');
    } catch (e) { setError(e.message); }
    keys.reload();
  }
  const create = useSubmit(async (form) => {
    const r = await mutate(`mutation($u:String!,$p:KeyPairInput!){create_keypair(user_id:$u,props:$p){ok msg keypair{access_key secret_key}}}`,
      { u: form.get('owner'), p: { resource_policy: form.get('kpolicy') || 'default', rate_limit: 30000, is_active: true } }, 'create_keypair');
    setMade(r.keypair);
    keys.reload();
    return '';
  });
  return (
    <>
      <form class="card" onSubmit={create.submit} aria-label="Create a keypair">
        <h2>Create a keypair</h2>
        <div class="row">
          <div><label for="owner">For the user (email)</label><input id="owner" name="owner" type="email" required /></div>
          <div><label for="kpolicy">Resource policy</label><input id="kpolicy" name="kpolicy" defaultValue="default" /></div>
          <div><button type="submit" disabled={create.busy}>Create</button></div>
        </div>
        <ErrorText error={create.error} />
        {made && (
          <div class="notice" role="status" data-secret>
            <p><strong>Copy the secret key now: it is not shown again.</strong></p>
            <p>Access key: <code>{made.access_key}</code><br />Secret key: <code>{made.secret_key}</code></p>
            <button type="button" class="secondary" onClick={() => setMade(null)}>I have copied it</button>
          </div>
        )}
      </form>
      <div class="card">
        <h2>Keypairs</h2>
        <ErrorText error={keys.error || error} />
        <table>
          <thead><tr><th>Access key</th><th>User</th><th>Active</th><th>Policy</th></tr></thead>
          <tbody>{(keys.data?.keypairs || []).map((k) => (
            <tr key={k.access_key} data-keypair-user={k.user_id} data-policy={k.resource_policy}>
              <td><code>{k.access_key}</code></td><td>{k.user_id}</td><td>{k.is_active ? 'yes' : 'no'}</td>
              <td><select aria-label={`Policy of ${k.access_key}`} value={k.resource_policy} onChange={(e) => setPolicy(k.access_key, e.target.value)}>
                {policies.map((p) => <option key={p} value={p}>{p}</option>)}
              </select></td>
            </tr>
          ))}</tbody>
        </table>
      </div>
    </>
  );
}

// A policy's fields as a form shows them, and back: blanks leave a field to the server's
// default (create) or as it is (edit).
const POLICY_FIELDS = 'name total_resource_slots max_concurrent_sessions max_session_lifetime idle_timeout max_pending_session_count max_containers_per_session';

function policyProps(form) {
  const props = {};
  const slotsText = String(form.get('slots') || '').trim();
  props.total_resource_slots = slotsJson(slotsText);
  for (const [field, key] of [['maxs', 'max_concurrent_sessions'], ['pending', 'max_pending_session_count'],
    ['containers', 'max_containers_per_session'], ['idle', 'idle_timeout'], ['lifetime', 'max_session_lifetime']]) {
    const text = String(form.get(field) ?? '').trim();
    if (text === '') continue;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new Error(`"${text}" is not a whole number of ${key.replace(/_/g, ' ')}.`);
    props[key] = n;
  }
  return props;
}

function PolicyFields({ p }) {
  const v = (x) => (x === undefined || x === null ? '' : String(x));
  return (
    <div class="row">
      <div><label>Sessions at once (0: no limit)<input name="maxs" type="number" min="0" defaultValue={v(p?.max_concurrent_sessions)} /></label></div>
      <div><label>Total resources<input name="slots" placeholder="cpu=8 mem=32g" defaultValue={p ? slotsWords(p.total_resource_slots) : ''} /></label></div>
      <div><label>Waiting sessions at most<input name="pending" type="number" min="0" defaultValue={v(p?.max_pending_session_count)} /></label></div>
      <div><label>Containers per session<input name="containers" type="number" min="1" defaultValue={v(p?.max_containers_per_session)} /></label></div>
      <div><label>Idle timeout, s (0: never)<input name="idle" type="number" min="0" defaultValue={v(p?.idle_timeout)} /></label></div>
      <div><label>Lifetime, s (0: no limit)<input name="lifetime" type="number" min="0" defaultValue={v(p?.max_session_lifetime)} /></label></div>
    </div>
  );
}

function Policies() {
  const list = useLoad(() => gql(`{keypair_resource_policies{${POLICY_FIELDS}} keypairs{access_key resource_policy}}`));
  const [editing, setEditing] = useState('');
  const policies = list.data?.keypair_resource_policies || [];
  const users = (name) => (list.data?.keypairs || []).filter((k) => k.resource_policy === name).length;
  // A new policy: its name must be new (this form never changes one that exists).
  const create = useSubmit(async (form, element) => {
    const name = String(form.get('pname') || '').trim();
    if (policies.some((p) => p.name === name)) return `A policy named ${name} exists: edit it in the list below.`;
    let props;
    try { props = policyProps(form); } catch (err) { return err.message; }
    await mutate(`mutation($n:String!,$p:CreateKeyPairResourcePolicyInput!){create_keypair_resource_policy(name:$n,props:$p){ok msg}}`,
      { n: name, p: props }, 'create_keypair_resource_policy');
    element.reset();
    list.reload();
    return '';
  });
  // An existing one, from its current values; a change to one that keypairs use asks first.
  const edit = useSubmit(async (form) => {
    let props;
    try { props = policyProps(form); } catch (err) { return err.message; }
    const n = users(editing);
    if (n > 0 && !confirm(`${n} keypair${n === 1 ? '' : 's'} use the policy ${editing}: change it for all of them?`)) return 'Not changed.';
    await mutate(`mutation($n:String!,$p:ModifyKeyPairResourcePolicyInput!){modify_keypair_resource_policy(name:$n,props:$p){ok msg}}`,
      { n: editing, p: props }, 'modify_keypair_resource_policy');
    setEditing('');
    list.reload();
    return '';
  });
  const current = policies.find((p) => p.name === editing);
  return (
    <>
      <form class="card" onSubmit={create.submit} aria-label="New keypair policy">
        <h2>New keypair policy</h2>
        <div class="row"><div><label for="pname">Policy name</label><input id="pname" name="pname" required /></div></div>
        <PolicyFields />
        <p><button type="submit" disabled={create.busy}>Create</button></p>
        <ErrorText error={create.error} />
      </form>
      {current && (
        <form class="card" key={current.name} onSubmit={edit.submit} aria-label={`Edit the policy ${current.name}`}>
          <h2>Edit the policy {current.name}</h2>
          <p class="muted">{users(current.name)} keypair(s) use it.</p>
          <PolicyFields p={current} />
          <p><button type="submit" disabled={edit.busy}>Save</button> <button type="button" class="secondary" onClick={() => setEditing('')}>Cancel</button></p>
          <ErrorText error={edit.error} />
        </form>
      )}
      <div class="card">
        <h2>Keypair policies</h2>
        <ErrorText error={list.error} />
        <table>
          <thead><tr><th>Name</th><th>Sessions at once</th><th>Total resources</th><th class="hide-narrow">Idle timeout</th><th class="hide-narrow">Keypairs</th><th /></tr></thead>
          <tbody>{policies.map((p) => (
            <tr key={p.name} data-policy={p.name}>
              <td>{p.name}</td><td>{p.max_concurrent_sessions || 'no limit'}</td><td>{slots(p.total_resource_slots) || 'no limit'}</td>
              <td class="hide-narrow">{p.idle_timeout ? `${p.idle_timeout} s` : 'none'}</td><td class="hide-narrow">{users(p.name)}</td>
              <td><button type="button" class="secondary" aria-label={`Edit the policy ${p.name}`} onClick={() => setEditing(p.name)}>Edit</button></td>
            </tr>))}</tbody>
        </table>
      </div>
    </>
  );
}

// User and project resource policies: how many folders an owner may have and the quota of all
// its folders together (max_quota_scope_size). Edit forms start from the current values; a
// change to one that others use asks first.
function ScopePolicies({ kind }) {
  const Kind = kind === 'user' ? 'User' : 'Project';
  const field = `${kind}_resource_policies`;
  const owners = kind === 'user' ? 'users{resource_policy}' : 'groups{resource_policy}';
  const list = useLoad(() => gql(`{${field}{name max_vfolder_count max_quota_scope_size} ${owners}}`));
  const [editing, setEditing] = useState('');
  const policies = list.data?.[field] || [];
  const users = (name) => ((kind === 'user' ? list.data?.users : list.data?.groups) || []).filter((o) => o.resource_policy === name).length;
  function props(form) {
    const out = {};
    const count = String(form.get('sfolders') ?? '').trim();
    if (count !== '') {
      const n = Number(count);
      if (!Number.isInteger(n) || n < 0) throw new Error(`"${count}" is not a whole number of folders.`);
      out.max_vfolder_count = n;
    }
    const quota = String(form.get('squota') ?? '').trim();
    if (quota !== '') {
      const size = quota === '0' || quota === 'none' ? 0 : parseSize(quota);
      if (Number.isNaN(size)) throw new Error('A quota is a size like 100g (0: none).');
      out.max_quota_scope_size = size;
    }
    return out;
  }
  const create = useSubmit(async (form, element) => {
    const name = String(form.get('sname') || '').trim();
    if (policies.some((p) => p.name === name)) return `A policy named ${name} exists: edit it in the list below.`;
    let p;
    try { p = props(form); } catch (err) { return err.message; }
    await mutate(`mutation($n:String!,$p:Create${Kind}ResourcePolicyInput!){create_${kind}_resource_policy(name:$n,props:$p){ok msg}}`,
      { n: name, p }, `create_${kind}_resource_policy`);
    element.reset();
    list.reload();
    return '';
  });
  const edit = useSubmit(async (form) => {
    let p;
    try { p = props(form); } catch (err) { return err.message; }
    const n = users(editing);
    if (n > 0 && !confirm(`${n} ${kind === 'user' ? 'user' : 'project'}${n === 1 ? '' : 's'} use the policy ${editing}: change it for all of them?`)) return 'Not changed.';
    await mutate(`mutation($n:String!,$p:Modify${Kind}ResourcePolicyInput!){modify_${kind}_resource_policy(name:$n,props:$p){ok msg}}`,
      { n: editing, p }, `modify_${kind}_resource_policy`);
    setEditing('');
    list.reload();
    return '';
  });
  const current = policies.find((p) => p.name === editing);
  const fields = (p) => (
    <div class="row">
      <div><label>Folders at most (0: no limit)<input name="sfolders" type="number" min="0" defaultValue={p ? String(p.max_vfolder_count ?? '') : ''} /></label></div>
      <div><label>Quota of all its folders (0: none)<input name="squota" placeholder="100g" defaultValue={p && p.max_quota_scope_size ? String(p.max_quota_scope_size) : p ? '0' : ''} /></label></div>
    </div>
  );
  return (
    <>
      <form class="card" onSubmit={create.submit} aria-label={`New ${kind} policy`}>
        <h2>New {kind} policy</h2>
        <div class="row"><div><label>Policy name<input name="sname" required /></label></div></div>
        {fields(null)}
        <p><button type="submit" disabled={create.busy}>Create</button></p>
        <ErrorText error={create.error} />
      </form>
      {current && (
        <form class="card" key={current.name} onSubmit={edit.submit} aria-label={`Edit the ${kind} policy ${current.name}`}>
          <h2>Edit the {kind} policy {current.name}</h2>
          <p class="muted">{users(current.name)} {kind === 'user' ? 'user' : 'project'}(s) use it. Quotas in bytes, or a size like 100g.</p>
          {fields(current)}
          <p><button type="submit" disabled={edit.busy}>Save</button> <button type="button" class="secondary" onClick={() => setEditing('')}>Cancel</button></p>
          <ErrorText error={edit.error} />
        </form>
      )}
      <div class="card">
        <h2>{Kind} policies</h2>
        <ErrorText error={list.error} />
        <table>
          <thead><tr><th>Name</th><th>Folders at most</th><th>Quota of all its folders</th><th class="hide-narrow">{kind === 'user' ? 'Users' : 'Projects'}</th><th /></tr></thead>
          <tbody>{policies.map((p) => (
            <tr key={p.name} data-scope-policy={`${kind}:${p.name}`}>
              <td>{p.name}</td><td>{p.max_vfolder_count || 'no limit'}</td><td>{p.max_quota_scope_size ? bytes(p.max_quota_scope_size) : 'none'}</td>
              <td class="hide-narrow">{users(p.name)}</td>
              <td><button type="button" class="secondary" aria-label={`Edit the ${kind} policy ${p.name}`} onClick={() => setEditing(p.name)}>Edit</button></td>
            </tr>))}</tbody>
        </table>
      </div>
    </>
  );
}

// Agents, and on each what every running session holds: the allocation map operators and
// users ask for (which session has which GPU shares).
function Agents() {
  const list = useLoad(() => gql('{agents{id status scaling_group addr available_slots occupied_slots devices compute_containers(status:"RUNNING"){session_id image occupied_slots attached_devices}}}'));
  const sessions = useLoad(() => gql('query{compute_session_list(limit:1000,offset:0,status:"RUNNING"){items{id name user_email}}}').catch(() => null));
  const names = Object.fromEntries((sessions.data?.compute_session_list?.items || []).map((s) => [s.id, s]));
  return (
    <div class="card">
      <h2>Agents</h2>
      <ErrorText error={list.error} />
      {(list.data?.agents || []).map((a) => {
        const avail = JSON.parse(a.available_slots || '{}');
        const used = JSON.parse(a.occupied_slots || '{}');
        return (
          <div class="agent" key={a.id} data-agent={a.id}>
            <h3>{a.id} <span class={`status ${a.status}`}>{a.status}</span> <span class="muted">{a.scaling_group}{a.addr ? ` · ${a.addr}` : ''}</span></h3>
            <div class="bars">
              {Object.keys(avail).map((k) => {
                const total = Number(avail[k]);
                const taken = Number(used[k] || 0);
                return (
                  <div class="bar" key={k}>
                    <span class="label">{k}</span>
                    <meter min="0" max={total || 1} value={taken} />
                    <span class="muted">{k === 'mem' ? `${bytes(taken)} of ${bytes(total)}` : `${taken} of ${total}`}</span>
                  </div>
                );
              })}
            </div>
            <DeviceMap agent={a} names={names} />
            {(a.compute_containers || []).length > 0 && (
              <table>
                <thead><tr><th>Session</th><th>User</th><th>Holds</th></tr></thead>
                <tbody>{a.compute_containers.map((c) => (
                  <tr key={c.session_id}><td>{names[c.session_id]?.name || c.session_id}</td><td>{names[c.session_id]?.user_email || ''}</td><td>{slots(c.occupied_slots)}</td></tr>
                ))}</tbody>
              </table>
            )}
          </div>
        );
      })}
    </div>
  );
}

// Each GPU of an agent and which session holds what of it (the scheduler's device
// allocations); a GPU nobody holds says so.
function DeviceMap({ agent, names }) {
  let own = [];
  try { own = JSON.parse(agent.devices || '{}').devices || []; } catch { own = []; }
  const held = {};
  for (const c of agent.compute_containers || []) {
    let list = [];
    try { list = JSON.parse(c.attached_devices || '[]'); } catch { list = []; }
    for (const d of list) {
      (held[d.uuid] = held[d.uuid] || []).push({ session: names[c.session_id]?.name || c.session_id, user: names[c.session_id]?.user_email || '', slot: d.slot, amount: d.amount });
    }
  }
  // The agent's GPUs in index order, then any held GPU it no longer reports.
  const rows = own.slice().sort((a, b) => a.index - b.index).map((d) => ({ id: d.uuid, label: `#${d.index} ${d.name || ''}`.trim(), memory: d.memory, shares: d.shares }));
  for (const id of Object.keys(held).sort()) if (!rows.some((r) => r.id === id)) rows.push({ id, label: '' });
  if (!rows.length) return null;
  return (
    <table class="devices" data-device-map>
      <thead><tr><th>GPU</th><th>Held by</th></tr></thead>
      <tbody>{rows.map((r) => (
        <tr key={r.id} data-device={r.id}>
          <td>{r.label && <div>{r.label}{r.memory ? <span class="muted"> · {bytes(r.memory)}</span> : null}</div>}<code>{r.id}</code></td>
          <td>{(held[r.id] || []).length
            ? held[r.id].map((h, i) => <div key={i}>{h.session} <span class="muted">({h.user})</span>: {h.slot === 'cuda.device' ? 'the whole GPU' : `${h.amount} ${h.slot}`}</div>)
            : <span class="muted" data-idle>idle{Number(r.shares) > 0 ? ` (${r.shares} cuda.shares free)` : ''}</span>}</td>
        </tr>
      ))}</tbody>
    </table>
  );
}

// A background task (rescan_images) followed to its end over /events/background-task: its
// progress as it goes, then its outcome; `onEnd(ok, message)`.
function followTask(taskId, onProgress, onEnd) {
  const events = new EventSource(withToken(`/func/events/background-task?task_id=${encodeURIComponent(taskId)}`));
  const data = (e) => { try { return JSON.parse(e.data); } catch { return {}; } };
  events.addEventListener('bgtask_updated', (e) => onProgress(data(e)));
  for (const [name, ok] of [['bgtask_done', true], ['bgtask_failed', false], ['bgtask_cancelled', false]]) {
    events.addEventListener(name, (e) => { events.close(); onEnd(ok, data(e).message || ''); });
  }
  events.onerror = () => { if (events.readyState === EventSource.CLOSED) onEnd(false, 'The task\'s event stream ended; reload to see the images.'); };
}

// Container registries (superadmins): add one (its password sent once, never shown again),
// rescan one with its progress, remove one.
function Registries({ superadmin }) {
  const list = useLoad(() => gql('{container_registries{id hostname config{url type project username password ssl_verify}}}'));
  const [scan, setScan] = useState({});  // hostname → {busy, text, ok}
  const add = useSubmit(async (form, element) => {
    const props = { url: form.get('registry-url'), type: form.get('registry-type'), ssl_verify: !form.get('registry-insecure') };
    if (form.get('registry-project')) props.project = [form.get('registry-project')];
    if (form.get('registry-username')) {
      props.username = form.get('registry-username');
      props.password = form.get('registry-password');
    }
    await mutate('mutation($h:String!,$p:CreateContainerRegistryInput!){create_container_registry(hostname:$h,props:$p){container_registry{hostname}}}',
      { h: form.get('registry-host'), p: props }, 'create_container_registry');
    element.reset();
    list.reload();
  });
  async function remove(hostname) {
    try {
      await gql('mutation($h:String!){delete_container_registry(hostname:$h){container_registry{hostname}}}', { h: hostname });
      list.reload();
    } catch (err) {
      setScan((s) => ({ ...s, [hostname]: { text: explain(err), ok: false } }));
    }
  }
  async function rescan(hostname) {
    setScan((s) => ({ ...s, [hostname]: { busy: true, text: 'Rescanning…' } }));
    try {
      const r = await mutate('mutation($r:String){rescan_images(registry:$r){ok msg task_id}}', { r: hostname }, 'rescan_images');
      followTask(r.task_id,
        (p) => setScan((s) => ({ ...s, [hostname]: { busy: true, text: `${p.current_progress}/${p.total_progress} ${p.message || ''}` } })),
        (ok, message) => setScan((s) => ({ ...s, [hostname]: { busy: false, ok, text: message || (ok ? 'Done.' : 'Failed.') } })));
    } catch (err) {
      setScan((s) => ({ ...s, [hostname]: { busy: false, ok: false, text: explain(err) } }));
    }
  }
  if (!superadmin) return null;
  const registries = list.data?.container_registries || [];
  return (
    <div class="card">
      <h2>Registries</h2>
      <p class="muted">Where agents pull images from. A rescan finds a registry's images (a registry without a catalogue, such as Docker Hub or NGC: rescan one image with <code>bai admin image rescan REGISTRY/REPOSITORY:TAG</code>).</p>
      <ErrorText error={list.error} />
      {registries.length === 0 && !list.loading && <p class="muted">No registry yet: agents offer only their own images.</p>}
      {registries.length > 0 && (
        <table>
          <thead><tr><th>Registry</th><th>URL</th><th>Type</th><th>Project</th><th>Account</th><th></th></tr></thead>
          <tbody>{registries.map((r) => (
            <tr key={r.id} data-registry={r.hostname}>
              <td>{r.hostname}</td><td>{r.config.url}{r.config.ssl_verify === false ? ' (not verified)' : ''}</td><td>{r.config.type}</td>
              <td>{(r.config.project || []).join(', ')}</td>
              <td>{r.config.username ? `${r.config.username}${r.config.password ? ' (password set)' : ''}` : 'anonymous'}</td>
              <td>
                <button type="button" disabled={scan[r.hostname]?.busy} onClick={() => rescan(r.hostname)}>Rescan</button>{' '}
                <button type="button" class="danger" onClick={() => remove(r.hostname)}>Remove</button>
                {scan[r.hostname] && <div class={scan[r.hostname].ok === false ? 'error' : 'muted'} role="status">{scan[r.hostname].text}</div>}
              </td>
            </tr>))}</tbody>
        </table>
      )}
      <form class="inline" onSubmit={add.submit} aria-label="Add a registry">
        <input name="registry-host" placeholder="registry.lab:5000" aria-label="Registry name (host:port)" required />
        <input name="registry-url" placeholder="https://registry.lab:5000" aria-label="URL" required />
        <select name="registry-type" aria-label="Type"><option value="docker">docker</option><option value="harbor2">harbor2</option></select>
        <input name="registry-project" placeholder="project (optional)" aria-label="Project" />
        <input name="registry-username" placeholder="user (optional)" aria-label="User" autocomplete="off" />
        <input name="registry-password" type="password" placeholder="password" aria-label="Password" autocomplete="new-password" />
        <label><input type="checkbox" name="registry-insecure" /> skip TLS verification</label>
        <button disabled={add.busy}>Add registry</button>
      </form>
      <ErrorText error={add.error} />
    </div>
  );
}

// Images: registries' and the agents' own (host images are the agent host's /usr), sizes,
// where each is installed, aliases.
function Images() {
  const list = useLoad(() => gql('{images{name tag architecture registry installed installed_agents size_bytes aliases labels{key value}}}'));
  const alias = useSubmit(async (form, element) => {
    await mutate('mutation($a:String!,$t:String!){alias_image(alias:$a,target:$t){ok msg}}', { a: form.get('alias'), t: form.get('alias-target') }, 'alias_image');
    element.reset();
    list.reload();
  });
  const kind = (i) => (i.labels || []).find((l) => l.key === 'bai.image-kind')?.value;
  const ref = (i) => (i.registry === 'local' ? `${i.name}:${i.tag}` : `${i.registry}/${i.name}:${i.tag}`);
  return (
    <div class="card">
      <h2>Images</h2>
      <ErrorText error={list.error} />
      <table>
        <thead><tr><th>Image</th><th>From</th><th>Architecture</th><th>Size</th><th>Installed on</th><th>Aliases</th></tr></thead>
        <tbody>{(list.data?.images || []).map((i) => (
          <tr key={`${ref(i)}@${i.architecture}`} data-image={ref(i)}>
            <td>{ref(i)}</td>
            <td>{kind(i) === 'host' ? 'host (the agent\'s /usr)' : i.registry === 'local' ? 'agent store' : i.registry}</td>
            <td>{i.architecture}</td><td>{i.size_bytes ? bytes(i.size_bytes) : '—'}</td>
            <td>{(i.installed_agents || []).length ? i.installed_agents.join(', ') : 'not pulled yet'}</td>
            <td>{(i.aliases || []).join(', ')}</td>
          </tr>))}</tbody>
      </table>
      <form class="inline" onSubmit={alias.submit} aria-label="Alias an image">
        <input name="alias" placeholder="alias, e.g. pytorch" aria-label="Alias" required />
        <input name="alias-target" placeholder="registry.lab:5000/lab/pytorch:2.3" aria-label="Image it names" required list="image-refs" />
        <datalist id="image-refs">{(list.data?.images || []).map((i) => <option key={ref(i)} value={ref(i)} />)}</datalist>
        <button disabled={alias.busy}>Add alias</button>
      </form>
      <ErrorText error={alias.error} />
    </div>
  );
}

function Organization() {
  const d = useLoad(() => gql('{domains{name is_active total_resource_slots} groups{id name domain_name is_active total_resource_slots} scaling_groups{name is_active scheduler}}'));
  const make = (what) => useSubmit(async (form, element) => {
    const name = form.get(`${what}-name`);
    if (what === 'domain') {
      await mutate('mutation($n:String!,$p:DomainInput!){create_domain(name:$n,props:$p){ok msg}}', { n: name, p: {} }, 'create_domain');
    } else if (what === 'project') {
      await mutate('mutation($n:String!,$p:GroupInput!){create_group(name:$n,props:$p){ok msg}}', { n: name, p: { domain_name: form.get('project-domain') || 'default' } }, 'create_group');
    } else {
      await mutate('mutation($n:String!,$p:CreateScalingGroupInput!){create_scaling_group(name:$n,props:$p){ok msg}}', { n: name, p: { driver: 'static', scheduler: 'fifo' } }, 'create_scaling_group');
    }
    element.reset();
    d.reload();
    return '';
  });
  const forms = { domain: make('domain'), project: make('project'), group: make('group') };
  const domains = d.data?.domains || [];
  const groups = (d.data?.scaling_groups || []).map((g) => g.name);
  const state = (x) => (x.is_active ? '' : ' (inactive)');
  const limit = (x) => slots(x.total_resource_slots) || 'no limit';
  return (
    <div class="card">
      <h2>Domains, projects and resource groups</h2>
      <ErrorText error={d.error} />
      <div class="row top">
        <div>
          <h3>Domains</h3>
          <ul>{domains.map((x) => (
            <li key={x.name} data-domain={x.name}>{x.name}{state(x)} <span class="muted">({limit(x)})</span>
              <Editor kind="domain" item={x} groups={groups} reload={d.reload} /></li>
          ))}</ul>
          <form onSubmit={forms.domain.submit} aria-label="New domain">
            <label for="domain-name">New domain</label><input id="domain-name" name="domain-name" required pattern="[A-Za-z0-9_.\-]{1,64}" />
            <p><button type="submit" class="secondary" disabled={forms.domain.busy}>Create</button></p>
            <ErrorText error={forms.domain.error} />
          </form>
        </div>
        <div>
          <h3>Projects</h3>
          <ul>{(d.data?.groups || []).map((x) => (
            <li key={x.id} data-project={x.name}>{x.name}{state(x)} <span class="muted">({x.domain_name}; {limit(x)})</span>
              <Editor kind="project" item={x} groups={groups} reload={d.reload} /></li>
          ))}</ul>
          <form onSubmit={forms.project.submit} aria-label="New project">
            <label for="project-name">New project</label><input id="project-name" name="project-name" required pattern="[A-Za-z0-9_.\-]{1,64}" />
            <label for="project-domain">In the domain</label>
            <select id="project-domain" name="project-domain">{domains.map((x) => <option key={x.name} value={x.name}>{x.name}</option>)}</select>
            <p><button type="submit" class="secondary" disabled={forms.project.busy}>Create</button></p>
            <ErrorText error={forms.project.error} />
          </form>
        </div>
        <div>
          <h3>Resource groups</h3>
          <ul>{(d.data?.scaling_groups || []).map((x) => (
            <li key={x.name} data-resource-group={x.name}>{x.name} <span class="muted">({x.scheduler})</span>{state(x)}
              <Editor kind="group" item={x} groups={groups} reload={d.reload} /></li>
          ))}</ul>
          <form onSubmit={forms.group.submit} aria-label="New resource group">
            <label for="group-name">New resource group</label><input id="group-name" name="group-name" required pattern="[A-Za-z0-9_.\-]{1,64}" />
            <p><button type="submit" class="secondary" disabled={forms.group.busy}>Create</button></p>
            <ErrorText error={forms.group.error} />
          </form>
        </div>
      </div>
    </div>
  );
}

// Editing a domain, project or resource group: active or not, its resource limit (domains and
// projects), the resource groups it may use, deletion.
function Editor({ kind, item, groups, reload }) {
  const [open, setOpen] = useState(false);
  const [error, setError] = useState('');
  const label = kind === 'group' ? 'resource group' : kind;
  const linked = useLoad(() => {
    if (!open || kind === 'group') return Promise.resolve(null);
    return kind === 'domain'
      ? gql('query($d:String!){scaling_groups_for_domain(domain:$d){name}}', { d: item.name }).then((r) => r.scaling_groups_for_domain)
      : gql('query($u:String!){scaling_groups_for_user_group(user_group:$u){name}}', { u: item.id }).then((r) => r.scaling_groups_for_user_group);
  }, [open]);
  const save = useSubmit(async (form) => {
    const props = { is_active: form.get('active') === 'on' };
    if (kind !== 'group') {
      try {
        props.total_resource_slots = slotsJson(form.get('limit'));
      } catch (e) {
        return `${e.message} Nothing was changed.`;
      }
    }
    if (kind === 'domain') {
      await mutate('mutation($n:String!,$p:ModifyDomainInput!){modify_domain(name:$n,props:$p){ok msg}}', { n: item.name, p: props }, 'modify_domain');
    } else if (kind === 'project') {
      await mutate('mutation($g:UUID!,$p:ModifyGroupInput!){modify_group(gid:$g,props:$p){ok msg}}', { g: item.id, p: props }, 'modify_group');
    } else {
      await mutate('mutation($n:String!,$p:ModifyScalingGroupInput!){modify_scaling_group(name:$n,props:$p){ok msg}}', { n: item.name, p: props }, 'modify_scaling_group');
    }
    if (kind !== 'group' && linked.data) {
      const had = new Set(linked.data.map((g) => g.name));
      const target = kind === 'domain' ? 'domain' : 'user_group';
      for (const g of groups) {
        const want = form.get(`rg-${g}`) === 'on';
        if (want === had.has(g)) continue;
        const field = `${want ? 'associate' : 'disassociate'}_scaling_group_with_${target}`;
        await mutate(`mutation($s:String!,$t:${kind === 'domain' ? 'String' : 'UUID'}!){${field}(scaling_group:$s,${target}:$t){ok msg}}`, { s: g, t: kind === 'domain' ? item.name : item.id }, field);
      }
    }
    setOpen(false);
    reload();
    return '';
  });
  async function remove() {
    if (!window.confirm(`Delete the ${label} ${item.name}?`)) return;
    setError('');
    try {
      if (kind === 'domain') await mutate('mutation($n:String!){delete_domain(name:$n){ok msg}}', { n: item.name }, 'delete_domain');
      else if (kind === 'project') await mutate('mutation($g:UUID!){delete_group(gid:$g){ok msg}}', { g: item.id }, 'delete_group');
      else await mutate('mutation($n:String!){delete_scaling_group(name:$n){ok msg}}', { n: item.name }, 'delete_scaling_group');
      reload();
    } catch (e) { setError(explain(e)); }
  }
  const prefix = `${kind}-${(item.id || item.name).replace(/[^A-Za-z0-9_-]/g, '_')}`;
  if (!open) return <> <button type="button" class="secondary small" aria-label={`Edit the ${label} ${item.name}`} onClick={() => setOpen(true)}>Edit</button><ErrorText error={error} /></>;
  return (
    <form class="editor" onSubmit={save.submit} aria-label={`Edit the ${label} ${item.name}`}>
      <p><label class="inline"><input type="checkbox" name="active" defaultChecked={item.is_active} /> Active</label></p>
      {kind !== 'group' && <>
        <label for={`${prefix}-limit`}>Limit (empty: none)</label>
        <input id={`${prefix}-limit`} name="limit" defaultValue={slotsWords(item.total_resource_slots)} placeholder="cpu=8 mem=32g cuda.shares=2" />
        <fieldset><legend>May use the resource groups</legend>
          <ErrorText error={linked.error} />
          {linked.data && groups.map((g) => (
            <label class="inline" key={g}><input type="checkbox" name={`rg-${g}`} defaultChecked={linked.data.some((x) => x.name === g)} /> {g}</label>
          ))}
        </fieldset>
      </>}
      <p>
        <button type="submit" disabled={save.busy || (kind !== 'group' && !linked.data && !linked.error)}>Save</button>{' '}
        <button type="button" class="secondary" onClick={() => setOpen(false)}>Cancel</button>{' '}
        <button type="button" class="danger" onClick={remove}>Delete</button>
      </p>
      <ErrorText error={save.error || error} />
    </form>
  );
}
