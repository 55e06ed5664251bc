#!/usr/bin/env node
// run.mjs: Tessera's compatibility suite. Drives Backend.AI's JavaScript SDK
// (npm backend.ai-client 21.3.1, pinned in package-lock.json) through each
// of its public methods against a running Tessera stack, checks each
// answer's shape, prints a table (method, expected, got, detail) and
//   compat: N/T methods ok, M not served yet (listed), K unexpected
// and exits 1 when anything is unexpected: a method expected `ok` that
// fails, a method listed `not-served` that works (update expected.txt), a
// method missing from expected.txt or a line there with no test.
//
//   node run.mjs [--record] [--only REGEX] [--expected FILE] [--json FILE]
//
// --record rewrites expected.txt from this run (reasons already written
// there are kept). Environment (a stack's <state>/env): TESSERA_GATEWAY_URL,
// TESSERA_ADMIN_ACCESS_KEY, TESSERA_ADMIN_SECRET_KEY, TESSERA_ADMIN_EMAIL,
// TESSERA_ADMIN_PASSWORD, TESSERA_DEMO_IMAGE, TESSERA_OCI_REGISTRY
// (BACKEND_ENDPOINT / BACKEND_ACCESS_KEY / BACKEND_SECRET_KEY are taken
// when the TESSERA_ ones are absent). COMPAT_CALL_TIMEOUT: seconds one
// method may take (default 20; a few that wait for sessions take longer).
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ai, clearCookies, describeError, raw, withTimeout } from './lib.mjs';
import { defineTests } from './methods.mjs';

process.noDeprecation = true; // the SDK signs with new Buffer()
const HERE = path.dirname(fileURLToPath(import.meta.url));
const REQUEST_TIMEOUT_MS = 15000; // the SDK's own fetch limit (its default is 5 s)
const CALL_TIMEOUT_MS = 1000 * Number(process.env.COMPAT_CALL_TIMEOUT || 20);
const AGENT = 'tessera-compat';
const PASSWORD = 'compat-pass-1234';

// ---- arguments and environment ----------------------------------------------------------------
function parseArgs(argv) {
  const a = { record: false, only: null, expected: path.join(HERE, 'expected.txt'), json: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--record') a.record = true;
    else if (k === '--only') a.only = new RegExp(argv[++i]);
    else if (k === '--expected') a.expected = argv[++i];
    else if (k === '--json') a.json = argv[++i];
    else {
      process.stderr.write(`usage: node run.mjs [--record] [--only REGEX] [--expected FILE] [--json FILE]\n`);
      process.exit(2);
    }
  }
  return a;
}

function environment() {
  const e = process.env;
  const env = {
    gw: (e.TESSERA_GATEWAY_URL || e.BACKEND_ENDPOINT || '').replace(/\/+$/, ''),
    ak: e.TESSERA_ADMIN_ACCESS_KEY || e.BACKEND_ACCESS_KEY,
    sk: e.TESSERA_ADMIN_SECRET_KEY || e.BACKEND_SECRET_KEY,
    email: e.TESSERA_ADMIN_EMAIL,
    password: e.TESSERA_ADMIN_PASSWORD,
    image: e.TESSERA_DEMO_IMAGE,
    ssoSecretFile: e.TESSERA_SSO_SECRET_FILE,
  };
  const missing = ['gw', 'ak', 'sk', 'image'].filter((k) => !env[k]);
  if (missing.length) {
    process.stderr.write(`compat: the environment lacks ${missing.join(', ')} (source a stack's <state>/env)\n`);
    process.exit(2);
  }
  // <registry>/<name>:<tag> as the SDK's image methods take it
  const m = /^([^/]+)\/(.+):([^:/@]+)$/.exec(env.image);
  env.imageParts = m ? { registry: m[1], name: m[2], tag: m[3] } : { registry: '', name: env.image, tag: 'latest' };
  env.registry = e.TESSERA_OCI_REGISTRY || env.imageParts.registry;
  env.host = 'local';
  return env;
}

// ---- expected.txt ------------------------------------------------------------------------------------
// `<method> ok` or `<method> not-served: <reason>`, one a line; # comments.
function readExpected(file) {
  const map = new Map();
  const header = [];
  if (!fs.existsSync(file)) return { map, header };
  let inHeader = true;
  for (const [i, line] of fs.readFileSync(file, 'utf8').split('\n').entries()) {
    const s = line.trim();
    if (!s || s.startsWith('#')) {
      if (inHeader) header.push(line);
      continue;
    }
    inHeader = false;
    const m = /^(\S+)\s+(ok|not-served)(?::\s*(.*))?$/.exec(s);
    if (!m) throw new Error(`${file}:${i + 1}: not "<method> ok" or "<method> not-served: <reason>": ${s}`);
    map.set(m[1], { status: m[2], reason: m[3] || '' });
  }
  while (header.length && !header[header.length - 1].trim()) header.pop();
  return { map, header };
}

const DEFAULT_HEADER = [
  '# Every public method of backend.ai-client 21.3.1 (npm) outside its plugins, as',
  '# tests/compat/run.mjs calls it against a Tessera development stack:',
  '#   <method> ok                    works: the suite fails if it stops working',
  '#   <method> not-served: <reason>  known not to work yet: the suite fails once',
  '#                                  it works, so that this line becomes `ok`',
  '# `node run.mjs --record` rewrites this file from a run, keeping the reasons.',
];

function writeExpected(file, header, results, old) {
  const width = Math.max(...results.map((r) => r.name.length)) + 2;
  const lines = (header.length ? header : DEFAULT_HEADER).concat(['']);
  for (const r of results) {
    if (r.got === 'ok') lines.push(`${r.name.padEnd(width)}ok`);
    else {
      const was = old.get(r.name);
      const reason = was && was.status === 'not-served' && was.reason ? was.reason : `${r.detail}`;
      lines.push(`${r.name.padEnd(width)}not-served: ${reason.replace(/\s+/g, ' ')}`);
    }
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

// ---- clients and set-up ------------------------------------------------------------------------------
function newClient(env, ak, sk, mode = 'API') {
  const cl = new ai.Client(new ai.ClientConfig(ak, sk, env.gw, mode), AGENT);
  cl.requestTimeout = REQUEST_TIMEOUT_MS;
  return cl;
}

async function setUp(env) {
  const tag = crypto.randomBytes(3).toString('hex');
  let n = 0;
  const c = { ai, env, users: {}, s: {}, tag };
  c.fresh = (prefix) => `${prefix}-${tag}-${++n}`;
  c.need = (v, what) => {
    if (v === undefined || v === null || v === '') throw new Error(`prerequisite missing: ${what}`);
    return v;
  };
  c.rest = (who, method, p, body = null, opts = {}) => raw(c[who], method, p, body, opts);

  c.A = newClient(env, env.ak, env.sk);
  await withTimeout(c.A.get_manager_version(), 20000, 'GET /');
  c.A.is_admin = true;
  c.A.is_superadmin = true;
  c.A.email = env.email;
  c.users.A = { ak: env.ak, sk: env.sk, email: env.email, password: env.password };

  const projects = await c.rest('A', 'GET', '/admin/projects?limit=1000', null, { okStatus: [200] });
  const dflt = projects.body.items.find((p) => p.name === 'default' && p.domain_name === 'default');
  if (!dflt) throw new Error('set-up: no project "default" in domain "default"');
  c.defaultProject = dflt.id;
  await c.rest('A', 'POST', '/admin/images', { reference: env.image }, { okStatus: [200, 201], timeout: 60000 });

  // a user with a fresh keypair, a member of the default project
  c.makeUser = async (label) => {
    const name = c.fresh(label);
    const u = await c.rest('A', 'POST', '/admin/users', { email: `${name}@example.com`, username: name,
      password: PASSWORD, role: 'user', full_name: label.toUpperCase() }, { okStatus: [200, 201] });
    const k = await c.rest('A', 'POST', '/admin/keypairs', { user_id: u.body.id }, { okStatus: [200, 201] });
    await c.rest('A', 'POST', `/admin/projects/${c.defaultProject}/members`, { user_ids: [u.body.id] },
      { okStatus: [200, 201, 204] });
    return { id: u.body.id, email: u.body.email, password: PASSWORD, ak: k.body.access_key, sk: k.body.secret_key };
  };
  for (const who of ['U', 'V', 'W']) {
    const u = await c.makeUser(who.toLowerCase());
    c.users[who] = u;
    c[who] = newClient(env, u.ak, u.sk);
    await withTimeout(c[who].get_manager_version(), 20000, 'GET /');
    c[who].email = u.email;
  }
  c.F = newClient(env, env.ak, env.sk); // reads the version in its own tests

  // Single sign-on: a token for user `who` as an identity provider mints it
  // (HS256 with the stack's secret, docs/console.md "Single sign-on").
  c.ssoToken = (who) => {
    if (!env.ssoSecretFile) throw new Error('TESSERA_SSO_SECRET_FILE is not set');
    const secret = fs.readFileSync(env.ssoSecretFile, 'utf8').trim();
    const b = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const hc = `${b({ alg: 'HS256', typ: 'JWT' })}.${b({ email: c.users[who].email,
      jti: crypto.randomUUID(), iat: now, exp: now + 120 })}`;
    return `${hc}.${crypto.createHmac('sha256', secret).update(hc).digest('base64url')}`;
  };

  // SESSION mode: a password login (the browser's way), kept in c[slot]
  c.sessionLogin = async (slot, who) => {
    clearCookies();
    const u = c.users[who];
    c[slot] = newClient(env, u.email, u.password, 'SESSION');
    return c[slot].login();
  };
  return c;
}

// ---- the run -----------------------------------------------------------------------------------------
async function runTests(c, only) {
  const tests = [];
  const names = new Set();
  defineTests((name, fn, check, opts = {}) => {
    if (names.has(name)) throw new Error(`two tests named ${name}`);
    names.add(name);
    tests.push({ name, fn, check, opts });
  });
  const results = [];
  for (const t of tests) {
    if (only && !only.test(t.name)) continue;
    const t0 = Date.now();
    let got = 'ok';
    let detail = '';
    try {
      const answer = await withTimeout(t.fn(c), t.opts.timeout || CALL_TIMEOUT_MS, t.name);
      const why = t.check(answer);
      if (why) {
        got = 'fail';
        detail = `shape: ${why}`;
      } else if (t.opts.note) {
        detail = t.opts.note(answer);
      }
    } catch (e) {
      got = 'fail';
      detail = describeError(e);
    }
    if (t.opts.local && got === 'ok') detail = detail ? `local; ${detail}` : 'local (sends no request)';
    results.push({ name: t.name, got, detail, local: !!t.opts.local, ms: Date.now() - t0 });
    process.stderr.write(`compat: ${t.name}: ${got}${detail ? ` (${detail.slice(0, 160)})` : ''}\n`);
  }
  return { results, names };
}

// Every public method of the SDK (its plugins aside): the client's and its
// members' prototype methods not starting with `_`, and ClientConfig's
// static ones. A method with no test is unexpected: the suite must cover
// the whole SDK.
const PLUGINS = ['cloud', 'eduApp', 'enterprise'];
function sdkMethods(env) {
  const client = newClient(env, 'x', 'y');
  const methods = (o) => {
    const p = Object.getPrototypeOf(o);
    return Object.getOwnPropertyNames(p).filter((n) => n !== 'constructor' && !n.startsWith('_')
      && typeof Object.getOwnPropertyDescriptor(p, n).value === 'function');
  };
  const out = methods(client).map((n) => `Client.${n}`);
  for (const [member, v] of Object.entries(client)) {
    if (v && typeof v === 'object' && v.client === client && !PLUGINS.includes(member)) {
      out.push(...methods(v).map((n) => `${member}.${n}`));
    }
  }
  for (const n of Object.getOwnPropertyNames(ai.ClientConfig)) {
    if (typeof ai.ClientConfig[n] === 'function' && !['length', 'name', 'prototype'].includes(n)) {
      out.push(`ClientConfig.${n}`);
    }
  }
  return out;
}

function classify(results, names, expected, only) {
  for (const r of results) {
    const e = expected.get(r.name);
    r.expected = e ? e.status : '(none)';
    r.reason = e ? e.reason : '';
    if (!e) r.unexpected = 'not in expected.txt: add it';
    else if (e.status === 'ok' && r.got !== 'ok') r.unexpected = 'expected ok';
    else if (e.status === 'not-served' && r.got === 'ok') r.unexpected = 'works now: mark it ok in expected.txt';
  }
  const stale = only ? [] : [...expected.keys()].filter((k) => !names.has(k));
  return stale;
}

function printTable(results, stale, untested) {
  const clip = (s, n) => (s.length > n ? `${s.slice(0, n - 3)}...` : s);
  const w = Math.max(6, ...results.map((r) => r.name.length));
  const out = [];
  out.push(`${'method'.padEnd(w)}  ${'expected'.padEnd(10)}  ${'got'.padEnd(4)}  detail`);
  out.push(`${'-'.repeat(w)}  ${'-'.repeat(10)}  ${'-'.repeat(4)}  ${'-'.repeat(40)}`);
  for (const r of results) {
    const got = r.unexpected ? r.got.toUpperCase() : r.got;
    const mark = r.unexpected ? `UNEXPECTED (${r.unexpected}): ` : '';
    out.push(`${r.name.padEnd(w)}  ${r.expected.padEnd(10)}  ${got.padEnd(4)}  ${clip(mark + r.detail, 110)}`);
  }
  process.stdout.write(`${out.join('\n')}\n`);
  const bad = results.filter((r) => r.unexpected);
  if (bad.length || stale.length || untested.length) {
    process.stdout.write('\nunexpected:\n');
    for (const r of bad) process.stdout.write(`  ${r.name}: ${r.unexpected}; got ${r.got}: ${r.detail}\n`);
    for (const s of stale) process.stdout.write(`  ${s}: listed in expected.txt but no test has that name\n`);
    for (const m of untested) process.stdout.write(`  ${m}: a public method of the SDK with no test in methods.mjs\n`);
  }
  const ok = results.filter((r) => r.got === 'ok').length;
  const local = results.filter((r) => r.got === 'ok' && r.local).length;
  const listed = results.filter((r) => r.got !== 'ok' && r.expected === 'not-served').length;
  const unexpected = bad.length + stale.length + untested.length;
  process.stdout.write(`\n(${local} of the ok methods are local helpers that send no request)\n`);
  process.stdout.write(`compat: ${ok}/${results.length} methods ok, ${listed} not served yet (listed), `
    + `${unexpected} unexpected\n`);
  return unexpected;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const env = environment();
  const { map: expected, header } = readExpected(args.expected);
  process.on('unhandledRejection', (e) => {
    // e.g. the SDK's login() calls logout() without waiting for it
    process.stderr.write(`compat: an SDK promise nobody waits for failed: ${describeError(e)}\n`);
  });
  let c;
  try {
    c = await setUp(env);
  } catch (e) {
    process.stdout.write(`compat: set-up failed (Tessera's REST API, not the SDK): ${describeError(e)}\n`);
    process.exit(2);
  }
  const { results, names } = await runTests(c, args.only);
  const stale = classify(results, names, expected, args.only);
  const tested = new Set([...names].map((n) => n.replace(/\[.*\]$/, '')));
  const untested = args.only ? [] : sdkMethods(env).filter((m) => !tested.has(m));
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(results, null, 2));
  if (args.record) {
    if (args.only) {
      process.stderr.write('compat: --record with --only would drop the other methods: not written\n');
    } else {
      writeExpected(args.expected, header, results, expected);
      process.stdout.write(`compat: wrote ${args.expected}\n`);
    }
  }
  const unexpected = printTable(results, stale, untested);
  process.exit(unexpected && !args.record ? 1 : 0);
}

main().catch((e) => {
  process.stdout.write(`compat: ${describeError(e)}\n${e && e.stack ? e.stack : ''}\n`);
  process.exit(2);
});
