// Builds the console into OUT (default ../build/console): one bundle of the app and its styles,
// named by their content's hash under assets/, and index.html pointing at them. No inline script
// or style anywhere (the webserver's Content-Security-Policy allows neither).
//   node build.mjs [OUT]
import * as esbuild from 'esbuild';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] || join(here, '..', 'build', 'console'));

const result = await esbuild.build({
  entryPoints: [join(here, 'src', 'main.jsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  loader: { '.css': 'css' },
  write: false,
  outdir: 'out',
  logLevel: 'warning',
});

// Only what this build writes is replaced (old hashed assets go with it).
rmSync(join(out, 'assets'), { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });
const names = {};
let gz = 0;
for (const file of result.outputFiles) {
  const ext = file.path.endsWith('.css') ? 'css' : 'js';
  const hash = createHash('sha256').update(file.contents).digest('hex').slice(0, 12);
  const name = `assets/app-${hash}.${ext}`;
  writeFileSync(join(out, name), file.contents);
  names[ext] = name;
  gz += gzipSync(file.contents, { level: 9 }).length;
}
const page = readFileSync(join(here, 'index.html'), 'utf8')
  .replace('%CSS%', '/' + names.css)
  .replace('%JS%', '/' + names.js);
writeFileSync(join(out, 'index.html'), page);
gz += gzipSync(page, { level: 9 }).length;
writeFileSync(join(out, 'bundle-size.json'), JSON.stringify({ gzip_bytes: gz }) + '\n');
console.log(`console: built into ${out} (${(gz / 1024).toFixed(1)} KiB gzipped)`);
