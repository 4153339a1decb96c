// Measures the console in headless Chromium (driven by bench/console_bench.sh):
//  - first render of the session list: navigation start → every row shown, with N sessions,
//    against the same page with none (the app's fixed cost), median of ROUNDS loads each;
//  - a status change: the manager's answer to a DELETE → the row's new status in the open page.
//   node console_render.mjs URL EMAIL PASSWORD N ROUNDS
import { createRequire } from 'node:module';

const require = createRequire(new URL('../console/package.json', import.meta.url));
const puppeteer = require('puppeteer-core');
const [url, email, password, nText, roundsText] = process.argv.slice(2);
const n = Number(nText);
const rounds = Number(roundsText);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const browser = await puppeteer.launch({
  executablePath: process.env.BAI_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-dev-shm-usage', ...(process.getuid() === 0 ? ['--no-sandbox'] : [])],
});
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 800 });
await page.goto(url, { waitUntil: 'networkidle0' });
await page.type('#username', email);
await page.type('#password', password);
await page.click('button[type=submit]');
await page.waitForFunction(() => document.body.innerText.includes('Start a session'));

// In the page: the API with the login's CSRF token.
const api = (method, path, body) => page.evaluate(async (m, p, b) => {
  const check = await (await fetch('/server/login-check', { method: 'POST' })).json();
  const r = await fetch(p, {
    method: m,
    headers: { 'Content-Type': 'application/json', 'X-BAI-CSRF-Token': check.data.csrf_token,
      'X-BackendAI-Version': 'v8.20240915' },
    body: b === undefined ? undefined : JSON.stringify(b),
  });
  return { status: r.status, text: await r.text() };
}, method, path, body);

async function render(rows) {
  const times = [];
  for (let i = 0; i < rounds; i++) {
    await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
    if (rows === 0) {
      await page.waitForFunction(() => document.body.innerText.includes('No sessions yet'), { timeout: 60000 });
    } else {
      await page.waitForFunction((k) => document.querySelectorAll('tr[data-session]').length >= k,
        { timeout: 60000, polling: 'raf' }, rows);
    }
    times.push(await page.evaluate(() => performance.now()));
  }
  return median(times);
}

const empty = await render(0);
const policy = await api('POST', '/func/admin/gql', {
  query: 'mutation { modify_keypair_resource_policy(name: "default", props: {max_concurrent_sessions: 100000}) { ok msg } }',
});
if (!policy.text.includes('"ok":true')) throw new Error(`policy: ${policy.text}`);
for (let i = 0; i < n; i += 25) {
  await Promise.all(Array.from({ length: Math.min(25, n - i) }, (_, j) =>
    api('POST', '/func/session', { name: `bench-${i + j}`, image: 'python', type: 'interactive' })
      .then((r) => { if (r.status >= 300) throw new Error(`create: ${r.status} ${r.text}`); })));
}
const full = await render(n);

// Status changes: the open list, a DELETE, the row's status no longer RUNNING.
await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
await page.waitForFunction((k) => document.querySelectorAll('tr[data-session]').length >= k, { timeout: 60000 }, n);
const changes = [];
for (let i = 0; i < rounds; i++) {
  const name = `bench-${i}`;
  await page.waitForFunction((s) => document.querySelector(`tr[data-session="${s}"] .status`)?.textContent === 'RUNNING',
    { timeout: 60000 }, name);
  const r = await api('DELETE', `/func/session/${name}`);
  const answered = await page.evaluate(() => performance.now());
  if (r.status >= 300) throw new Error(`delete: ${r.status} ${r.text}`);
  await page.waitForFunction((s) => document.querySelector(`tr[data-session="${s}"] .status`)?.textContent !== 'RUNNING',
    { timeout: 10000, polling: 'raf' }, name);
  changes.push((await page.evaluate(() => performance.now())) - answered);
}
await browser.close();
console.log(JSON.stringify({ empty_ms: empty, full_ms: full, status_change_ms: median(changes), n, rounds }));
