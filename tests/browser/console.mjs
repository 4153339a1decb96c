// The console in a real browser: Debian's Chromium, headless, driven by puppeteer-core (no
// browser download). Each step asserts what a user would see and saves a screenshot.
//   node console.mjs URL EMAIL PASSWORD SHOTS_DIR [EVIL_URL]
// EVIL_URL: a page on another origin (run.py serves it) that POSTs to the console without the
// CSRF token; the step checks that nothing was made.
import { createRequire } from 'node:module';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const require = createRequire(new URL('../../console/package.json', import.meta.url));
const puppeteer = require('puppeteer-core');

const [url, email, password, shots, evil] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
const browser = await puppeteer.launch({
  executablePath: process.env.BAI_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // As root (CI, containers) Chromium's sandbox cannot start; a small /dev/shm must not matter.
  args: ['--disable-dev-shm-usage', ...(process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [])],
});
let failed = 0;
const problems = [];
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 800 });
page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
page.on('pageerror', (e) => problems.push(String(e)));

async function step(name, body) {
  const started = Date.now();
  try {
    await body();
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
  await page.screenshot({ path: join(shots, `${name}.png`) }).catch(() => {});
}
function expect(cond, what) { if (!cond) throw new Error(what); }
const text = () => page.evaluate(() => document.body.innerText);

await step('signin-refused', async () => {
  await page.goto(url, { waitUntil: 'networkidle0' });
  await page.waitForSelector('#username');
  await page.type('#username', email);
  await page.type('#password', 'not-the-password');
  await page.click('button[type=submit]');
  await page.waitForSelector('[role=alert]');
  expect((await text()).includes('Check the email and password'), 'no refusal shown');
});

await step('signin', async () => {
  await page.goto(url, { waitUntil: 'networkidle0' });
  await page.type('#username', email);
  await page.type('#password', password);
  await page.click('button[type=submit]');
  await page.waitForFunction(() => document.body.innerText.includes('Start a session'));
  expect(new URL(page.url()).pathname === '/sessions', `at ${page.url()}`);
});

await step('session-running', async () => {
  await page.type('#sname', 'browser-one');
  await page.click('form[aria-label="Start a session"] button');
  await page.waitForFunction(() => {
    const row = document.querySelector('tr[data-session="browser-one"] .status');
    return row && row.textContent === 'RUNNING';
  }, { timeout: 30000 });
});

await step('terminal', async () => {
  await page.click('tr[data-session="browser-one"] a');
  await page.waitForSelector('[data-terminal-state="connected"]', { timeout: 15000 });
  await page.waitForSelector('.xterm-helper-textarea');
  await page.focus('.xterm-helper-textarea');
  await page.keyboard.type('echo hi-$((6*7))\n');
  await page.waitForFunction(
    () => (document.querySelector('.xterm-rows') || {}).innerText?.includes('hi-42'),
    { timeout: 15000 });
});

if (evil) {
  await step('csrf-refused', async () => {
    // The signed-in browser opens another site's page, which submits a form to the console.
    const other = await browser.newPage();
    await other.goto(evil, { waitUntil: 'networkidle0' });
    await other.waitForFunction(() => document.title === 'sent', { timeout: 10000 });
    await other.close();
    const made = await page.evaluate(async () => {
      const r = await fetch('/func/folders', { headers: { 'X-BackendAI-Version': 'v8.20240915' } });
      return (await r.text()).includes('csrf-evil');
    });
    expect(!made, 'another site made a folder with the user\'s login');
  });
}

await step('signout', async () => {
  await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('header button');
  await page.click('header button');
  await page.waitForSelector('#username');
});

const blocked = problems.filter((p) => /Content Security Policy|Refused to/i.test(p));
if (blocked.length) {
  failed++;
  console.log(`FAIL the page broke its own Content-Security-Policy:\n  ${blocked.join('\n  ')}`);
}
await browser.close();
console.log(failed ? `browser: ${failed} failed` : 'browser: all passed');
process.exit(failed ? 1 : 0);
