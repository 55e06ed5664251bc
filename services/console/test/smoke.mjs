// Browser smoke test of the console with puppeteer-core and a local Chromium:
//   node test/smoke.mjs --url http://127.0.0.1:8090/console/ [--user U --password P]
//        [--shots DIR] [--chromium /usr/bin/chromium] [--image python:3.12] [--mock]
// Against test/mock-server.mjs (--mock: also the invitation, terminal echo
// and 401 steps that need the mock's data), or a real stack (TESSERA_CONSOLE_URL).
// Exits non-zero on the first failed step or any uncaught page error.
import puppeteer from 'puppeteer-core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const arg = (n, d) => { const i = process.argv.indexOf(n); return i >= 0 ? process.argv[i + 1] : d; };
const MOCK = process.argv.includes('--mock');
// --mock without --url: start a fresh mock server (ports 18090..18092 unless --port).
let mockProc = null;
if (MOCK && !process.argv.includes('--url')) {
  const port = arg('--port', '18090');
  const here = dirname(fileURLToPath(import.meta.url));
  mockProc = spawn(process.execPath, [join(here, 'mock-server.mjs'), '--port', port, ...(process.argv.includes('--dir') ? ['--dir', arg('--dir')] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((ok, fail) => { mockProc.stdout.once('data', ok); mockProc.once('exit', (c) => fail(new Error('mock server exited: ' + c))); });
  process.argv.push('--url', `http://127.0.0.1:${port}/console/`);
}
const URL_ = arg('--url', 'http://127.0.0.1:8090/console/');
const USER = arg('--user', 'alice@example.com');
const PASS = arg('--password', 'secret');
const SHOTS = arg('--shots', '/tmp/console-shots');
const IMAGE = arg('--image', 'python:3.12');
mkdirSync(SHOTS, { recursive: true });

const browser = await puppeteer.launch({
  executablePath: arg('--chromium', process.env.CHROMIUM || '/usr/bin/chromium'),
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const errors = [];
let step = 'start';
const shot = async (page, name) => { const p = join(SHOTS, name + '.png'); await page.screenshot({ path: p }); console.log('  screenshot', p); };
const ok = (m) => console.log('ok  ', m);
const textOf = (page, sel) => page.$eval(sel, (e) => e.textContent);
const waitText = (page, sel, text, timeout = 15000) =>
  page.waitForFunction((s, t) => [...document.querySelectorAll(s)].some((e) => e.textContent.includes(t)), { timeout }, sel, text);

try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error' && !/status of (401|403|404|409)/.test(m.text())) errors.push('console: ' + m.text()); });

  step = 'login page';
  await page.goto(URL_, { waitUntil: 'networkidle0' });
  await page.waitForSelector('#login-username');
  await shot(page, '01-login');
  ok(step);

  step = 'wrong password';
  await page.type('#login-username', USER);
  await page.type('#login-password', 'wrong-password');
  await page.click('#login-submit');
  await page.waitForSelector('[role=alert]');
  ok(`${step}: "${await textOf(page, '[role=alert]')}"`);
  await shot(page, '02-login-error');

  step = 'login';
  await page.$eval('#login-password', (e) => { e.value = ''; });
  await page.click('#login-password', { clickCount: 3 });
  await page.keyboard.press('Backspace');
  await page.type('#login-password', PASS);
  await page.click('#login-submit');
  await page.waitForSelector('[data-nav=summary]');
  await page.waitForFunction(() => !document.querySelector('.loading'), { timeout: 15000 }).catch(() => {});
  await shot(page, '03-summary');
  ok(step);

  step = 'reload keeps the login';
  await page.reload({ waitUntil: 'networkidle0' });
  await page.waitForSelector('[data-nav=sessions]');
  ok(step);

  step = 'launch a session';
  await page.click('[data-nav=sessions]');
  await page.waitForSelector('[data-test=launch]');
  await page.click('[data-test=launch]');
  await page.waitForSelector('#launch-image');
  await page.waitForFunction(() => !document.querySelector('.modal .loading'), { timeout: 15000 });
  const name = 'smoke-' + Date.now().toString(36);
  const isSelect = await page.$eval('#launch-image', (e) => e.tagName === 'SELECT');
  if (isSelect) await page.select('#launch-image', IMAGE); else await page.type('#launch-image', IMAGE);
  await page.type('#launch-name', name);
  await page.$eval('#launch-cpu', (e) => { e.select(); });
  await page.type('#launch-cpu', '1');
  if (await page.$('[data-mount]')) await page.click('[data-mount]');
  await shot(page, '04-launcher');
  await page.click('[data-test=launch-submit]');
  await page.waitForSelector(`[data-session="${name}"]`, { timeout: 15000 });
  await shot(page, '05-sessions-launching');
  await page.waitForSelector(`[data-session="${name}"] [data-status=RUNNING]`, { timeout: 120000 });
  await shot(page, '06-sessions-running');
  ok(`${step}: ${name} RUNNING`);

  step = 'session detail';
  await page.click(`[data-session="${name}"] a`);
  await page.waitForSelector('[data-app=ttyd]');
  await page.waitForSelector('[data-test=logs]', { timeout: 15000 });
  await shot(page, '07-session-detail');
  ok(step);

  step = 'terminal';
  const tpage = await browser.newPage();
  tpage.on('pageerror', (e) => errors.push('terminal: ' + e));
  await tpage.setViewport({ width: 1280, height: 800 });
  await tpage.goto(URL_ + '#/terminal/' + encodeURIComponent(name), { waitUntil: 'networkidle0' });
  await tpage.waitForSelector('[data-phase=open]', { timeout: 30000 });
  await tpage.waitForFunction(() => window.__tesseraTerm && document.querySelector('.xterm-rows'), { timeout: 10000 });
  await tpage.click('.term-box');
  await tpage.keyboard.type('echo smoke-$((40+2))\n');
  await waitText(tpage, '.xterm-rows', MOCK ? 'echo smoke-$((40+2))' : 'smoke-42', 15000);
  await shot(tpage, '08-terminal');
  ok(step);
  await tpage.close();

  step = 'destroy';
  await page.click('[data-test=destroy]');
  await page.waitForSelector('[data-test=confirm]');
  await page.click('[data-test=confirm]');
  await page.waitForFunction(() => /TERMINAT|CANCELLED/.test(document.querySelector('[data-status]')?.getAttribute('data-status') || ''), { timeout: 30000 });
  ok(step);

  step = 'data: create a folder';
  await page.click('[data-nav=data]');
  await page.waitForSelector('[data-test=create-folder]');
  await page.click('[data-test=create-folder]');
  await page.waitForSelector('#folder-name');
  const folder = 'smoke' + Date.now().toString(36);
  await page.type('#folder-name', folder);
  await page.click('[data-test=folder-create-submit]');
  await page.waitForSelector(`[data-folder="${folder}"]`);
  await shot(page, '09-folders');
  ok(step);

  step = 'files: upload and mkdir';
  await page.click(`[data-folder="${folder}"] a`);
  await page.waitForSelector('#upload-input');
  const local = join(SHOTS, 'upload-sample.txt');
  writeFileSync(local, 'hello from the smoke test\n'.repeat(1000));
  const input = await page.$('#upload-input');
  await input.uploadFile(local);
  await page.waitForSelector('[data-file="upload-sample.txt"]', { timeout: 30000 });
  await page.click('[data-test=mkdir]');
  await page.type('#file-name-input', 'subdir');
  await page.click('[data-test=name-submit]');
  await page.waitForSelector('[data-file="subdir"]');
  await shot(page, '10-files');
  ok(step);

  if (MOCK) {
    step = 'invitations';
    await page.goto(URL_ + '#/data?tab=invitations');
    await page.waitForSelector('[data-test=accept-invitation]');
    await shot(page, '11-invitations');
    await page.click('[data-test=accept-invitation]');
    await page.waitForFunction(() => !document.querySelector('[data-test=accept-invitation]'));
    ok(step);
  }

  step = 'account';
  await page.click('[data-nav=account]');
  await page.waitForSelector('[data-test=issue-keypair]');
  await page.waitForSelector('[data-keypair]', { timeout: 10000 }).catch(() => {});
  await shot(page, '12-account');
  ok(step);

  step = 'narrow window';
  await page.setViewport({ width: 390, height: 800 });
  await page.click('[data-nav=sessions]').catch(async () => { await page.click('.menu-toggle'); await page.click('[data-nav=sessions]'); });
  await page.waitForSelector('[data-test=launch]');
  await shot(page, '13-narrow');
  await page.click('.menu-toggle');
  await shot(page, '14-narrow-menu');
  await page.setViewport({ width: 1280, height: 800 });
  ok(step);

  if (MOCK) {
    step = 'a 401 from /func goes back to the login';
    const cookies = await page.cookies();
    await page.deleteCookie(...cookies);
    await page.click('[data-nav=data]');
    await page.waitForSelector('#login-username', { timeout: 15000 });
    await waitText(page, '[role=status], [role=alert]', 'login has ended');
    await shot(page, '15-login-ended');
    ok(step);
    await page.type('#login-username', USER);
    await page.type('#login-password', PASS);
    await page.click('#login-submit');
    await page.waitForSelector('[data-test=logout]');
  }

  step = 'logout';
  await page.click('[data-test=logout]');
  await page.waitForSelector('#login-username');
  await page.reload({ waitUntil: 'networkidle0' });
  await page.waitForSelector('#login-username');
  ok(step);

  if (errors.length) throw new Error('page errors:\n' + errors.join('\n'));
  console.log('all steps passed');
} catch (e) {
  console.error(`FAILED at "${step}": ${e.message}`);
  if (errors.length) console.error(errors.join('\n'));
  process.exitCode = 1;
} finally {
  await browser.close();
  if (mockProc) mockProc.kill();
}
