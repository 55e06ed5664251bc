// A stand-in for the gateway's session mode and tessera-vfolder's transfer
// endpoints, in memory, for trying the console without a stack:
//   node test/mock-server.mjs [--port 8090] [--dir ../../build/console]
// Console at http://127.0.0.1:PORT/console/ (user "alice@example.com" /
// "secret", or "admin" / "admin"); transfers on PORT+1 (another origin, with
// CORS, as tessera-vfolder); the terminal's WebSocket echoes on PORT+2.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const arg = (n, d) => { const i = process.argv.indexOf(n); return i >= 0 ? process.argv[i + 1] : d; };
const PORT = Number(arg('--port', 8090));
const DIR = resolve(arg('--dir', join(here, '../../../build/console')));
const HOST = '127.0.0.1';

const USERS = {
  'alice@example.com': { password: 'secret', user_id: 'u-alice', username: 'alice', email: 'alice@example.com', role: 'user', domain: 'default', access_key: 'AKALICE000000001' },
  admin: { password: 'admin', user_id: 'u-admin', username: 'admin', email: 'admin@example.com', role: 'superadmin', domain: 'default', access_key: 'AKADMIN000000001' },
};
const logins = new Map(); // cookie -> {user, csrf}
let failures = 0;
const sessions = [];
const folders = [
  { id: randomUUID(), name: 'data', host: 'local', usage_mode: 'general', permission: 'rw', ownership_type: 'user', is_owner: true, status: 'ready', used_bytes: 1536, max_size: 0, owner: 'u-alice', files: { 'readme.txt': 'hello\n', docs: { 'a.md': '# A\n' } } },
  { id: randomUUID(), name: 'shared-models', host: 'local', usage_mode: 'model', permission: 'ro', ownership_type: 'user', is_owner: false, status: 'ready', used_bytes: 10 * 2 ** 20, max_size: 2 ** 30, owner: 'u-bob', files: {} },
];
const invitations = [{ id: 'inv-1', vfolder_id: 'x', vfolder_name: 'bob-results', inviter: 'bob@example.com', invitee: 'alice@example.com', perm: 'ro', state: 'pending', created_at: new Date().toISOString() }];
const uploads = new Map();
const keypairs = [{ access_key: 'AKALICE000000001', user_id: 'u-alice', is_active: true, is_admin: false, resource_policy: 'default', created_at: new Date().toISOString(), last_used: new Date().toISOString() }];

const problem = (res, status, kind, msg, extra = {}) => send(res, status, { type: 'https://api.backend.ai/probs/' + kind, title: kind, msg, ...extra }, { 'Content-Type': 'application/problem+json' });
function send(res, status, body, headers = {}) {
  const data = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(data);
}
const readBody = (req) => new Promise((ok) => { const c = []; req.on('data', (d) => c.push(d)); req.on('end', () => ok(Buffer.concat(c))); });
const cookieOf = (req) => ((req.headers.cookie || '').match(/(?:^|;\s*)tsid=([^;]+)/) || [])[1];
const who = (l) => ({ access_key: l.user.access_key, user_id: l.user.user_id, username: l.user.username, role: l.user.role, domain: l.user.domain });

function dirAt(f, path) {
  let d = f.files;
  for (const p of (path || '').split('/').filter(Boolean)) { if (!d[p] || typeof d[p] !== 'object') return null; d = d[p]; }
  return d;
}
const split = (p) => { const a = p.split('/').filter(Boolean); return [a.slice(0, -1).join('/'), a[a.length - 1]]; };

function sessionInfo(s) {
  const age = Date.now() - s.created;
  let status = s.status;
  if (!['TERMINATED', 'CANCELLED', 'TERMINATING', 'ERROR'].includes(status)) {
    status = age < 1500 ? 'PENDING' : age < 5000 ? 'PULLING' : 'RUNNING';
    if (s.restartAt && Date.now() - s.restartAt < 2000) status = 'RESTARTING';
  }
  if (status === 'TERMINATING' && Date.now() - s.endAt > 2000) status = 'TERMINATED';
  if (status !== s.status) { s.history.push({ status, reason: status === 'PULLING' ? 'image not on the agent' : '', at: new Date().toISOString() }); s.status = status; }
  const statusInfo = status === 'PULLING' ? `pulling ${(Math.min(40, age / 100)).toFixed(1)} MiB / 40.0 MiB, 1 of 3 layers ready` : status === 'PENDING' ? 'waiting for an agent' : '';
  const live = !['TERMINATED', 'CANCELLED'].includes(status);
  return {
    sessionId: s.name, sessionName: s.name, sessionUuid: s.id, status, statusInfo, image: s.image, type: s.type, architecture: 'x86_64',
    creationTime: new Date(s.created).toISOString(), age, groupName: s.group || 'default', scalingGroup: s.sg || 'default', domainName: 'default',
    requestedSlots: s.slots, occupiedSlots: status === 'RUNNING' && live ? s.slots : {}, result: 'UNDEFINED',
    servicePorts: [{ name: 'ttyd', protocol: 'http', container_ports: [7681] }, { name: 'jupyter', protocol: 'http', container_ports: [8888] }],
    kernels: [{ id: s.id + '-k0', role: 'main', idx: 0, agent: 'agent-1', status, statusInfo: '' }],
  };
}

async function func(req, res, path, q, l) {
  const m = req.method;
  const raw = await readBody(req);
  let body = {};
  if (raw.length) try { body = JSON.parse(raw.toString()); } catch { return problem(res, 400, 'invalid-api-params', 'the body is not JSON'); }
  let r;
  if (m === 'GET' && path === '/config/resource-slots') return send(res, 200, { cpu: 'count', mem: 'bytes', 'cuda.device': 'count', 'cuda.shares': 'count' });
  if (m === 'POST' && path === '/auth/update-password') {
    if (body.old_password !== l.user.password) return problem(res, 401, 'auth-failed', 'the old password is wrong');
    if (body.new_password !== body.new_password2) return problem(res, 400, 'invalid-api-params', 'the new passwords differ');
    l.user.password = body.new_password; return send(res, 200, {});
  }
  // sessions
  if (path === '/session' && m === 'GET') {
    const st = (q.get('status') || '').split(',').filter(Boolean);
    const items = sessions.map(sessionInfo).filter((s) => !st.length || st.includes(s.status)).reverse();
    return send(res, 200, { items, total: items.length, limit: 100, offset: 0 });
  }
  if (path === '/session' && m === 'POST') {
    if (!body.image) return problem(res, 400, 'invalid-api-params', 'image is required');
    if (sessions.some((s) => s.name === body.name && !['TERMINATED', 'CANCELLED'].includes(s.status))) return problem(res, 409, 'already-exists', `a live session named ${body.name} exists`);
    if (Number(body.config?.resources?.cpu) > 8) return problem(res, 412, 'quota-exceeded', 'cpu 16 is above the keypair policy limit 8');
    const s = { id: randomUUID(), name: body.name, image: body.image, type: body.type || 'interactive', created: Date.now(), status: 'PENDING', history: [{ status: 'PENDING', reason: '', at: new Date().toISOString() }], slots: body.config?.resources || {}, group: body.group_name, sg: body.config?.scaling_group, body };
    sessions.push(s);
    return send(res, 201, { sessionId: s.name, sessionUuid: s.id, status: 'PENDING', statusInfo: '', servicePorts: [], created: true });
  }
  if ((r = path.match(/^\/session\/([^/]+)(\/[a-z-]+)?$/))) {
    const name = decodeURIComponent(r[1]);
    const s = [...sessions].reverse().find((x) => x.name === name || x.id === name);
    if (!s) return problem(res, 404, 'session-not-found', `no session ${name}`);
    const info = sessionInfo(s);
    if (!r[2] && m === 'GET') return send(res, 200, info);
    if (!r[2] && m === 'DELETE') { s.status = info.status === 'PENDING' ? 'CANCELLED' : 'TERMINATING'; s.endAt = Date.now(); s.history.push({ status: s.status, reason: 'user requested', at: new Date().toISOString() }); return send(res, 200, sessionInfo(s)); }
    if (!r[2] && m === 'PATCH') { if (info.status !== 'RUNNING') return problem(res, 409, 'invalid-state', 'not RUNNING'); s.restartAt = Date.now(); return send(res, 200, sessionInfo(s)); }
    if (r[2] === '/history') return send(res, 200, { sessionUuid: s.id, items: s.history });
    if (r[2] === '/logs') return send(res, 200, { result: { logs: `[${new Date().toISOString()}] kernel started\nrequest: ${JSON.stringify(s.body)}\n` } });
    if (r[2] === '/start-service' && m === 'POST') {
      if (info.status !== 'RUNNING') return problem(res, 409, 'invalid-session-state', 'the session is not RUNNING');
      const token = randomBytes(12).toString('hex');
      const addr = `http://${HOST}:${PORT + 2}`;
      return send(res, 200, { token, wsproxy_addr: addr, url: `${addr}/?token=${token}&app=${body.app}`, app: body.app, protocol: 'http' });
    }
  }
  // admin
  if (path.startsWith('/admin/')) {
    const admin = l.user.role !== 'user';
    if (path === '/admin/keypairs' && m === 'GET') return send(res, 200, { items: keypairs.filter((k) => admin || k.user_id === l.user.user_id), total: keypairs.length });
    if (path === '/admin/keypairs' && m === 'POST') { const k = { access_key: 'AK' + randomBytes(7).toString('hex').toUpperCase(), secret_key: randomBytes(20).toString('base64'), user_id: body.user_id, is_active: true, is_admin: false, resource_policy: 'default', created_at: new Date().toISOString() }; keypairs.push(k); return send(res, 201, k); }
    if ((r = path.match(/^\/admin\/keypairs\/([^/]+)$/))) {
      const k = keypairs.find((x) => x.access_key === decodeURIComponent(r[1]));
      if (!k) return problem(res, 404, 'not-found', 'no such keypair');
      if (m === 'DELETE') { k.is_active = false; k.revoked_at = new Date().toISOString(); return send(res, 200, { ...k, secret_key: undefined }); }
      return send(res, 200, { ...k, secret_key: undefined });
    }
    if ((r = path.match(/^\/admin\/users\/([^/]+)$/))) return send(res, 200, { id: l.user.user_id, email: l.user.email, username: l.user.username, projects: [{ id: 'p1', name: 'default' }, { id: 'p2', name: 'vision' }], resource_policy: 'default' });
    if (!admin) return problem(res, 403, 'forbidden', 'administrators only');
    if (path.startsWith('/admin/keypair-resource-policies/')) return send(res, 200, { name: 'default', total_resource_slots: { cpu: '8', mem: String(32 * 2 ** 30), 'cuda.device': '2' }, max_concurrent_sessions: 3 });
    if (path === '/admin/resource-groups') return send(res, 200, { items: [{ name: 'default', is_active: true }, { name: 'gpu', is_active: true }], total: 2 });
    if (path === '/admin/agents') return send(res, 200, { items: [{ id: 'a1', resource_group: 'default', slots: { cpu: '16', mem: String(64 * 2 ** 30) }, occupied_slots: { cpu: '2', mem: String(4 * 2 ** 30) } }, { id: 'a2', resource_group: 'gpu', slots: { cpu: '32', mem: String(256 * 2 ** 30), 'cuda.device': '4' }, occupied_slots: {} }] });
    if (path === '/admin/images') return send(res, 200, { items: [{ reference: 'python:3.12', min_slots: { cpu: '1', mem: String(2 ** 28) } }, { reference: 'cr.example.com/ml/pytorch:2.4-cuda12', min_slots: { cpu: '2', mem: String(2 ** 31) } }], total: 2 });
    return problem(res, 404, 'not-found', 'no such admin route');
  }
  // folders
  if (path === '/folders' && m === 'GET') return send(res, 200, folders.filter((f) => f.status === 'ready').map(({ files, ...f }) => f));
  if (path === '/folders' && m === 'POST') {
    if (!body.name || /[/\\]/.test(body.name)) return problem(res, 400, 'invalid-api-params', 'bad folder name');
    if (folders.some((f) => f.name === body.name && f.status === 'ready')) return problem(res, 409, 'already-exists', `a folder named ${body.name} exists`);
    const f = { id: randomUUID(), name: body.name, host: body.host || 'local', usage_mode: body.usage_mode || 'general', permission: body.permission || 'rw', ownership_type: 'user', is_owner: true, status: 'ready', used_bytes: 0, max_size: 0, files: {} };
    folders.push(f); const { files, ...out } = f; return send(res, 201, out);
  }
  if (path === '/folders/_/hosts') return send(res, 200, { default: 'local', allowed: ['local', 'nfs'], volume_info: {} });
  if (path === '/folders/invitations/list') return send(res, 200, { invitations: invitations.filter((i) => i.state === 'pending') });
  if (path === '/folders/invitations/accept' || path === '/folders/invitations/delete') {
    const inv = invitations.find((i) => i.id === body.inv_id);
    if (!inv) return problem(res, 404, 'not-found', 'no such invitation');
    inv.state = path.endsWith('accept') ? 'accepted' : 'rejected';
    if (inv.state === 'accepted') folders.push({ id: randomUUID(), name: inv.vfolder_name, host: 'local', usage_mode: 'general', permission: inv.perm, ownership_type: 'user', is_owner: false, status: 'ready', used_bytes: 0, files: {} });
    return send(res, 200, inv.state === 'accepted' ? {} : { state: 'rejected' });
  }
  if (path === '/folders/purge' || path === '/folders/restore-from-trash') {
    const f = folders.find((x) => x.id === body.vfolder_id && x.status === 'trash');
    if (!f) return problem(res, 404, 'vfolder-not-found', 'no such folder in the trash');
    f.status = path.endsWith('purge') ? 'purged' : 'ready'; res.writeHead(204); return res.end();
  }
  if ((r = path.match(/^\/folders\/([^/]+)(\/[a-z_-]+)?$/))) {
    const f = folders.find((x) => x.name === decodeURIComponent(r[1]) && x.status === 'ready');
    if (!f) return problem(res, 404, 'vfolder-not-found', 'no such folder');
    const op = r[2] || '';
    if (!op && m === 'GET') { const { files, ...out } = f; return send(res, 200, { ...out, quota_scope: { used_bytes: 12 * 2 ** 20, limit_bytes: 10 * 2 ** 30 } }); }
    if (!op && m === 'DELETE') { if (sessions.some((s) => ['RUNNING', 'PENDING', 'PULLING'].includes(s.status) && (s.body.config?.mounts || []).includes(f.name))) return problem(res, 409, 'vfolder-in-use', `vfolder ${f.name} is mounted in live sessions (end them first)`); f.status = 'trash'; res.writeHead(204); return res.end(); }
    if (op === '/rename') { f.name = body.new_name; return send(res, 201, { id: f.id, name: f.name }); }
    if (op === '/invite') return send(res, 201, { invited_ids: (body.emails || []).map(() => randomUUID()) });
    if (op === '/leave') { f.status = 'left'; return send(res, 200, {}); }
    if (op === '/files') {
      const d = dirAt(f, q.get('path'));
      if (!d) return problem(res, 404, 'vfolder-file-not-found', 'no such directory');
      const items = Object.entries(d).sort().map(([name, v]) => ({ name, type: typeof v === 'object' ? 'DIRECTORY' : 'FILE', size: typeof v === 'object' ? 4096 : v.length, mode: '644', modified: new Date().toISOString(), created: new Date().toISOString() }));
      return send(res, 200, { items });
    }
    if (op === '/mkdir') { const [p, n] = split(body.path); const d = dirAt(f, p); if (!d) return problem(res, 404, 'vfolder-file-not-found', 'no parent'); if (d[n] && !body.exist_ok) return problem(res, 409, 'vfolder-file-exists', `${body.path} exists`); d[n] = d[n] || {}; return send(res, 201, { path: body.path }); }
    if (op === '/rename_file') { const [p, n] = split(body.target_path); const d = dirAt(f, p); if (!d || !(n in d)) return problem(res, 404, 'vfolder-file-not-found', 'no such file'); d[body.new_name] = d[n]; delete d[n]; return send(res, 200, body); }
    if (op === '/delete_files') { for (const fp of body.files || []) { const [p, n] = split(fp); const d = dirAt(f, p); if (d && typeof d[n] === 'object' && Object.keys(d[n]).length && !body.recursive) return problem(res, 409, 'vfolder-not-empty', `${fp} is not empty`); if (d) delete d[n]; } return send(res, 200, { deleted: body.files, freed_bytes: 0 }); }
    if (op === '/request-upload') {
      const id = randomUUID(); const token = 'up.' + randomBytes(8).toString('hex');
      uploads.set(id, { token, folder: f, path: body.path, size: body.size, chunks: [], offset: 0 });
      return send(res, 200, { token, url: `http://${HOST}:${PORT + 1}/v1/transfer/upload/${id}`, upload_id: id, expires_at: new Date(Date.now() + 6 * 3600e3).toISOString() });
    }
    if (op === '/request-download') {
      const token = Buffer.from(JSON.stringify({ folder: f.name, file: body.file, archive: !!body.archive })).toString('base64url');
      return send(res, 200, { token, url: `http://${HOST}:${PORT + 1}/v1/transfer/download` });
    }
  }
  return problem(res, 404, 'not-found', `no route ${m} ${path}`);
}

const MIME = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.txt': 'text/plain' };
const main = http.createServer(async (req, res) => {
  const u = new URL(req.url, `http://${req.headers.host}`);
  const path = u.pathname;
  if (path === '/' || path === '/console') { res.writeHead(302, { Location: '/console/' }); return res.end(); }
  if (path.startsWith('/console/')) {
    const rel = normalize(path.slice('/console/'.length) || 'index.html').replace(/^(\.\.[/\\])+/, '');
    try { const data = await readFile(join(DIR, rel)); res.writeHead(200, { 'Content-Type': MIME[extname(rel)] || 'application/octet-stream' }); return res.end(data); }
    catch { return problem(res, 404, 'not-found', 'no such console file'); }
  }
  const sid = cookieOf(req);
  const l = sid && logins.get(sid);
  if (path === '/server/login' && req.method === 'POST') {
    const b = JSON.parse((await readBody(req)).toString() || '{}');
    if (failures >= 5) return send(res, 429, { type: 'https://api.backend.ai/probs/too-many-requests', title: 'too-many-requests', msg: 'Too many failed logins: the account is locked for a while.', authenticated: false }, { 'Content-Type': 'application/problem+json', 'Retry-After': '300' });
    const user = USERS[b.username] || Object.values(USERS).find((x) => x.username === b.username);
    if (!user || user.password !== b.password) { failures++; return problem(res, 401, 'auth-failed', 'wrong user name or password', { authenticated: false }); }
    failures = 0;
    const cookie = randomBytes(16).toString('hex'), csrf = randomBytes(16).toString('hex');
    logins.set(cookie, { user, csrf });
    return send(res, 200, { authenticated: true, data: who({ user }), csrf_token: csrf }, { 'Set-Cookie': `tsid=${cookie}; Path=/; HttpOnly; SameSite=Lax` });
  }
  if (path === '/server/login-check') return send(res, 200, l ? { authenticated: true, data: who(l), csrf_token: l.csrf } : { authenticated: false });
  if (path === '/server/logout' && req.method === 'POST') {
    if (l && req.headers['x-csrf-token'] !== l.csrf) return problem(res, 403, 'forbidden', 'missing or wrong X-CSRF-Token');
    const b = JSON.parse((await readBody(req)).toString() || '{}');
    if (l && b.everywhere) { for (const [k, v] of logins) if (v.user === l.user) logins.delete(k); } else if (sid) logins.delete(sid);
    return send(res, 200, { authenticated: false }, { 'Set-Cookie': 'tsid=; Path=/; Max-Age=0' });
  }
  if (path.startsWith('/func/')) {
    if (!l) return problem(res, 401, 'auth-failed', 'not signed in (the login ended)');
    if (req.headers['x-csrf-token'] !== l.csrf) return problem(res, 403, 'forbidden', 'missing or wrong X-CSRF-Token');
    return func(req, res, path.slice(5), u.searchParams, l);
  }
  return problem(res, 404, 'not-found', 'no such route');
});

// tessera-vfolder's transfer endpoints, on another origin (CORS).
const CORS = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Methods': 'GET, HEAD, POST, PATCH, DELETE, OPTIONS', 'Access-Control-Allow-Headers': 'Tus-Resumable, Upload-Offset, Upload-Length, Upload-Metadata, Content-Type, Range', 'Access-Control-Expose-Headers': 'Upload-Offset, Upload-Length, Tus-Version, Tus-Resumable, Location, Content-Disposition' };
const transfer = http.createServer(async (req, res) => {
  const u = new URL(req.url, 'http://x');
  if (req.method === 'OPTIONS') { res.writeHead(204, { ...CORS, 'Tus-Version': '1.0.0', 'Tus-Resumable': '1.0.0' }); return res.end(); }
  let r;
  if ((r = u.pathname.match(/^\/v1\/transfer\/upload\/([^/]+)$/))) {
    const up = uploads.get(r[1]);
    if (!up || u.searchParams.get('token') !== up.token) { res.writeHead(401, { ...CORS, 'Content-Type': 'application/problem+json' }); return res.end(JSON.stringify({ title: 'auth-failed', msg: 'bad token' })); }
    if (req.method === 'HEAD') { res.writeHead(200, { ...CORS, 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(up.offset), 'Upload-Length': String(up.size), 'Cache-Control': 'no-store' }); return res.end(); }
    if (req.method === 'PATCH') {
      if (Number(req.headers['upload-offset']) !== up.offset) { res.writeHead(409, { ...CORS, 'Upload-Offset': String(up.offset) }); return res.end(); }
      const data = await readBody(req);
      up.chunks.push(data); up.offset += data.length;
      if (up.offset >= up.size) {
        const [p, n] = split(up.path);
        let d = up.folder.files; for (const part of p.split('/').filter(Boolean)) d = d[part] = d[part] || {};
        d[n] = Buffer.concat(up.chunks).toString('latin1'); up.folder.used_bytes += up.size;
      }
      res.writeHead(204, { ...CORS, 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(up.offset) }); return res.end();
    }
  }
  if (u.pathname === '/v1/transfer/download') {
    let t; try { t = JSON.parse(Buffer.from(u.searchParams.get('token') || '', 'base64url').toString()); } catch { res.writeHead(401, CORS); return res.end(); }
    const f = folders.find((x) => x.name === t.folder);
    const [p, n] = split(t.file);
    const v = f && (t.file === '.' ? f.files : dirAt(f, p)?.[n]);
    if (v === undefined) { res.writeHead(404, CORS); return res.end(); }
    const isDir = typeof v === 'object';
    const body = isDir ? 'PK(mock zip of ' + t.file + ')' : v;
    res.writeHead(200, { ...CORS, 'Content-Type': isDir ? 'application/zip' : 'application/octet-stream', 'Content-Disposition': `attachment; filename="${(t.file === '.' ? t.folder : n) + (isDir ? '.zip' : '')}"` });
    return res.end(body);
  }
  res.writeHead(404, CORS); res.end();
});

// A terminal: the WebSocket at /ws echoes input as binary frames, answers
// resizes ("\x01cols,rows") with a line, like tessera-term's protocol.
const term = http.createServer((req, res) => { res.writeHead(200, { 'Content-Type': 'text/html' }); res.end('<!doctype html><title>app</title><h1>mock app</h1>'); });
term.on('upgrade', (req, sock) => {
  const key = req.headers['sec-websocket-key'];
  const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
  sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  const frame = (op, payload) => { const b = Buffer.from(payload); const h = b.length < 126 ? Buffer.from([0x80 | op, b.length]) : Buffer.from([0x80 | op, 126, b.length >> 8, b.length & 255]); sock.write(Buffer.concat([h, b])); };
  frame(2, 'mock shell ready\r\n$ ');
  let buf = Buffer.alloc(0);
  sock.on('data', (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 6) {
      const op = buf[0] & 15; let len = buf[1] & 127, off = 2;
      if (len === 126) { len = buf.readUInt16BE(2); off = 4; }
      if (buf.length < off + 4 + len) break;
      const mask = buf.subarray(off, off + 4); const data = Buffer.from(buf.subarray(off + 4, off + 4 + len)).map((x, i) => x ^ mask[i % 4]);
      buf = buf.subarray(off + 4 + len);
      if (op === 8) { frame(8, ''); sock.end(); return; }
      const s = Buffer.from(data).toString();
      if (op === 1 && s.startsWith('\x01')) { frame(2, `\r\n[resized to ${s.slice(1)}]\r\n$ `); continue; }
      frame(2, s === '\r' ? '\r\n$ ' : s);
    }
  });
  sock.on('error', () => {});
});

main.listen(PORT, HOST, () => console.log(`mock gateway: http://${HOST}:${PORT}/console/ (console files from ${DIR})`));
transfer.listen(PORT + 1, HOST);
term.listen(PORT + 2, HOST);
