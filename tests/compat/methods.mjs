// methods.mjs: one test per public method of backend.ai-client 21.3.1 (its
// plugins cloud, eduApp and enterprise aside), in the order a person would
// use them: create, list, change, delete. Each is
//   t(name, fn, check, opts)
// name: `<member>.<method>` as the SDK spells it (`Client.<method>` for the
// client's own), with `[variant]` where the SDK takes another code path
// (`[user]`: a plain user's keypair where the SDK asks differently than for
// an admin; `[session]`: SESSION mode, a password login through
// /server/login and /func/...). fn(c) calls the method once and resolves
// with its answer (or something derived from it); check(answer) is null or
// why the answer is not what the SDK's callers read. opts: timeout (ms,
// default 20 s), local (the method sends no request), note(answer) (a
// detail for a passing row).
//
// c: clients A (superadmin), U (a user), V (a second user, invited), W (a
// user that signs out), F (a fresh client, no version read yet), SM
// (SESSION mode as U), SMA (SESSION mode as the superadmin); c.users.<X>:
// {id, email, password, ak, sk}; c.env: gw, image, registry, host; c.s:
// state passed between tests; c.fresh(prefix): a unique name; c.rest(X, ...):
// a signed REST request for set-up (lib.raw); c.need(value, what).
import crypto from 'node:crypto';

import { S, clearCookies, setCookie, sleep } from './lib.mjs';

const RUNNING = 'RUNNING';

// Wait (signed REST, not the method under test) until a session has one of
// the statuses; its last status otherwise.
async function waitStatus(c, who, name, statuses, ms = 60000) {
  const end = Date.now() + ms;
  let last = '';
  while (Date.now() < end) {
    const r = await c.rest(who, 'GET', `/session/${encodeURIComponent(name)}`);
    last = r.body && r.body.status ? `${r.body.status} (${r.body.statusInfo || ''})` : `${r.status}`;
    if (r.body && statuses.includes(r.body.status)) return r.body;
    if (r.status === 404 || (r.body && ['ERROR', 'CANCELLED', 'TERMINATED'].includes(r.body.status))) break;
    await sleep(500);
  }
  throw new Error(`prerequisite: session ${name} is not ${statuses.join('/')} (last: ${last})`);
}

async function destroyQuietly(c, who, name) {
  if (name) await c.rest(who, 'DELETE', `/session/${encodeURIComponent(name)}`).catch(() => null);
}

// A pending invitation of V to folder `name` (set up over REST), its id.
async function pendingInvitation(c, name) {
  const inv = await c.rest('U', 'POST', `/folders/${name}/invite`, { perm: 'ro', emails: [c.users.V.email] });
  if (![200, 201].includes(inv.status)) {
    throw new Error(`prerequisite: POST /folders/${name}/invite: ${inv.status} ${inv.text}`);
  }
  const list = await c.rest('V', 'GET', '/folders/invitations/list');
  const found = ((list.body && list.body.invitations) || []).find((i) => i.vfolder_name === name);
  return c.need(found && found.id, `V's invitation to ${name}`);
}

const POLICY_INPUT = {
  default_for_unspecified: 'UNLIMITED',
  total_resource_slots: JSON.stringify({ cpu: '4', mem: '8g' }),
  max_concurrent_sessions: 2,
  max_containers_per_session: 1,
  idle_timeout: 0,
  max_vfolder_count: 10,
  max_vfolder_size: 0,
  allowed_vfolder_hosts: ['local'],
};

export function defineTests(t) {
  // ---- the client itself, configuration and signing (most are local) -------------------------
  t('ClientConfig.createFromEnv', (c) => {
    Object.assign(process.env, { BACKEND_ACCESS_KEY: c.users.A.ak, BACKEND_SECRET_KEY: c.users.A.sk,
      BACKEND_ENDPOINT: c.env.gw });
    const cfg = c.ai.ClientConfig.createFromEnv();
    return cfg.accessKey === c.users.A.ak && cfg.secretKey === c.users.A.sk && cfg.endpoint === c.env.gw;
  }, S.equals(true), { local: true });
  t('Client.getServerVersion', (c) => c.F.getServerVersion(),
    S.all(S.obj('version', 'manager'), S.at('version', S.matches(/^v\d+\.\d{8}$/))),
    { note: (v) => `version ${v.version}, manager ${v.manager}` });
  t('Client.get_manager_version', async (c) => {
    const v = await c.F.get_manager_version();
    return { v, prefix: c.F.kernelPrefix, api: c.F.apiVersion };
  }, S.all(S.at('v', S.type('string')), S.at('prefix', S.equals('/session'))),
  { note: (v) => `API ${v.api}: sessions under ${v.prefix}` });
  t('Client.supports', (c) => c.F.supports('group-folder'), S.equals(true), { local: true });
  t('Client.isAPIVersionCompatibleWith', (c) => c.F.isAPIVersionCompatibleWith('v6.20200815'), S.equals(true),
    { local: true });
  t('Client.isManagerVersionCompatibleWith', (c) => c.F.isManagerVersionCompatibleWith('20.09.16'), S.type('boolean'),
    { local: true, note: (v) => `manager >= 20.09.16: ${v} (the SDK's avoid-hol-blocking)` });
  t('Client.mangleUserAgentSignature', (c) => c.A.mangleUserAgentSignature(), S.matches(/tessera-compat/),
    { local: true });
  t('Client.generateSessionId', (c) => c.A.generateSessionId(), S.matches(/^[A-Za-z0-9]{8}-jsSDK$/),
    { local: true });
  t('Client.slugify', (c) => c.A.slugify('Hello World_x'), S.equals('hello-world-x'), { local: true });
  t('Client.getCurrentDate', (c) => c.A.getCurrentDate(new Date(Date.UTC(2021, 2, 4, 23, 59))),
    S.equals('20210304'), { local: true });
  t('Client.getSignKey', (c) => {
    const now = new Date();
    const got = Buffer.from(c.A.getSignKey(c.users.A.sk, now), 'binary').toString('hex');
    const day = now.toISOString().slice(0, 10).replaceAll('-', '');
    const k1 = crypto.createHmac('sha256', c.users.A.sk).update(day).digest();
    const want = crypto.createHmac('sha256', k1).update(new URL(c.env.gw).host).digest('hex');
    return got === want || `${got} != ${want}`;
  }, S.equals(true), { local: true });
  t('Client.sign', (c) => c.A.sign('key', 'utf8', 'message', 'hex'),
    S.equals(crypto.createHmac('sha256', 'key').update('message').digest('hex')), { local: true });
  t('Client.getAuthenticationString', (c) => c.A.getAuthenticationString('GET', '/x?y=1', 'DATE', '').split('\n'),
    S.all(S.arr([], 7), (v) => (v[0] === 'GET' && v[1] === '/x?y=1' && v[3].startsWith('host:') ? null
      : `unexpected lines ${JSON.stringify(v)}`)), { local: true });
  // the request builders: what they build is sent as it is, the server says
  t('Client.newSignedRequest', async (c) => {
    const rq = c.A.newSignedRequest('GET', '/auth/test?echo=compat', null);
    const r = await fetch(rq.uri, { method: rq.method, headers: rq.headers });
    return r.json();
  }, S.all(S.at('authorized', S.equals('yes')), S.at('echo', S.equals('compat'))));
  t('Client.newUnsignedRequest', async (c) => {
    const rq = c.A.newUnsignedRequest('GET', '/', null);
    return (await fetch(rq.uri, { method: rq.method, headers: rq.headers })).json();
  }, S.obj('version', 'manager'));
  t('Client.newPublicRequest', async (c) => {
    const rq = c.A.newPublicRequest('GET', '/config/resource-slots', null, '');
    return (await fetch(rq.uri, { method: rq.method, headers: rq.headers })).json();
  }, S.obj('cpu', 'mem'));
  t('Client.get_resource_slots', (c) => c.A.get_resource_slots(), S.obj('cpu', 'mem'));
  t('Client.query', (c) => c.U.query('query { keypair { access_key is_active } }', {}),
    S.gql('keypair', S.obj('access_key')));

  // ---- the user's own account ----------------------------------------------------------------------
  t('Client.update_password', async (c) => {
    const u = c.users.U;
    const next = `${u.password}-2`;
    const r = await c.U.update_password(u.password, next, next);
    u.password = next;
    return r;
  }, S.any);
  t('Client.update_full_name', (c) => c.U.update_full_name(c.users.U.email, 'Compat User'), S.any);
  t('Client.fetchSSHKeypair', (c) => c.U.fetchSSHKeypair(), S.obj('ssh_public_key'));
  t('Client.refreshSSHKeypair', (c) => c.U.refreshSSHKeypair(), S.obj('ssh_public_key', 'ssh_private_key'));

  // ---- sessions ------------------------------------------------------------------------------------
  const small = { cpu: '1', mem: '256m', enqueueOnly: true };
  t('Client.createIfNotExists', async (c) => {
    c.s.s1 = c.fresh('s1');
    return c.U.createIfNotExists(c.env.image, c.s.s1, small);
  }, S.obj('sessionId', 'status'));
  t('Client.get_info', async (c) => {
    await waitStatus(c, 'U', c.need(c.s.s1, 'session s1'), [RUNNING]);
    const info = await c.U.get_info(c.s.s1);
    if (info && info.sessionUuid) c.s.s1uuid = info.sessionUuid;
    return info;
  }, S.obj('status', 'image', 'occupiedSlots'), { timeout: 80000 });
  t('Client.execute', (c) => c.U.execute(c.need(c.s.s1, 'session s1'), 'compat-run-1', 'batch', '',
    { exec: 'echo compat' }), S.at('result', S.obj('status', 'console')), { timeout: 80000 });
  t('Client.runCode', (c) => c.U.runCode('echo compat', c.need(c.s.s1, 'session s1'), 'compat-run-2', 'query'),
    S.at('result', S.obj('status', 'console')), { timeout: 80000 });
  t('Client.get_logs', (c) => c.U.get_logs(c.need(c.s.s1, 'session s1')), S.at('result', S.obj('logs')));
  t('Client.getTaskLogs', (c) => c.U.getTaskLogs(c.need(c.s.s1, 'session s1')), S.type('string'));
  t('computeSession.total_count', (c) => c.U.computeSession.total_count('RUNNING'),
    S.gql('compute_session_list', S.obj('total_count')));
  t('computeSession.list', (c) => c.U.computeSession.list(),
    S.gql('compute_session_list', S.all(S.obj('items', 'total_count'), S.at('items', S.arr(['id', 'name'], 1)))));
  t('computeSession.listAll', (c) => c.U.computeSession.listAll(), S.arr(['id', 'name', 'status'], 1));
  t('computeSession.get', (c) => c.U.computeSession.get(undefined, c.need(c.s.s1uuid, 'the uuid of s1 (get_info)')),
    S.gql('compute_session', S.obj('id', 'status')));
  t('Client.shutdown_service', (c) => c.U.shutdown_service(c.need(c.s.s1, 'session s1'), 'ttyd'), S.any);
  t('Client.upload', (c) => c.U.upload(c.need(c.s.s1, 'session s1'), 'compat.txt', new Blob(['compat\n'])), S.any);
  t('Client.download', (c) => c.U.download(c.need(c.s.s1, 'session s1'), ['compat.txt']), S.any);
  t('Client.download_single', (c) => c.U.download_single(c.need(c.s.s1, 'session s1'), 'compat.txt'), S.any);
  t('Client.restart', (c) => c.U.restart(c.need(c.s.s1, 'session s1')), S.any);
  t('Client.refreshKernel', async (c) => {
    await waitStatus(c, 'U', c.need(c.s.s1, 'session s1'), [RUNNING]);
    return c.U.refreshKernel(c.s.s1);
  }, S.any, { timeout: 80000 });
  t('Client.destroy', async (c) => {
    await waitStatus(c, 'U', c.need(c.s.s1, 'session s1'), [RUNNING]).catch(() => null);
    return c.U.destroy(c.s.s1);
  }, S.any, { timeout: 120000 });
  t('Client.createKernel', async (c) => {
    c.s.s2 = c.fresh('s2');
    return c.U.createKernel(c.env.image, c.s.s2, small);
  }, S.obj('sessionId', 'status'));
  t('Client.destroyKernel', (c) => c.U.destroyKernel(c.need(c.s.s2, 'session s2')), S.any, { timeout: 120000 });
  t('sessionTemplate.list', (c) => c.U.sessionTemplate.list(), S.arr());
  t('Client.createSessionFromTemplate', async (c) => {
    const tpl = {
      api_version: 'v1', kind: 'taskTemplate', metadata: { name: c.fresh('tpl'), tag: null },
      spec: { session_type: 'interactive', kernel: { image: c.env.image, environ: {} }, mounts: {},
        resources: { cpu: '1', mem: '256m' } },
    };
    const r = await c.rest('U', 'POST', '/template/session',
      { payload: JSON.stringify(tpl), group_id: c.defaultProject });
    const id = r.body && (Array.isArray(r.body) ? r.body[0] && r.body[0].id : r.body.id);
    if (!id) throw new Error(`prerequisite: POST /template/session: ${r.status} ${r.text.slice(0, 160)}`);
    c.s.s3 = c.fresh('s3');
    try {
      return await c.U.createSessionFromTemplate(id, null, c.s.s3, { enqueueOnly: true });
    } finally {
      await destroyQuietly(c, 'U', c.s.s3);
    }
  }, S.obj('sessionId', 'status'));
  t('image.install', (c) => c.A.image.install(c.env.image, { cpu: '1', mem: '256m' }), S.any, { timeout: 120000 });

  // ---- virtual folders -------------------------------------------------------------------------------
  t('vfolder.list_hosts', async (c) => {
    const r = await c.U.vfolder.list_hosts();
    if (r && r.default) c.env.host = r.default;
    return r;
  }, S.all(S.obj('default', 'allowed'), S.at('allowed', S.arr([], 1))));
  t('vfolder.list_allowed_types', (c) => c.U.vfolder.list_allowed_types(), S.arr([], 1));
  t('vfolder.create', async (c) => {
    c.s.f1 = c.fresh('f1');
    return c.U.vfolder.create(c.s.f1, c.env.host, '', 'general', 'rw', true);
  }, S.obj('id', 'name'));
  t('vfolder.list', async (c) => {
    const r = await c.U.vfolder.list();
    const mine = Array.isArray(r) && r.find((f) => f.name === c.s.f1);
    if (mine) c.s.f1id = mine.id;
    return r;
  }, S.arr(['id', 'name', 'host', 'permission'], 1));
  t('vfolder.info', (c) => c.U.vfolder.info(c.need(c.s.f1, 'folder f1')),
    S.obj('id', 'name', 'host', 'permission', 'is_owner'));
  t('vfolder.mkdir', (c) => c.U.vfolder.mkdir('dir1', c.need(c.s.f1, 'folder f1')), S.any);
  t('vfolder.create_upload_session', async (c) => {
    const data = 'hello compat';
    const url = await c.U.vfolder.create_upload_session('hello.txt', { size: data.length },
      c.need(c.s.f1, 'folder f1'));
    // what a tus client (the Web-UI's tus-js-client) does next with it
    const r = await fetch(url, { method: 'PATCH', body: data, headers: {
      'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' } });
    return { url, patch: r.status };
  }, S.all(S.at('url', S.matches(/^https?:\/\/.*[?&]token=/)), S.at('patch', (s) => (s === 204 || s === 200 ? null
    : `a tus PATCH to the URL answers ${s}`))));
  t('vfolder.list_files', (c) => c.U.vfolder.list_files('', c.need(c.s.f1, 'folder f1')),
    S.at('items', S.arr(['name', 'type', 'size'], 1)));
  t('vfolder.rename_file', (c) => c.U.vfolder.rename_file('hello.txt', 'hello2.txt', c.need(c.s.f1, 'folder f1'),
    false), S.any);
  t('vfolder.request_download_token', (c) => c.U.vfolder.request_download_token('hello2.txt',
    c.need(c.s.f1, 'folder f1')), S.obj('token', 'url'));
  t('vfolder.download', async (c) => {
    const r = await c.U.vfolder.download('hello2.txt', c.need(c.s.f1, 'folder f1'), false, false);
    return { status: r.status, body: await r.text() };
  }, S.all(S.at('status', S.equals(200)), S.at('body', S.equals('hello compat'))));
  t('vfolder.download_with_token', async (c) => {
    const r = await c.rest('U', 'POST', `/folders/${c.need(c.s.f1, 'folder f1')}/request-download`,
      { file: 'hello2.txt' });
    const blob = await c.U.vfolder.download_with_token(c.need(r.body && r.body.token, 'a download token'));
    // the same bytes as the upload (the answer is a redirect to the download URL)
    return { body: blob && typeof blob.text === 'function' ? await blob.text() : blob };
  }, S.at('body', S.equals('hello compat')));
  t('vfolder.get_download_url_with_token', (c) => c.U.vfolder.get_download_url_with_token('tok'),
    S.matches(/\/folders\/_\/download_with_token\?token=tok$/), { local: true });
  t('vfolder.delete_files', (c) => c.U.vfolder.delete_files(['hello2.txt'], false, c.need(c.s.f1, 'folder f1')), S.any);
  t('vfolder.update_folder', (c) => c.U.vfolder.update_folder({ cloneable: true, permission: 'rw' },
    c.need(c.s.f1, 'folder f1')), S.any);
  t('vfolder.upload', (c) => c.U.vfolder.upload('up.txt', new Blob(['up\n']), c.need(c.s.f1, 'folder f1')), S.any);
  t('vfolder.uploadFormData', (c) => {
    const fd = new FormData();
    fd.append('src', new Blob(['up\n']), 'up2.txt');
    return c.U.vfolder.uploadFormData(fd, c.need(c.s.f1, 'folder f1'));
  }, S.any);
  t('vfolder.clone', (c) => c.U.vfolder.clone({ cloneable: false, permission: 'rw', target_host: c.env.host,
    target_name: c.fresh('f1c'), usage_mode: 'general' }, c.need(c.s.f1, 'folder f1')), S.any, { timeout: 60000 });
  t('vfolder.rename', async (c) => {
    const to = c.fresh('f1r');
    c.U.vfolder.name = c.need(c.s.f1, 'folder f1');
    try {
      const r = await c.U.vfolder.rename(to);
      c.s.f1 = to;
      return r;
    } finally {
      c.U.vfolder.name = null;
    }
  }, S.any);
  t('vfolder.invite', (c) => c.U.vfolder.invite('ro', [c.users.V.email], c.need(c.s.f1, 'folder f1')),
    S.at('invited_ids', S.arr([], 1)));
  t('vfolder.invitations', async (c) => {
    // the invitation to f1: invite's own, or one made over REST if invite failed
    const f1 = c.need(c.s.f1, 'folder f1');
    const pending = await c.rest('V', 'GET', '/folders/invitations/list');
    if (!((pending.body && pending.body.invitations) || []).some((i) => i.vfolder_name === f1)) {
      await c.rest('U', 'POST', `/folders/${f1}/invite`, { perm: 'ro', emails: [c.users.V.email] });
    }
    const r = await c.V.vfolder.invitations();
    const inv = ((r && r.invitations) || []).find((i) => i.vfolder_name === f1);
    if (inv) c.s.inv = inv.id;
    return r;
  }, S.at('invitations', S.arr(['id', 'vfolder_id', 'vfolder_name', 'perm', 'state'], 1)));
  t('vfolder.accept_invitation', (c) => c.V.vfolder.accept_invitation(c.need(c.s.inv, 'V\'s invitation to f1')), S.any);
  t('vfolder.list_invitees', (c) => c.U.vfolder.list_invitees(c.need(c.s.f1id, 'the id of f1')),
    S.at('shared', S.arr(['vfolder_id', 'shared_to', 'perm'])));
  t('vfolder.modify_invitee_permission', (c) => c.U.vfolder.modify_invitee_permission({
    perm: 'rw', user: c.users.V.id, vfolder: c.need(c.s.f1id, 'the id of f1') }), S.any);
  t('vfolder.leave_invited', (c) => c.V.vfolder.leave_invited(c.need(c.s.f1, 'folder f1')), S.any);
  t('vfolder.delete_invitation', async (c) => c.U.vfolder.delete_invitation(
    await pendingInvitation(c, c.need(c.s.f1, 'folder f1'))), S.any);
  t('vfolder.share', async (c) => {
    c.s.pf = c.fresh('pf');
    await c.rest('A', 'POST', '/folders', { name: c.s.pf, host: c.env.host, group: c.defaultProject },
      { okStatus: [200, 201] });
    return c.A.vfolder.share('ro', [c.users.U.email], c.s.pf);
  }, S.any);
  t('vfolder.unshare', (c) => c.A.vfolder.unshare([c.users.U.email], c.need(c.s.pf, 'project folder pf')), S.any);
  t('vfolder.delete', (c) => c.U.vfolder.delete(c.need(c.s.f1, 'folder f1')), S.any);

  // ---- resource presets, groups, usage --------------------------------------------------------------
  t('resourcePreset.list', (c) => c.U.resourcePreset.list(),
    S.at('presets', S.arr(['name', 'resource_slots', 'shared_memory'], 1)));
  t('resourcePreset.check', (c) => c.U.resourcePreset.check({ group: 'default', scaling_group: 'default' }),
    S.all(S.obj('keypair_limits', 'keypair_using', 'keypair_remaining', 'scaling_group_remaining',
      'scaling_groups', 'presets'), S.at('presets', S.arr(['name', 'resource_slots', 'allocatable'], 1))));
  t('resourcePreset.add', (c) => c.A.resourcePreset.add(c.fresh('rp'),
    { resource_slots: JSON.stringify({ cpu: '1', mem: '1g' }) }), S.mutation('create_resource_preset'));
  t('resourcePreset.mutate', async (c) => {
    c.s.rp = c.fresh('rp');
    await c.rest('A', 'POST', '/admin/resource-presets', { name: c.s.rp, resource_slots: { cpu: '1', mem: '1g' } },
      { okStatus: [200, 201] });
    return c.A.resourcePreset.mutate(c.s.rp, { resource_slots: JSON.stringify({ cpu: '2', mem: '2g' }) });
  }, S.mutation('modify_resource_preset'));
  t('resourcePreset.delete', (c) => c.A.resourcePreset.delete(c.need(c.s.rp, 'preset rp')),
    S.mutation('delete_resource_preset'));
  t('scalingGroup.list', (c) => c.U.scalingGroup.list('default'), S.at('scaling_groups', S.arr(['name'], 1)));
  t('scalingGroup.list_available', (c) => c.A.scalingGroup.list_available(),
    S.gql('scaling_groups', S.arr(['name', 'is_active', 'scheduler'], 1)));
  t('scalingGroup.create', (c) => c.A.scalingGroup.create(c.fresh('sg'), 'compat'), S.mutation('create_scaling_group'));
  t('scalingGroup.associate_domain', async (c) => {
    c.s.sg = c.fresh('sg');
    await c.rest('A', 'POST', '/admin/resource-groups', { name: c.s.sg }, { okStatus: [200, 201] });
    return c.A.scalingGroup.associate_domain('default', c.s.sg);
  }, S.mutation('associate_scaling_group_with_domain'));
  t('scalingGroup.update', (c) => c.A.scalingGroup.update(c.need(c.s.sg, 'resource group sg'),
    { description: 'changed', is_active: true }), S.mutation('modify_scaling_group'));
  t('scalingGroup.delete', (c) => c.A.scalingGroup.delete(c.need(c.s.sg, 'resource group sg')),
    S.mutation('delete_scaling_group'));
  t('agent.list', (c) => c.A.agent.list('ALIVE'),
    S.gql('agents', S.arr(['id', 'status', 'available_slots', 'occupied_slots'], 1)));
  t('resources.totalResourceInformation', (c) => c.A.resources.totalResourceInformation(),
    S.all(S.obj('cpu', 'mem', 'agents'), S.at('agents', S.obj('total'))));
  t('resources.user_stats', (c) => c.U.resources.user_stats(), S.arr());
  t('storageproxy.list', (c) => c.A.storageproxy.list(),
    S.gql('storage_volume_list', S.all(S.obj('items', 'total_count'), S.at('items', S.arr(['id', 'backend'], 1)))));
  t('storageproxy.detail', (c) => c.A.storageproxy.detail(c.env.host),
    S.gql('storage_volume', S.obj('id', 'backend')));

  // ---- keypairs, policies, users, projects, domains (the admin pages) -----------------------------
  t('keypair.info', (c) => c.A.keypair.info(c.users.A.ak), S.gql('keypair', S.obj('access_key', 'is_admin')));
  t('keypair.info[user]', (c) => c.U.keypair.info(c.users.U.ak), S.gql('keypair', S.obj('access_key', 'is_admin')));
  t('keypair.list', (c) => c.A.keypair.list(), S.at('keypairs', S.arr(['access_key', 'user_id', 'is_active'], 2)));
  t('keypair.list[user]', (c) => c.U.keypair.list(), S.at('keypairs', S.arr(['access_key', 'user_id'], 1)));
  t('keypair.add', (c) => c.A.keypair.add(c.users.U.email, true, false, 'default', 1000), S.mutation('create_keypair'));
  t('keypair.mutate', async (c) => {
    const k = await c.rest('A', 'POST', '/admin/keypairs', { user_id: c.users.U.id }, { okStatus: [200, 201] });
    c.s.ak = k.body.access_key;
    return c.A.keypair.mutate(c.s.ak,
      { is_active: true, is_admin: false, resource_policy: 'default', rate_limit: 5000 });
  }, S.mutation('modify_keypair'));
  t('keypair.delete', (c) => c.A.keypair.delete(c.need(c.s.ak, 'a keypair of U')), S.mutation('delete_keypair'));
  t('resourcePolicy.get', (c) => c.A.resourcePolicy.get(), S.gql('keypair_resource_policies', S.arr(['name'], 1)));
  t('resourcePolicy.get[name]', (c) => c.A.resourcePolicy.get('default'),
    S.gql('keypair_resource_policy', S.obj('name', 'total_resource_slots', 'max_concurrent_sessions')));
  t('resourcePolicy.add', (c) => c.A.resourcePolicy.add(c.fresh('pol'), POLICY_INPUT),
    S.mutation('create_keypair_resource_policy'));
  t('resourcePolicy.mutate', async (c) => {
    c.s.pol = c.fresh('pol');
    await c.rest('A', 'POST', '/admin/keypair-resource-policies',
      { name: c.s.pol, total_resource_slots: { cpu: '4' }, max_concurrent_sessions: 2 }, { okStatus: [200, 201] });
    return c.A.resourcePolicy.mutate(c.s.pol, { ...POLICY_INPUT, max_concurrent_sessions: 3 });
  }, S.mutation('modify_keypair_resource_policy'));
  t('resourcePolicy.delete', (c) => c.A.resourcePolicy.delete(c.need(c.s.pol, 'policy pol')),
    S.mutation('delete_keypair_resource_policy'));
  t('user.list', (c) => c.A.user.list(), S.at('users', S.arr(['username', 'role', 'domain_name'], 2)));
  t('user.list[user]', (c) => c.U.user.list(), S.at('users', S.arr(['username', 'role'], 1)));
  t('user.get', (c) => c.A.user.get(c.users.U.email), S.gql('user', S.obj('email', 'username', 'role', 'groups')));
  t('user.get[user]', (c) => c.U.user.get(c.users.U.email), S.gql('user', S.obj('email', 'username', 'role')));
  t('user.create', (c) => {
    const name = c.fresh('uc');
    return c.A.user.create(`${name}@example.com`, {
      username: name, password: 'compat-pass-1234', need_password_change: false, full_name: 'Created',
      description: 'by the compat suite', is_active: true, domain_name: 'default', role: 'user',
      group_ids: [c.defaultProject] });
  }, S.mutation('create_user'));
  t('user.update', async (c) => {
    c.s.ux = await c.makeUser('ux');
    return c.A.user.update(c.s.ux.email, { full_name: 'Updated', description: 'changed' });
  }, S.mutation('modify_user'));
  t('user.delete', (c) => c.A.user.delete(c.need(c.s.ux, 'user ux').email), S.mutation('delete_user'));
  t('group.list', (c) => c.A.group.list(), S.gql('groups', S.arr(['id', 'name', 'domain_name'], 1)));
  t('group.list[user]', (c) => c.U.group.list(), S.gql('groups', S.arr(['id', 'name'], 1)));
  t('domain.get', (c) => c.A.domain.get('default'),
    S.gql('domain', S.obj('name', 'is_active', 'total_resource_slots')));
  t('domain.list', (c) => c.A.domain.list(), S.gql('domains', S.arr(['name', 'is_active'], 1)));
  t('domain.update', async (c) => {
    c.s.dom = c.fresh('dom');
    await c.rest('A', 'POST', '/admin/domains', { name: c.s.dom }, { okStatus: [200, 201] });
    return c.A.domain.update(c.s.dom, { description: 'changed by the compat suite' });
  }, S.mutation('modify_domain'));

  // ---- images and maintenance -----------------------------------------------------------------------
  t('image.list', (c) => c.A.image.list(), S.gql('images', S.arr(['name', 'tag', 'registry', 'digest'], 1)));
  t('image.get', (c) => c.A.image.get(c.env.imageParts.registry, c.env.imageParts.name, c.env.imageParts.tag),
    S.obj('result'));
  t('image.modifyResource', (c) => c.A.image.modifyResource(c.env.imageParts.registry, c.env.imageParts.name,
    c.env.imageParts.tag, { cpu: { min: '1' } }), S.arr([], 1));
  t('image.modifyLabel', (c) => c.A.image.modifyLabel(c.env.imageParts.registry, c.env.imageParts.name,
    c.env.imageParts.tag, 'ai.backend.compat', 'yes'), S.any);
  t('image.uninstall', (c) => c.A.image.uninstall(c.env.image), S.equals(false), { local: true });
  t('maintenance.rescan_images', async (c) => {
    const r = await c.A.maintenance.rescan_images(c.env.registry);
    if (r && r.rescan_images && r.rescan_images.task_id) c.s.task = r.rescan_images.task_id;
    return r;
  }, S.mutation('rescan_images'), { timeout: 60000 });
  t('maintenance.recalculate_usage', (c) => c.A.maintenance.recalculate_usage(), S.obj(), { timeout: 60000 });

  // ---- configuration stores -------------------------------------------------------------------------
  t('registry.list', (c) => c.A.registry.list(), S.obj('result'));
  t('registry.add', (c) => c.A.registry.add('compat.example.com',
    { '': 'https://compat.example.com', type: 'docker' }), S.obj('result'));
  t('registry.delete', (c) => c.A.registry.delete('compat.example.com'), S.obj('result'));
  t('setting.list', (c) => c.A.setting.list(''), S.obj('result'));
  t('setting.set', (c) => c.A.setting.set('compat/key', 'value'), S.obj('result'));
  t('setting.get', (c) => c.A.setting.get('compat/key'), S.at('result', S.equals('value')));
  t('setting.delete', (c) => c.A.setting.delete('compat/key'), S.obj('result'));
  t('service.get_announcement', (c) => c.U.service.get_announcement(), S.obj('enabled', 'message'));
  t('service.update_announcement', (c) => c.A.service.update_announcement(true, 'compat suite'), S.any);
  t('userConfig.update_bootstrap_script', (c) => c.U.userConfig.update_bootstrap_script('echo compat'), S.any);
  t('userConfig.get_bootstrap_script', (c) => c.U.userConfig.get_bootstrap_script(), S.type('string'));
  t('userConfig.create', (c) => c.U.userConfig.create('export COMPAT=1\n', '.bashrc'), S.any);
  t('userConfig.get', (c) => c.U.userConfig.get(), S.arr(['path', 'data', 'permission'], 1));
  t('userConfig.update', (c) => c.U.userConfig.update('export COMPAT=2\n', '.bashrc'), S.any);
  t('userConfig.delete', (c) => c.U.userConfig.delete('.bashrc'), S.any);

  // ---- helpers (local) ------------------------------------------------------------------------------
  t('utils.changeBinaryUnit', (c) => c.A.utils.changeBinaryUnit('1g', 'm'), S.equals(1024), { local: true });
  t('utils.elapsedTime', (c) => c.A.utils.elapsedTime('2021-01-01T00:00:00Z', '2021-01-02T01:02:03Z'),
    S.equals('1 Day 01:02:03'), { local: true });
  t('utils.clamp', (c) => c.A.utils.clamp(5, 0, 3), S.equals(3), { local: true });
  t('utils.gqlToObject', (c) => JSON.stringify(c.A.utils.gqlToObject([{ id: 'a' }], 'id')),
    S.equals('{"a":{"id":"a"}}'), { local: true });
  t('utils.gqlToList', (c) => JSON.stringify(c.A.utils.gqlToList([{ id: 'a' }], 'id')), S.equals('["a"]'),
    { local: true });

  // ---- leaving: last of API mode (it deactivates W) ---------------------------------------------------
  t('Client.signout', (c) => c.W.signout(c.users.W.email, c.users.W.password), S.any);

  // ---- SESSION mode: a password login, then the API under /func ------------------------------------
  t('Client.login[session]', (c) => c.sessionLogin('SM', 'U'), S.equals(true), { timeout: 30000 });
  t('Client.check_login[session]', (c) => c.SM.check_login(), S.equals(true));
  t('Client.get_manager_version[session]', (c) => {
    c.SM._managerVersion = null; // login() read it already: ask again
    return c.SM.get_manager_version();
  }, S.type('string'));
  t('Client.get_resource_slots[session]', (c) => c.SM.get_resource_slots(), S.obj('cpu', 'mem'));
  t('vfolder.list[session]', (c) => c.SM.vfolder.list(), S.arr(['id', 'name']));
  t('resourcePreset.list[session]', (c) => c.SM.resourcePreset.list(), S.at('presets', S.arr(['name'], 1)));
  t('scalingGroup.list[session]', (c) => c.SM.scalingGroup.list('default'), S.at('scaling_groups', S.arr(['name'], 1)));
  t('keypair.info[session]', (c) => c.SM.keypair.info(null), S.gql('keypair', S.obj('access_key')));
  // single sign-on: the browser holds the identity provider's sToken cookie, no login
  t('Client.token_login[session]', (c) => {
    const token = c.ssoToken('U');
    clearCookies();
    setCookie('sToken', token);
    return c.SM.token_login();
  }, S.equals(true));
  t('Client.logout[session]', (c) => c.SM.logout(), S.any);
  // the background-task events of rescan_images, as the Web-UI follows them
  t('maintenance.attach_background_task[session]', async (c) => {
    await c.sessionLogin('SMA', 'A');
    const es = c.SMA.maintenance.attach_background_task(c.need(c.s.task, 'a task id from rescan_images'));
    try {
      return await new Promise((resolve) => {
        es.onopen = () => resolve({ open: true });
        es.onerror = (e) => resolve({ open: false, detail: e.detail });
      });
    } finally {
      es.close();
    }
  }, (v) => (v.open ? null : `the event stream did not open: ${v.detail}`), { timeout: 30000 });
}
