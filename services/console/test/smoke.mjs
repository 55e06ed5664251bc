// Browser smoke test of the console with puppeteer-core and a local Chromium:
//   node test/smoke.mjs --url http://127.0.0.1:8090/console/ [--user U --password P]
//        [--shots DIR] [--chromium /usr/bin/chromium] [--image python:3.12] [--mock]
// Against test/mock-server.mjs (--mock: also the invitation, terminal echo
// and 401 steps that need the mock's data), or a real stack (TESSERA_CONSOLE_URL).
// Exits non-zero on the first failed step or any uncaught page error.
import puppeteer from 'puppeteer-core';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
  const downloads = join(SHOTS, 'downloads');
  rmSync(downloads, { recursive: true, force: true });
  mkdirSync(downloads, { recursive: true });
  const cdp = await page.createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
  const downloaded = async (name, timeout = 20000) => {
    const until = Date.now() + timeout;
    for (;;) {
      const f = join(downloads, name);
      if (existsSync(f) && !existsSync(f + '.crdownload')) return readFileSync(f);
      if (Date.now() > until) throw new Error(`no download ${name} in ${downloads}: ${readdirSync(downloads).join(', ')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const confirm = async () => { await page.waitForSelector('[data-test=confirm]'); await page.click('[data-test=confirm]'); await page.waitForFunction(() => !document.querySelector('[data-test=confirm]')); };
  page.on('pageerror', (e) => errors.push(String(e)));
  if (process.env.SMOKE_DEBUG) page.on('console', (m) => console.log('  [page]', m.text()));
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

  step = 'logs follow and restart';
  await page.click('#logs-follow');
  await page.waitForSelector('[data-test=restart]:not([disabled])');
  await page.click('[data-test=restart]');
  const patched = page.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().includes('/func/session/'), { timeout: 30000 });
  await confirm();
  const pr = await patched;
  if (!pr.ok()) throw new Error(`restart answered ${pr.status()}: ${await pr.text()}`);
  console.log('  restart answered', (await pr.json()).status);
  // RUNNING again, as a poll after the restart says
  await page.waitForResponse(async (r) => r.request().method() === 'GET' && r.url().endsWith('/func/session/' + encodeURIComponent(name)) &&
    r.ok() && (await r.json()).status === 'RUNNING', { timeout: 120000 });
  await page.waitForSelector('h1 [data-status=RUNNING]', { timeout: 10000 });
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

  step = 'files: download a file and a zip';
  await page.click('[data-file="upload-sample.txt"] [data-test=download]');
  const got = await downloaded('upload-sample.txt');
  if (!got.equals(readFileSync(local))) throw new Error('the downloaded file differs from the upload');
  await page.click('[data-file="subdir"] [data-test=download]');
  const zip = await downloaded('subdir.zip');
  if (zip.subarray(0, 2).toString() !== 'PK') throw new Error('subdir.zip is not a zip');
  const before = new Set(readdirSync(downloads));
  await page.click('[data-test=download-folder]');
  const until = Date.now() + 20000;
  let fresh;
  while (!(fresh = readdirSync(downloads).find((f) => !before.has(f) && !f.endsWith('.crdownload')))) {
    if (Date.now() > until) throw new Error('the folder zip did not arrive');
    await new Promise((r) => setTimeout(r, 200));
  }
  const all = await downloaded(fresh);
  console.log('  the folder zip arrived as', fresh);
  if (all.subarray(0, 2).toString() !== 'PK') throw new Error('the folder zip is not a zip');
  ok(`${step} (${got.length} bytes, zips ${zip.length} and ${all.length} bytes)`);

  step = 'files: rename and delete';
  await page.click('[data-file="upload-sample.txt"] [data-test=rename]');
  await page.waitForSelector('#file-name-input');
  await page.$eval('#file-name-input', (e) => e.select());
  await page.type('#file-name-input', 'renamed.txt');
  await page.click('[data-test=name-submit]');
  await page.waitForSelector('[data-file="renamed.txt"]');
  await page.click('[data-file="renamed.txt"] [data-test=delete]');
  await confirm();
  await page.waitForFunction(() => !document.querySelector('[data-file="renamed.txt"]'));
  ok(step);

  step = 'folders: rename, trash, restore, purge';
  await page.click('[data-nav=data]');
  await page.waitForSelector(`[data-folder="${folder}"] [data-test=rename-folder]`);
  await page.click(`[data-folder="${folder}"] [data-test=rename-folder]`);
  await page.waitForSelector('#rename-folder-name');
  await page.$eval('#rename-folder-name', (e) => e.select());
  const folder2 = folder + 'b';
  await page.type('#rename-folder-name', folder2);
  await page.click('[data-test=rename-submit]');
  await page.waitForSelector(`[data-folder="${folder2}"]`);
  await page.click(`[data-folder="${folder2}"] [data-test=delete-folder]`);
  await confirm();
  await page.waitForFunction((n) => !document.querySelector(`[data-folder="${n}"]`), {}, folder2);
  await page.click('[data-tab=trash]');
  await page.waitForSelector(`[data-trash="${folder2}"]`);
  await shot(page, '10b-trash');
  await page.click(`[data-trash="${folder2}"] [data-test=restore-folder]`);
  await page.waitForFunction((n) => !document.querySelector(`[data-trash="${n}"]`), {}, folder2);
  await page.click('[data-tab=folders]');
  await page.waitForSelector(`[data-folder="${folder2}"]`);
  await page.click(`[data-folder="${folder2}"] [data-test=delete-folder]`);
  await confirm();
  await page.click('[data-tab=trash]');
  await page.waitForSelector(`[data-trash="${folder2}"] [data-test=purge-folder]`);
  await page.click(`[data-trash="${folder2}"] [data-test=purge-folder]`);
  await confirm();
  await page.waitForFunction((n) => !document.querySelector(`[data-trash="${n}"]`), {}, folder2);
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
  await page.waitForSelector('#pw-old');
  await page.waitForSelector('[data-keypair]', { timeout: 10000 }).catch(() => {});
  await shot(page, '12-account');
  ok(step);

  step = 'account: issue and revoke a keypair';
  if (!(await page.$('[data-test=issue-keypair]'))) { ok(step + ': skipped (only administrators issue keypairs)'); } else {
  await page.click('[data-test=issue-keypair]');
  await page.waitForSelector('[data-test=new-secret-key]');
  const newKey = (await textOf(page, '[data-test=new-access-key]')).trim();
  if ((await textOf(page, '[data-test=new-secret-key]')).trim().length < 20) throw new Error('no secret key shown');
  await shot(page, '12b-new-keypair');
  await page.click('.modal .btn.primary');
  await page.waitForSelector(`[data-keypair="${newKey}"] [data-test=revoke-keypair]`);
  await page.click(`[data-keypair="${newKey}"] [data-test=revoke-keypair]`);
  await confirm();
  await page.waitForFunction((k) => !document.querySelector(`[data-keypair="${k}"] [data-test=revoke-keypair]`), {}, newKey);
  ok(step);
  }

  step = 'account: change the password and back';
  for (const [from, to] of [[PASS, PASS + '-2'], [PASS + '-2', PASS]]) {
    await page.type('#pw-old', from);
    await page.type('#pw-new', to);
    await page.type('#pw-new2', to);
    await page.click('[data-test=password-submit]');
    await waitText(page, '.banner.success', 'changed');
  }
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

  step = 'sign out everywhere';
  const other = await browser.createBrowserContext();
  const p2 = await other.newPage();
  await p2.setViewport({ width: 1280, height: 800 });
  for (const pg of [page, p2]) {
    await pg.goto(URL_, { waitUntil: 'networkidle0' });
    await pg.waitForSelector('#login-username');
    await pg.type('#login-username', USER);
    await pg.type('#login-password', PASS);
    await pg.click('#login-submit');
    await pg.waitForSelector('[data-nav=account]');
  }
  await page.click('[data-nav=account]');
  await page.click('[data-test=logout-everywhere]');
  await confirm();
  await page.waitForSelector('#login-username');
  await p2.click('[data-nav=sessions]');
  await p2.waitForSelector('#login-username', { timeout: 15000 });
  await other.close();
  ok(step);

  if (errors.length) throw new Error('page errors:\n' + errors.join('\n'));
  console.log('all steps passed');
} catch (e) {
  console.error(`FAILED at "${step}": ${e.message}`);
  for (const pg of await browser.pages()) await pg.screenshot({ path: join(SHOTS, `failure-${(await browser.pages()).indexOf(pg)}.png`) }).catch(() => {});
  if (errors.length) console.error(errors.join('\n'));
  process.exitCode = 1;
} finally {
  await browser.close();
  if (mockProc) mockProc.kill();
}
