// Usage: one's own (and, for superadmins, everyone's) sessions and resources over a period,
// as charts and as CSV.
import { useState } from 'preact/hooks';
import { func } from './api.js';
import { ErrorText, bytes, saveBlob, useLoad } from './ui.jsx';

const PERIODS = [['1', 'Last 24 hours'], ['7', 'Last 7 days'], ['30', 'Last 30 days']];
// Each 15-minute bin sums what every session seen in it was allocated: sessions one after
// another add up, so a bin can pass the cluster's size ("CPU cores: 51" on 2 cores is 51
// one-core sessions in a quarter hour). The captions say so.
const SERIES = [['num_sessions', 'Sessions seen', (v) => String(v)], ['cpu_allocated', 'CPU cores allocated (summed over the sessions seen)', (v) => v.toFixed(1)],
  ['mem_allocated', 'Memory allocated (summed)', (v) => bytes(v)], ['gpu_allocated', 'GPU allocated (summed)', (v) => v.toFixed(2)]];

// Bins (15 minutes each) summed into at most 96 bars.
function bars(bins, key) {
  const group = Math.max(1, Math.ceil(bins.length / 96));
  const out = [];
  for (let i = 0; i < bins.length; i += group) {
    const part = bins.slice(i, i + group);
    const v = part.reduce((m, b) => Math.max(m, Number(b[key]?.value ?? 0)), 0);
    out.push({ at: part[0].date, v });
  }
  return out;
}

function Chart({ data, label, format }) {
  const max = Math.max(1e-9, ...data.map((d) => d.v));
  const w = 960;
  const h = 120;
  const bw = w / Math.max(1, data.length);
  return (
    <figure class="chart">
      <figcaption>{label}: highest 15-minute bin {format(max === 1e-9 ? 0 : max)}</figcaption>
      <svg viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`${label} over the period`} preserveAspectRatio="none">
        {data.map((d, i) => (
          <rect key={i} x={i * bw} y={h - (d.v / max) * h} width={Math.max(1, bw - 1)} height={(d.v / max) * h} fill="#2458d6">
            <title>{`${new Date(d.at * 1000).toLocaleString()}: ${format(d.v)}`}</title>
          </rect>
        ))}
      </svg>
    </figure>
  );
}

function csv(rows) {
  const cell = (v) => (/[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
  return rows.map((r) => r.map(cell).join(',')).join('\n') + '\n';
}

export function Usage({ who }) {
  const admin = who.role === 'superadmin';
  const [scope, setScope] = useState('user');
  const [days, setDays] = useState('7');
  const stats = useLoad(() => func('GET', `/resource/stats/${scope}/month`), [scope]);
  const all = Array.isArray(stats.data) ? stats.data : [];
  const since = Date.now() / 1000 - Number(days) * 86400;
  const bins = all.filter((b) => Number(b.date) >= since);
  function exportCsv() {
    const rows = [['time', ...SERIES.map(([k]) => k)]];
    for (const b of bins) rows.push([new Date(b.date * 1000).toISOString(), ...SERIES.map(([k]) => b[k]?.value ?? 0)]);
    saveBlob(new Blob([csv(rows)], { type: 'text/csv' }), `bai-usage-${scope}-${days}d.csv`);
  }
  return (
    <section class="card">
      <h2>Usage</h2>
      <div class="row">
        <div>
          <label for="period">Period</label>
          <select id="period" value={days} onChange={(e) => setDays(e.target.value)}>{PERIODS.map(([v, l]) => <option key={v} value={v}>{l}</option>)}</select>
        </div>
        {admin && (
          <div>
            <label for="scope">Whose</label>
            <select id="scope" value={scope} onChange={(e) => setScope(e.target.value)}><option value="user">Mine</option><option value="admin">Everyone's</option></select>
          </div>
        )}
        <div><button type="button" class="secondary" onClick={exportCsv} disabled={!bins.length} data-csv>Export CSV</button></div>
      </div>
      <ErrorText error={stats.error} />
      {stats.loading && !stats.data && <p class="muted">Loading…</p>}
      {bins.length > 0 && <p class="muted" data-usage-note>Each bar is a 15-minute bin: what the sessions seen in it were allocated, added up. Sessions that ran one after another count together, so a bar can pass what the cluster holds at once.</p>}
      {bins.length > 0 && SERIES.map(([k, label, format]) => <Chart key={k} data={bars(bins, k)} label={label} format={format} />)}
      {admin && <PeriodReport />}
    </section>
  );
}

const day = (d) => d.toISOString().slice(0, 10);

// Superadmins: every session of every project that a period touched (/resource/usage/period).
function PeriodReport() {
  const [range, setRange] = useState({ from: day(new Date(Date.now() - 7 * 86400000)), to: day(new Date()) });
  const compact = (d) => d.replaceAll('-', '');
  const report = useLoad(() => func('GET', `/resource/usage/period?start_date=${compact(range.from)}&end_date=${compact(range.to)}`), [range.from, range.to]);
  const rows = [];
  for (const p of Array.isArray(report.data) ? report.data : []) {
    const list = Array.isArray(p.sessions) ? p.sessions : Object.values(p.sessions || {});
    for (const s of list) {
      const u = s.total_usage || {};
      rows.push([p.project_name || p.g_name || '', s.user_email || '', s.session_name || '', s.status || '', s.created_at || '', s.terminated_at || '', s.used_time || '', u.cpu_allocated ?? '', u.mem_allocated ?? '', u.gpu_allocated ?? '']);
    }
  }
  const head = ['project', 'user', 'session', 'status', 'created_at', 'terminated_at', 'used_time', 'cpu_allocated', 'mem_allocated', 'gpu_allocated'];
  return (
    <div class="period">
      <h3>Everyone's sessions in a period</h3>
      <div class="row">
        <div><label for="from">From</label><input id="from" type="date" value={range.from} onChange={(e) => setRange({ ...range, from: e.target.value })} /></div>
        <div><label for="to">To</label><input id="to" type="date" value={range.to} onChange={(e) => setRange({ ...range, to: e.target.value })} /></div>
        <div><button type="button" class="secondary" disabled={!rows.length} onClick={() => saveBlob(new Blob([csv([head, ...rows])], { type: 'text/csv' }), `bai-usage-${range.from}-${range.to}.csv`)} data-period-csv>Export CSV</button></div>
      </div>
      <ErrorText error={report.error} />
      {report.data && rows.length === 0 && <p class="muted">No sessions in this period.</p>}
      {rows.length > 0 && (
        <table>
          <thead><tr><th>Project</th><th>User</th><th>Session</th><th class="hide-narrow">Status</th><th>Used</th><th class="hide-narrow">CPU</th><th class="hide-narrow">Memory</th></tr></thead>
          <tbody>{rows.slice(0, 500).map((r, i) => <tr key={i}><td>{r[0]}</td><td>{r[1]}</td><td>{r[2]}</td><td class="hide-narrow">{r[3]}</td><td>{r[6] || 'running'}</td><td class="hide-narrow">{r[7]}</td><td class="hide-narrow">{r[8] !== '' ? bytes(r[8]) : ''}</td></tr>)}</tbody>
        </table>
      )}
      {rows.length > 500 && <p class="muted">The first 500 of {rows.length}; the CSV has them all.</p>}
    </div>
  );
}
