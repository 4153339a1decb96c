// One upload through the console's Data page in headless Chromium: signs in, opens FOLDER,
// chooses FILE, prints the seconds from the choice to "done".
//   node console_upload.mjs URL EMAIL PASSWORD FOLDER FILE
import { createRequire } from 'node:module';

const require = createRequire(new URL('../console/package.json', import.meta.url));
const puppeteer = require('puppeteer-core');
const [url, email, password, folder, file] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: process.env.BAI_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--disable-dev-shm-usage', ...(process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [])],
});
try {
  const page = await browser.newPage();
  await page.goto(url, { waitUntil: 'networkidle0' });
  await page.type('#username', email);
  await page.type('#password', password);
  await page.click('button[type=submit]');
  await page.waitForFunction(() => document.body.innerText.includes('Start a session'));
  await page.goto(`${url}data/${encodeURIComponent(folder)}`, { waitUntil: 'networkidle0' });
  const input = await page.waitForSelector('[data-upload]');
  const started = Date.now();
  await input.uploadFile(file);
  await page.waitForSelector('[data-progress="done"]', { timeout: 600000 });
  console.log(((Date.now() - started) / 1000).toFixed(3));
} finally {
  await browser.close();
}
