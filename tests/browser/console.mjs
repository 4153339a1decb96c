// The console in a real browser: Debian's Chromium, headless, driven by puppeteer-core (no
// browser download). Each step asserts what a user would see and saves a screenshot.
//   node console.mjs URL EMAIL PASSWORD SHOTS_DIR EVIL_URL APP_PORT WORK_DIR
// EVIL_URL: a page on another origin (run.py serves it) that POSTs to the console without the
// CSRF token; the step checks that nothing was made. APP_PORT: an HTTP app on this host, which
// a session serves as a preopen port. WORK_DIR: for files to upload and downloads.
import { createRequire } from 'node:module';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const require = createRequire(new URL('../../console/package.json', import.meta.url));
const puppeteer = require('puppeteer-core');

const [url, email, password, shots, evil, appPort, work, registry] = process.argv.slice(2);
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
// Replaces what a controlled field holds the way a user does (select, delete, type), so every
// change is an input event: setting .value from script leaves the component's state behind, and
// any re-render (a session event, a reload) puts the old value back under the typing.
async function retype(selector, value) {
  await page.$eval(selector, (e) => { e.focus(); e.select(); });
  await page.keyboard.press('Backspace');
  await page.type(selector, value);
}
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
  // By keyboard alone: the email, Tab to the password, Enter.
  await page.goto(url, { waitUntil: 'networkidle0' });
  await page.focus('#username');
  await page.keyboard.type(email);
  await page.keyboard.press('Tab');
  await page.keyboard.type(password);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.body.innerText.includes('Start a session'));
  expect(new URL(page.url()).pathname === '/sessions', `at ${page.url()}`);
});

const running = (name) => page.waitForFunction((n) => {
  const row = document.querySelector(`tr[data-session="${n}"] .status`);
  return row && row.textContent === 'RUNNING';
}, { timeout: 30000 }, name);

async function startSession(name, { ports, command, mem, shares } = {}) {
  // The sessions page keeps its event stream open: the network never goes idle there.
  if (new URL(page.url()).pathname !== '/sessions') await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#sname');
  await page.waitForFunction(() => document.querySelector('[data-fit]')?.textContent);
  await page.type('#sname', name);
  if (mem) {
    await retype('#mem', mem);
  }
  if (shares) await page.type('#shares', shares);
  if (ports || command) {
    await page.click('button[aria-expanded]');
    if (ports) await page.type('#preopen', ports);
    if (command) {
      await page.select('#kind', 'batch');
      await page.waitForSelector('#command');
      await page.type('#command', command);
    }
  }
  await page.click('form[aria-label="Start a session"] button[type=submit]');
}

await step('session-running', async () => {
  await page.waitForSelector('[data-fit]');
  await page.waitForFunction(() => document.querySelector('[data-fit]').textContent.includes('Fits now'));
  await startSession('browser-one', { mem: '512m', shares: '0.5' });
  await running('browser-one');
});

// Issue 43, 7: "Fits now." only when the start would take it: the fit line asks the manager
// with the start's own rules (an image nobody offers, more than any agent holds).
await step('fit-check-is-the-start-rule', async () => {
  const fit = () => page.$eval('[data-fit]', (e) => e.textContent);
  await retype('#mem', '100t');
  await page.waitForFunction(() => document.querySelector('[data-fit]').textContent.startsWith('Would not start'), { timeout: 10000 });
  expect((await fit()).includes('mem'), `the refusal names memory: ${await fit()}`);
  await retype('#mem', '1g');
  await page.waitForFunction(() => document.querySelector('[data-fit]').textContent.includes('Fits now'), { timeout: 10000 });
  await retype('#image', 'no-such-image');
  await page.waitForFunction(() => document.querySelector('[data-fit]').textContent.startsWith('Would not start'), { timeout: 10000 });
  expect((await fit()).includes('no-such-image'), `the refusal names the image: ${await fit()}`);
  await retype('#image', 'python');
  await page.waitForFunction(() => document.querySelector('[data-fit]').textContent.includes('Fits now'), { timeout: 10000 });
});

await step('terminal', async () => {
  await page.click('tr[data-session="browser-one"] a[data-terminal-link]');
  await page.waitForSelector('[data-terminal-state="connected"]', { timeout: 15000 });
  await page.waitForSelector('.xterm-helper-textarea');
  await page.focus('.xterm-helper-textarea');
  await page.keyboard.type('echo made-in-the-terminal > made.txt; echo hi-$((6*7))\n');
  await page.waitForFunction(
    () => (document.querySelector('.xterm-rows') || {}).innerText?.includes('hi-42'),
    { timeout: 15000 });
});

await step('terminal-tabs', async () => {
  await page.click('[data-new-tab]');
  await page.waitForFunction(() => document.querySelectorAll('[data-terminal]').length === 2);
  await page.waitForSelector('[data-terminal-state="connected"]', { timeout: 15000 });
  // The second tab is its own shell: what it prints is in its rows only.
  await page.waitForFunction(() => document.querySelectorAll('.xterm-helper-textarea').length === 2);
  const areas = await page.$$('.xterm-helper-textarea');
  await areas[1].focus();
  await page.keyboard.type('echo second-$((2*3))\n');
  await page.waitForFunction(() => {
    const terms = [...document.querySelectorAll('[data-terminal]')];
    return terms[1].innerText.includes('second-6') && !terms[0].innerText.includes('second-6');
  }, { timeout: 15000 });
});

await step('app', async () => {
  await startSession('browser-app', { ports: appPort, mem: '256m' });
  await running('browser-app');
  await page.click('tr[data-session="browser-app"] td a');
  await page.waitForSelector(`[data-app="${appPort}"]`, { timeout: 15000 });
  const opened = new Promise((resolve) => browser.once('targetcreated', (t) => resolve(t)));
  await page.click(`[data-app="${appPort}"]`);
  const target = await opened;
  const tab = await target.page();
  await tab.waitForFunction(() => document.title === 'bai test app', { timeout: 20000 });
  // The app's own WebSocket, through the same port.
  await tab.waitForFunction(() => document.getElementById('ws').textContent !== 'connecting', { timeout: 15000 });
  const seen = await tab.evaluate(() => ({ path: document.getElementById('path').textContent, cookies: document.getElementById('cookies').textContent, at: location.href, ws: document.getElementById('ws').textContent }));
  await tab.screenshot({ path: join(shots, 'app-tab.png') });
  await tab.close();
  expect(seen.path === '/', `the app saw path ${seen.path}`);
  expect(seen.ws === 'echo:ping-42', `the app's WebSocket said ${seen.ws}`);
  expect(!seen.cookies.includes('AIOHTTP_SESSION'), 'the console\'s login cookie reached the app');
  expect(/^http:\/\/127\.0\.0\.1:212\d\d\/$/.test(seen.at), `the app opened at ${seen.at}`);
});

await step('logs-escape-html', async () => {
  await startSession('browser-batch', { command: 'echo "<img src=x onerror=window.__xss=1>log-line"' });
  await page.waitForFunction(() => {
    const row = document.querySelector('tr[data-session="browser-batch"] .status');
    return row && ['TERMINATED', 'RUNNING'].includes(row.textContent);
  }, { timeout: 30000 });
  await page.click('tr[data-session="browser-batch"] td a');
  await page.waitForFunction(() => (document.querySelector('[data-logs]') || {}).textContent?.includes('log-line'), { timeout: 20000 });
  const logs = await page.$eval('[data-logs]', (e) => e.textContent);
  expect(logs.includes('<img src=x onerror=window.__xss=1>'), 'the log line is not shown as text');
  expect(!(await page.evaluate(() => window.__xss)), 'a log line ran script');
  expect(!(await page.$('[data-logs] img')), 'a log line became markup');
});

const big = join(work, 'twenty-mb.bin');
writeFileSync(big, randomBytes(20 * 1024 * 1024));
const bigSha = createHash('sha256').update(readFileSync(big)).digest('hex');

await step('data-upload-resume', async () => {
  await page.goto(url + 'data', { waitUntil: 'networkidle0' });
  await page.type('#fname', 'browser-data');
  await page.click('form[aria-label="Create a folder"] button');
  await page.waitForSelector('tr[data-folder="browser-data"] a');
  await page.click('tr[data-folder="browser-data"] a');
  await page.waitForSelector('[data-upload]');
  // A slow link, so that the reload comes mid-upload.
  const cdp = await page.target().createCDPSession();
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 20, downloadThroughput: -1, uploadThroughput: 4 * 1024 * 1024 });
  const input = await page.$('[data-upload]');
  await input.uploadFile(big);
  await page.waitForFunction(() => {
    const p = document.querySelector('[data-progress] progress');
    return p && p.value >= 8 * 1024 * 1024;
  }, { timeout: 60000 });
  await page.reload({ waitUntil: 'networkidle0' });
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  await page.waitForSelector('[data-pending-upload]');
  // The first ticket taught the webserver the storage proxy's origin: the reloaded page may send
  // the rest straight there (its policy and markup name it; the storage proxy answers CORS).
  const origins = await page.$eval('meta[name="bai-storage-origins"]', (e) => e.content);
  expect(/^http:\/\/127\.0\.0\.1:\d+$/.test(origins), `storage origins in the page: "${origins}"`);
  // The file goes in parts sent at once (tus concatenation): the resumed upload ends with the
  // final request naming them.
  const concat = [];
  const seen = (r) => { const c = r.headers()['upload-concat']; if (c) concat.push(c); };
  page.on('request', seen);
  const again = await page.$('[data-upload]');
  await again.uploadFile(big);
  await page.waitForSelector('[data-progress="done"]', { timeout: 60000 });
  page.off('request', seen);
  const line = await page.$eval('[data-progress]', (e) => e.textContent);
  expect(/resumed at [1-9]/.test(line), `the upload started over: ${line}`);
  expect(concat.length === 1 && /^final;\S+part=0 \S+part=1$/.test(concat[0]), `not resumed in parts: ${JSON.stringify(concat)}`);
  await page.waitForSelector('tr[data-file="twenty-mb.bin"]');
  const size = await page.$eval('tr[data-file="twenty-mb.bin"]', (e) => e.textContent);
  expect(size.includes('20 MiB'), `listed as ${size}`);
});

const into = join(work, 'downloads');
async function downloaded(name) {
  const file = join(into, name);
  const deadline = Date.now() + 60000;
  while (!(existsSync(file) && readdirSync(into).every((f) => !f.endsWith('.crdownload'))) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(existsSync(file), `no download in ${into}: ${readdirSync(into)}`);
  return readFileSync(file);
}

await step('data-download', async () => {
  mkdirSync(into, { recursive: true });
  const usage = await page.$eval('[data-usage]', (e) => e.textContent);
  expect(usage.includes('20 MiB'), `the folder's usage: ${usage}`);
  const cdp = await page.target().createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: into });
  await page.click('tr[data-file="twenty-mb.bin"] [data-download]');
  const got = createHash('sha256').update(await downloaded('twenty-mb.bin')).digest('hex');
  expect(got === bigSha, 'the download differs from the upload');
});

// Issue 43, 3: the Quota field at creation is the folder's own quota (it was ignored), shown on
// the folder's page, enforced on uploads, and its owner changes it there.
await step('folder-quota', async () => {
  await page.goto(url + 'data', { waitUntil: 'networkidle0' });
  await page.type('#fname', 'quota-box');
  await page.type('#quota', '1k');
  await page.click('form[aria-label="Create a folder"] button');
  await page.waitForSelector('tr[data-folder="quota-box"] a');
  await page.click('tr[data-folder="quota-box"] a');
  await page.waitForSelector('[data-usage]');
  await page.waitForFunction(() => document.querySelector('[data-usage]').textContent.includes('of a 1 KiB quota'));
  const two = join(work, 'two-kb.bin');
  writeFileSync(two, randomBytes(2048));
  await (await page.$('[data-upload]')).uploadFile(two);
  await page.waitForFunction(() => [...document.querySelectorAll('[role=alert]')].some((e) => e.innerText.includes('quota')), { timeout: 30000 });
  await page.type('#fquota', '4k');
  await page.click('[data-set-quota]');
  await page.waitForFunction(() => document.querySelector('[data-usage]').textContent.includes('of a 4 KiB quota'));
  await (await page.$('[data-upload]')).uploadFile(two);
  await page.waitForSelector('tr[data-file="two-kb.bin"]', { timeout: 30000 });
  // The steps after this one work in browser-data.
  await page.goto(url + 'data/browser-data', { waitUntil: 'networkidle0' });
  await page.waitForSelector('[data-upload]');
});

await step('file-names-escape-html', async () => {
  const odd = join(work, '<img src=x onerror=window.__xss=2>.txt');
  writeFileSync(odd, 'plain text\n<b>not bold</b>\n');
  const input = await page.$('[data-upload]');
  await input.uploadFile(odd);
  await page.waitForSelector('[data-progress="done"]', { timeout: 30000 });
  await page.waitForFunction(() => [...document.querySelectorAll('tr[data-file]')].some((r) => r.dataset.file.startsWith('<img')), { timeout: 15000 });
  const row = await page.$('tr[data-file^="<img"] button.linkish');
  await row.click();
  await page.waitForSelector('[data-preview] pre');
  const shown = await page.$eval('[data-preview] pre', (e) => e.textContent);
  expect(shown.includes('<b>not bold</b>'), `preview: ${shown}`);
  expect(!(await page.evaluate(() => window.__xss)), 'a file name ran script');
  expect(!(await page.$('tr[data-file] img')), 'a file name became markup');
  // An empty file is a file too.
  const empty = join(work, 'empty.txt');
  writeFileSync(empty, '');
  await (await page.$('[data-upload]')).uploadFile(empty);
  await page.waitForSelector('tr[data-file="empty.txt"]', { timeout: 15000 });
  const emptyRow = await page.$eval('tr[data-file="empty.txt"]', (e) => e.innerText);
  expect(emptyRow.includes('0 B'), `empty.txt: ${emptyRow}`);
  // Session names cannot carry markup at all: the manager refuses them.
  const refused = await page.evaluate(async () => {
    const r = await fetch('/func/session', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-BackendAI-Version': 'v8.20240915' }, body: JSON.stringify({ name: '<b>x</b>', image: 'python' }) });
    return r.status;
  });
  expect(refused === 403 || refused === 400, `a session name with markup: HTTP ${refused}`);
});

await step('session-files', async () => {
  // The file the terminal made, listed on the session's page and downloaded from there.
  await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('tr[data-session="browser-one"] td a');
  await page.click('tr[data-session="browser-one"] td a');
  await page.waitForSelector('tr[data-session-file="made.txt"] button', { timeout: 15000 });
  await page.click('tr[data-session-file="made.txt"] button');
  const text = String(await downloaded('made.txt'));
  expect(text === 'made-in-the-terminal\n', `made.txt: ${JSON.stringify(text)}`);
});

if (evil) {
  await step('csrf-refused', async () => {
    // The signed-in browser opens another site's page, which submits a form to the console.
    const other = await browser.newPage();
    await other.goto(evil, { waitUntil: 'networkidle0' });
    await other.waitForFunction(() => document.title === 'sent', { timeout: 10000 });
    await other.close();
    const listed = await page.evaluate(async () => {
      const r = await fetch('/func/folders', { headers: { 'X-BackendAI-Version': 'v8.20240915', 'X-BAI-CSRF-Token': localStorage.getItem('bai.csrf') } });
      return { status: r.status, text: await r.text() };
    });
    expect(listed.status === 200, `the console's own folder list: ${listed.status} ${listed.text}`);
    expect(!listed.text.includes('csrf-evil'), 'another site made a folder with the user\'s login');
  });
}

const userEmail = 'browser-user@bai.local';
const userPassword = 'a-long-browser-password';

await step('admin-creates-user', async () => {
  await page.goto(url + 'admin/policies', { waitUntil: 'networkidle0' });
  await page.waitForSelector('#pname');
  // Issue 43, 4: the form starts empty (it opened as "default"/5, and one Save cut every user's
  // limit), and a name that exists is refused there, not changed.
  expect(await page.$eval('#pname', (e) => e.value) === '', 'the new-policy form is not empty');
  const create = 'form[aria-label="New keypair policy"]';
  await page.type('#pname', 'default');
  await page.type(`${create} input[name="maxs"]`, '5');
  await page.click(`${create} button[type=submit]`);
  await page.waitForSelector(`${create} [role=alert]`);
  const refusal = await page.$eval(`${create} [role=alert]`, (e) => e.innerText);
  expect(refusal.includes('exists'), `creating "default": ${refusal}`);
  expect((await page.$eval('tr[data-policy="default"]', (e) => e.innerText)).includes('30'), 'default changed');
  await page.$eval('#pname', (e) => { e.value = ''; });
  await page.type('#pname', 'one-session');
  await page.click(`${create} button[type=submit]`);
  await page.waitForSelector('tr[data-policy="one-session"]');
  // Editing shows the current values; a policy keypairs use asks before it changes (declined).
  await page.click('button[aria-label="Edit the policy default"]');
  const edit = 'form[aria-label="Edit the policy default"]';
  await page.waitForSelector(edit);
  expect(await page.$eval(`${edit} input[name="maxs"]`, (e) => e.value) === '30', 'the edit form does not show 30');
  await page.$eval(`${edit} input[name="maxs"]`, (e) => { e.value = '5'; });
  page.once('dialog', (d) => d.dismiss());
  await page.click(`${edit} button[type=submit]`);
  await page.waitForSelector(`${edit} [role=alert]`);
  expect((await page.$eval('tr[data-policy="default"]', (e) => e.innerText)).includes('30'), 'a declined change happened');
  await page.click(`${edit} button.secondary`);
  // The new policy with one session at once, by editing it (nobody uses it: no question).
  await page.click('button[aria-label="Edit the policy one-session"]');
  const mine = 'form[aria-label="Edit the policy one-session"]';
  await page.waitForSelector(mine);
  await page.$eval(`${mine} input[name="maxs"]`, (e) => { e.value = '1'; });
  await page.click(`${mine} button[type=submit]`);
  await page.waitForFunction(() => document.querySelector('tr[data-policy="one-session"] td:nth-child(2)')?.innerText === '1');
  // Issue 43, 3: user policies (folders and the quota of all of a user's folders) on the same page.
  const user = 'form[aria-label="New user policy"]';
  await page.type(`${user} input[name="sname"]`, 'two-folders');
  await page.type(`${user} input[name="sfolders"]`, '2');
  await page.type(`${user} input[name="squota"]`, '1m');
  await page.click(`${user} button[type=submit]`);
  await page.waitForSelector('tr[data-scope-policy="user:two-folders"]');
  const row = await page.$eval('tr[data-scope-policy="user:two-folders"]', (e) => e.innerText);
  expect(row.includes('1 MiB') && row.includes('2'), `the user policy row: ${row}`);
  await page.goto(url + 'admin/users', { waitUntil: 'networkidle0' });
  await page.type('#email', userEmail);
  await page.type('#upass', userPassword);
  await page.click('form[aria-label="Create a user"] button[type=submit]');
  await page.waitForSelector(`tr[data-user="${userEmail}"]`);
  await page.goto(url + 'admin/keypairs', { waitUntil: 'networkidle0' });
  await page.waitForSelector(`tr[data-keypair-user="${userEmail}"] select`);
  await page.select(`tr[data-keypair-user="${userEmail}"] select`, 'one-session');
  await page.waitForFunction((e) => document.querySelector(`tr[data-keypair-user="${e}"]`).dataset.policy === 'one-session', {}, userEmail);
});

await step('admin-organization-and-sharing', async () => {
  await page.goto(url + 'admin/organization', { waitUntil: 'networkidle0' });
  await page.type('#project-name', 'browser-project');
  await page.click('form[aria-label="New project"] button');
  await page.waitForSelector('li[data-project="browser-project"]');
  // Editing it: a bad limit is explained and changes nothing; a limit and a resource group.
  const edit = 'button[aria-label="Edit the project browser-project"]';
  const form = 'form[aria-label="Edit the project browser-project"]';
  await page.click(edit);
  await page.waitForSelector(`${form} input[name="rg-default"]`);
  const limit = await page.$(`${form} input[name="limit"]`);
  await limit.type('cpu=lots');
  await page.click(`${form} button[type=submit]`);
  await page.waitForSelector(`${form} [role=alert]`);
  const refusal = await page.$eval(`${form} [role=alert]`, (e) => e.innerText);
  expect(refusal.includes('not an amount of cpu'), `a bad limit: ${refusal}`);
  await limit.click({ clickCount: 3 });
  await limit.type('cpu=4 mem=8g');
  const rg = await page.$(`${form} input[name="rg-default"]`);
  if (!(await rg.evaluate((e) => e.checked))) await rg.click();
  await page.click(`${form} button[type=submit]`);
  await page.waitForFunction(() => document.querySelector('li[data-project="browser-project"]')?.innerText.includes('cpu 4, mem 8 GiB'));
  await page.click(edit);
  await page.waitForSelector(`${form} input[name="rg-default"]`);
  expect(await page.$eval(`${form} input[name="rg-default"]`, (e) => e.checked), 'the project does not use the resource group default');
  expect(await page.$eval(`${form} input[name="limit"]`, (e) => e.value) === 'cpu=4 mem=8g', 'the limit does not read back');
  await page.screenshot({ path: join(shots, 'admin-organization-edit.png') });
  await page.click(`${form} button.secondary`);
  // A resource group made, then deleted (after a confirmation).
  await page.type('#group-name', 'browser-rg');
  await page.click('form[aria-label="New resource group"] button');
  await page.waitForSelector('li[data-resource-group="browser-rg"]');
  await page.click('button[aria-label="Edit the resource group browser-rg"]');
  page.once('dialog', (d) => d.accept());
  await page.click('form[aria-label="Edit the resource group browser-rg"] button.danger');
  await page.waitForFunction(() => !document.querySelector('li[data-resource-group="browser-rg"]'));
  // The admin shares a folder with the new user (accepted below, as them).
  await page.goto(url + 'data/browser-data', { waitUntil: 'networkidle0' });
  await page.type('#emails', userEmail);
  await page.click('form[aria-label="Invite"] button');
  await page.waitForFunction(() => document.querySelector('#emails').value === '');
  expect(!(await page.$('form[aria-label="Invite"] + [role=alert]')), 'the invitation was refused');
});

// Issue 46, item 7: a registry added from the console (the password never shown back), rescanned
// with its progress to its outcome, its image listed with where it comes from, and offered by
// its whole reference in the start form; host images say they are the host's.
await step('admin-registries-and-images', async () => {
  expect(registry, 'run.py started no registry (docker-registry and skopeo are needed)');
  await page.goto(url + 'admin/images', { waitUntil: 'networkidle0' });
  await page.waitForSelector('form[aria-label="Add a registry"]');
  await page.type('input[name="registry-host"]', registry);
  await page.type('input[name="registry-url"]', `http://${registry}`);
  await page.type('input[name="registry-username"]', 'lab');
  await page.type('input[name="registry-password"]', 'not-shown-again');
  await page.click('form[aria-label="Add a registry"] button');
  await page.waitForSelector(`tr[data-registry="${registry}"]`);
  let t = await text();
  expect(t.includes('lab (password set)'), 'the account is not listed as having a password');
  expect(!t.includes('not-shown-again'), 'the password is shown back');
  // docker-registry without auth takes any credentials: the rescan goes through.
  await page.click(`tr[data-registry="${registry}"] button`);
  await page.waitForFunction((r) => /1 image in 1 registry/.test(
    document.querySelector(`tr[data-registry="${r}"] [role=status]`)?.innerText || ''), { timeout: 30000 }, registry);
  await page.goto(url + 'admin/images', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector(`tr[data-image="${registry}/lab/app:1"]`);
  t = await page.$eval(`tr[data-image="${registry}/lab/app:1"]`, (e) => e.innerText);
  expect(t.includes('not pulled yet'), `the registry image's row: ${t}`);
  await page.screenshot({ path: join(shots, 'admin-registries.png') });
  // The start form offers it by its whole reference (lab/app:1 alone would be Docker Hub's).
  await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector(`#images option[value="${registry}/lab/app:1"]`);
  const offered = await page.$$eval('#images option', (o) => o.map((x) => x.value));
  expect(offered.includes(`${registry}/lab/app:1`), `the start form offers ${offered.join(' ')}`);
});

await step('admin-agents', async () => {
  await page.goto(url + 'admin/agents', { waitUntil: 'networkidle0' });
  await page.waitForSelector('[data-agent] table');
  const t = await text();
  expect(t.includes('browser-one'), 'the agent does not show what browser-one holds');
  // The GPU map: the fake driver's GPU that holds browser-one's half.
  await page.waitForSelector('[data-device-map] tr[data-device]');
  const gpu = await page.$eval('[data-device-map]', (e) => e.innerText);
  expect(/browser-one .*: 0\.5 cuda\.shares/.test(gpu), `the GPU map: ${gpu}`);
  // Both of the fake driver's GPUs are listed: the one nobody holds says so.
  const rows = await page.$$eval('[data-device-map] tr[data-device]', (r) => r.length);
  expect(rows === 2, `the GPU map lists ${rows} GPUs, not the agent's 2: ${gpu}`);
  expect(Boolean(await page.$('[data-device-map] [data-idle]')), `no idle GPU in the map: ${gpu}`);
});

if (evil) {
  // Issue 43, 5c: cookies ignore ports, so a page on another port of this host (a session's app;
  // run.py's other page stands in) can replace the console's login cookie with the attacker's,
  // or add one under another path. The console must not become the attacker's.
  await step('cookie-tossed-by-another-port', async () => {
    const r = await fetch(url + 'server/login', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: userEmail, password: userPassword }),
    });
    const attacker = ((r.headers.get('set-cookie') || '').match(/AIOHTTP_SESSION=([^;]+)/) || [])[1];
    expect(attacker, `no login for ${userEmail}: HTTP ${r.status}`);
    // The page on the other port sets the attacker's login for this host: under /func (sent
    // before the console's own, a longer path) and under / (the browser keeps the console's
    // HttpOnly one there).
    const other = await browser.newPage();
    await other.goto(evil, { waitUntil: 'networkidle0' });
    await other.evaluate((v) => {
      document.cookie = `AIOHTTP_SESSION=${v}; path=/func`;
      document.cookie = `AIOHTTP_SESSION=${v}; path=/`;
    }, attacker);
    await other.close();
    await page.goto(url + 'data', { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('main .card');
    const who = await page.$eval('.who', (e) => e.innerText);
    expect(!who.includes(userEmail), `the console became the attacker's: ${who}`);
    const made = await page.evaluate(async () => {
      const res = await fetch('/func/folders', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-BackendAI-Version': 'v8.20240915', 'X-BAI-CSRF-Token': localStorage.getItem('bai.csrf') },
        body: JSON.stringify({ name: 'tossed-check' }),
      });
      return res.status;
    });
    expect(made === 201, `the console's folder: HTTP ${made}`);
    const theirs = await (await fetch(url + 'func/folders', {
      headers: { Cookie: `AIOHTTP_SESSION=${attacker}`, 'X-BackendAI-Version': 'v8.20240915' },
    })).text();
    expect(!theirs.includes('tossed-check'), 'the folder was made with the attacker\'s login');
    // Had the attacker's cookie replaced the console's own (an HTTP answer can): the console
    // asks to sign in again instead of running as the attacker.
    await page.setCookie({ name: 'AIOHTTP_SESSION', value: attacker, url, httpOnly: true });
    await page.goto(url + 'data', { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#username');
    expect(!(await text()).includes(userEmail), 'the sign-in page shows the attacker');
    await page.type('#username', email);
    await page.type('#password', password);
    await page.click('button[type=submit]');
    await page.waitForSelector('.who');
    const again = await page.$eval('.who', (e) => e.innerText);
    expect(!again.includes(userEmail), `signed in again as ${again}`);
  });
}

await step('usage', async () => {
  await page.goto(url + 'usage', { waitUntil: 'networkidle0' });
  await page.waitForSelector('figure.chart svg rect');
  expect((await text()).includes('Sessions seen: highest 15-minute bin'), 'no sessions chart');
  // Issue 43, 7: the bins are sums over the sessions seen, and the page says so.
  expect((await text()).includes('Sessions that ran one after another count together'), 'no note on what a bin sums');
  // A superadmin's report of everyone's sessions in the period, exportable.
  await page.waitForSelector('[data-period-csv]:not([disabled])', { timeout: 15000 });
  expect((await text()).includes('browser-one'), 'the period report lacks browser-one');
});

await step('phone', async () => {
  // A phone's screen: every page fits its width (no sideways scrolling).
  await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
  const wide = [];
  for (const path of ['sessions', 'data/browser-data', 'usage', 'admin/agents']) {
    await page.goto(url + path, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('main .card');
    await new Promise((r) => setTimeout(r, 300));
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    if (w > 392) wide.push(`${path}: ${w}px`);
    await page.screenshot({ path: join(shots, `phone-${path.replace('/', '-')}.png`) });
  }
  await page.setViewport({ width: 1280, height: 800 });
  expect(wide.length === 0, `wider than the phone: ${wide.join(', ')}`);
});

await step('signout', async () => {
  await page.goto(url + 'sessions', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('[data-signout]');
  await page.click('[data-signout]');
  await page.waitForSelector('#username');
});

await step('new-user-signs-in-and-meets-the-policy', async () => {
  await page.type('#username', userEmail);
  await page.type('#password', userPassword);
  await page.click('button[type=submit]');
  await page.waitForFunction(() => document.body.innerText.includes('Start a session'));
  expect(!(await text()).includes('Administration'), 'a user sees Administration');
  await startSession('user-first', { mem: '256m' });
  await running('user-first');
  await startSession('user-second', { mem: '256m' });
  await page.waitForFunction(() => {
    const row = document.querySelector('tr[data-session="user-second"]');
    return row && row.innerText.includes('limit 1');
  }, { timeout: 30000 });
  const why = await page.$eval('tr[data-session="user-second"]', (e) => e.innerText);
  expect(why.includes('PENDING'), `user-second: ${why}`);
  // The folder the admin shared: accepted, then listed as shared.
  await page.goto(url + 'data', { waitUntil: 'networkidle0' });
  await page.waitForSelector('[data-invitations] button');
  await page.click('[data-invitations] button');
  await page.waitForSelector('tr[data-folder="browser-data"]');
  const row = await page.$eval('tr[data-folder="browser-data"]', (e) => e.innerText);
  expect(row.includes('shared with you'), `browser-data: ${row}`);
  await page.click('[data-signout]');
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
