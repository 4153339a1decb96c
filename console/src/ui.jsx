// Small pieces every page uses: navigation, form submission with errors, formatting.
import { useEffect, useState } from 'preact/hooks';
import { explain } from './api.js';

export function go(path) {
  history.pushState(null, '', path);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function Link({ href, children, ...rest }) {
  const current = location.pathname === href ? 'page' : undefined;
  return (
    <a href={href} aria-current={current} onClick={(e) => { e.preventDefault(); go(href); }} {...rest}>
      {children}
    </a>
  );
}

// A form's submit: busy while `action(formData, formElement)` runs; its error (thrown, or a
// message it returns) shown with what to do next.
export function useSubmit(action) {
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

// A value loaded once (and again when `deps` change or `reload()` is called).
export function useLoad(load, deps = []) {
  const [state, setState] = useState({ data: null, error: '', loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then((data) => live && setState({ data, error: '', loading: false }))
      .catch((err) => live && setState({ data: null, error: explain(err), loading: false }));
    return () => { live = false; };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export function ErrorText({ error }) {
  return error ? <p class="error" role="alert">{error}</p> : null;
}

export function age(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  for (n = Number(n); n >= 1024 && i < units.length - 1; i++) n /= 1024;
  return `${Number.isInteger(n) ? n : n.toFixed(1)} ${units[i]}`;
}

// "cpu 1, mem 1 GiB, cuda.shares 0.5": resource slots, memory in binary units.
export function slots(value) {
  let o = value;
  if (typeof value === 'string') {
    try { o = JSON.parse(value || '{}'); } catch { return ''; }
  }
  return Object.entries(o || {}).filter(([, v]) => Number(v) > 0)
    .map(([k, v]) => `${k} ${k === 'mem' || k.endsWith('.mem') ? bytes(v) : Number(v)}`).join(', ');
}

// "4g", "512m", "1.5GiB" → bytes; a bare number is bytes. NaN when not a size.
export function parseSize(text) {
  const m = String(text).trim().match(/^(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?$/i);
  if (!m) return NaN;
  const power = ' kmgtp'.indexOf((m[2] || ' ').toLowerCase());
  return Math.round(Number(m[1]) * 1024 ** power);
}

// "cpu=8, mem=32g, cuda.shares=2" → the slots JSON the manager keeps (memory in bytes); empty
// text → "{}" (no limit). Throws an Error saying what is wrong.
export function slotsJson(text) {
  const out = {};
  for (const part of String(text || '').split(/[,\s]+/).filter(Boolean)) {
    const m = part.match(/^([a-z][a-z0-9._-]*)=(.+)$/i);
    if (!m) throw new Error(`"${part}" is not name=amount (for example cpu=8, mem=32g).`);
    const memory = m[1] === 'mem' || m[1].endsWith('.mem');
    const n = memory ? parseSize(m[2]) : Number(m[2]);
    if (!Number.isFinite(n) || n < 0) throw new Error(`"${m[2]}" is not an amount of ${m[1]}.`);
    out[m[1]] = String(n);
  }
  return JSON.stringify(out);
}

// The words slotsJson reads back: "cpu=8 mem=32g" (memory in whole GiB or MiB when it is).
export function slotsWords(value) {
  let o = value;
  if (typeof value === 'string') {
    try { o = JSON.parse(value || '{}'); } catch { return ''; }
  }
  return Object.entries(o || {}).map(([k, v]) => {
    const n = Number(v);
    if ((k === 'mem' || k.endsWith('.mem')) && n > 0) {
      if (n % 2 ** 30 === 0) return `${k}=${n / 2 ** 30}g`;
      if (n % 2 ** 20 === 0) return `${k}=${n / 2 ** 20}m`;
    }
    return `${k}=${n}`;
  }).join(' ');
}

// Saves `blob` as a file named `name` (the browser's download).
export function saveBlob(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60000);
}
