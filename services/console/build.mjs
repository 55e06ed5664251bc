// Builds the console into static files: node build.mjs [--out DIR] [--dev]
// DIR (default ../../build/console) gets index.html, app.js, app.css and
// xterm.css; every byte the page needs is there (no CDN, no fonts fetched).
import * as esbuild from 'esbuild';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf('--out');
const out = resolve(at >= 0 && args[at + 1] ? args[at + 1] : join(here, '../../build/console'));
const dev = args.includes('--dev');

await mkdir(out, { recursive: true });
await esbuild.build({
  entryPoints: [join(here, 'src/main.js')],
  bundle: true,
  format: 'iife',
  target: ['es2022', 'chrome100', 'firefox100', 'safari15.4'],
  minify: !dev,
  sourcemap: dev ? 'inline' : false,
  legalComments: 'linked',
  outfile: join(out, 'app.js'),
  define: { 'process.env.NODE_ENV': dev ? '"development"' : '"production"' },
  logLevel: 'warning',
});
await esbuild.build({
  entryPoints: [join(here, 'src/app.css')],
  bundle: true,
  minify: !dev,
  outfile: join(out, 'app.css'),
  logLevel: 'warning',
});
await copyFile(join(here, 'node_modules/@xterm/xterm/css/xterm.css'), join(out, 'xterm.css'));
const version = JSON.parse(await readFile(join(here, 'package.json'), 'utf8')).version;
const html = (await readFile(join(here, 'src/index.html'), 'utf8')).replaceAll('@VERSION@', version);
await writeFile(join(out, 'index.html'), html);
console.log(`console built into ${out}`);
