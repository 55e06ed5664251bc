// The launcher's checks (src/pages/launcher_validate.js): `make console-unit`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INITIAL_FORM } from '../src/pages/launcher_form.js';
import {
  clusterSize,
  launchRequest,
  launchWarnings,
  parseEnv,
  requestedSlots,
  slotsLeft,
} from '../src/pages/launcher_validate.js';

const form = (fields) => ({ ...INITIAL_FORM, image: 'python:3.12', ...fields });
const request = (fields, opts) => launchRequest(form(fields), { makeName: () => 's-made', ...opts });
const GiB = 2 ** 30;

test('the cluster size is a whole number of kernels from 1 to 64', () => {
  for (const [text, n] of [
    ['1', 1],
    [' 3 ', 3],
    ['64', 64],
    ['0', 0],
    ['65', 0],
    ['100', 0],
    ['1.5', 0],
    ['-2', 0],
    ['', 0],
    ['two', 0],
    [undefined, 0],
  ])
    assert.equal(clusterSize(text), n, JSON.stringify(text));
});

test('environment lines: NAME=value, blank lines and # comments skipped, "=" kept in the value', () => {
  assert.deepEqual(parseEnv('A=1\n\n# a comment\n  B = x=y \nC='), { A: '1', B: ' x=y', C: '' });
  assert.deepEqual(parseEnv(''), {});
  assert.throws(() => parseEnv('A=1\n=2'), /Environment line “=2” is not NAME=value/);
  assert.throws(() => parseEnv('JUSTNAME'), /not NAME=value/);
});

test('a minimal form is an interactive session of the image, its name made up', () => {
  assert.deepEqual(request({}), {
    body: {
      image: 'python:3.12',
      type: 'interactive',
      enqueueOnly: true,
      config: { resources: { cpu: '1', mem: '1g' } },
      name: 's-made',
    },
  });
});

test('every field reaches the request', () => {
  const { body, error } = request({
    image: ' python:3.12 ',
    name: 'train-1',
    type: 'batch',
    startup: 'python train.py',
    startsAt: ' 10m ',
    project: 'research',
    group: 'gpu',
    cpu: ' 2 ',
    mem: '4g',
    gpuKind: 'cuda.shares',
    gpu: '0.5',
    shmem: '64m',
    env: 'A=1',
    ports: '8080, 6006',
    clusterSize: '3',
    clusterMode: 'multi-node',
    mounts: { data: '', models: ' /mnt/models ' },
  });
  assert.equal(error, undefined);
  assert.deepEqual(body, {
    image: 'python:3.12',
    type: 'batch',
    enqueueOnly: true,
    config: {
      resources: { cpu: '2', mem: '4g', 'cuda.shares': '0.5' },
      scaling_group: 'gpu',
      resource_opts: { shmem: '64m' },
      environ: { A: '1' },
      mounts: ['data', 'models'],
      mount_map: { models: '/mnt/models' },
      preopen_ports: [8080, 6006],
    },
    cluster_size: 3,
    cluster_mode: 'multi-node',
    name: 'train-1',
    group_name: 'research',
    startupCommand: 'python train.py',
    starts_at: '10m',
  });
});

test('a GPU kind without an amount asks for no GPU', () => {
  assert.deepEqual(request({ gpuKind: 'cuda.device', gpu: '' }).body.config.resources, { cpu: '1', mem: '1g' });
});

test('each wrong field is refused with what is wrong, the first one in the form first', () => {
  const cases = [
    [{ image: '  ' }, 'Choose an image.'],
    [{ project: '' }, 'Choose a project.', { needProject: true }],
    [{ name: 'has space' }, 'A name is 1 to 64 letters, digits, “_”, “-” or “.”.'],
    [{ name: 'x'.repeat(65) }, 'A name is 1 to 64 letters, digits, “_”, “-” or “.”.'],
    [{ cpu: '0' }, 'CPU must be a positive number.'],
    [{ cpu: 'lots' }, 'CPU must be a positive number.'],
    [{ mem: '4 apples' }, 'Memory must be an amount such as 512m or 4g.'],
    [{ mem: '0' }, 'Memory must be an amount such as 512m or 4g.'],
    [{ clusterSize: '65' }, 'The cluster size is a number of kernels from 1 to 64.'],
    [{ env: 'not a pair' }, 'Environment line “not a pair” is not NAME=value'],
    [{ ports: '80' }, 'Extra ports are numbers from 1024 to 65535.'],
    [{ ports: '8080, 70000' }, 'Extra ports are numbers from 1024 to 65535.'],
    [{ ports: '8080.5' }, 'Extra ports are numbers from 1024 to 65535.'],
    [{ type: 'batch', startup: ' ' }, 'A batch session needs a startup command.'],
    [{ image: '', cpu: '0', ports: '1' }, 'Choose an image.'],
    [{ cpu: '0', ports: '1' }, 'CPU must be a positive number.'],
  ];
  for (const [fields, error, opts] of cases) assert.deepEqual(request(fields, opts), { error }, JSON.stringify(fields));
});

test('a project is needed only when the user has projects', () => {
  assert.ok(request({ project: '' }).body);
  assert.equal(request({ project: 'p' }, { needProject: true }).body.group_name, 'p');
});

test('what is asked is per kernel times the cluster size', () => {
  assert.deepEqual(requestedSlots(form({ cpu: '2', mem: '1g', clusterSize: '3', gpuKind: 'cuda.device', gpu: '1' })), {
    cpu: 6,
    mem: 3 * GiB,
    'cuda.device': 3,
  });
  const bad = requestedSlots(form({ cpu: 'x', mem: 'y', clusterSize: 'z' }));
  assert.ok(Number.isNaN(bad.cpu) && Number.isNaN(bad.mem));
});

test("what is left: the check-presets answer's, else the policy's", () => {
  const choices = { left: { cpu: 4 } };
  assert.deepEqual(slotsLeft({ scaling_group_remaining: { cpu: '2', mem: 'Infinity' } }, choices), {
    cpu: 2,
    mem: Infinity,
  });
  assert.deepEqual(slotsLeft({ keypair_remaining: { cpu: '3' } }, choices), { cpu: 3 });
  assert.deepEqual(slotsLeft(null, choices), { cpu: 4 });
  assert.equal(slotsLeft(null, null), undefined);
});

const choices = (more) => ({ imageList: [], groups: null, policy: null, liveCount: 0, left: null, ...more });

test('no warning before the choices load, none for a form within every limit', () => {
  assert.deepEqual(launchWarnings(form({}), null, null), []);
  assert.deepEqual(launchWarnings(form({}), choices({ left: { cpu: 8, mem: 8 * GiB } }), null), []);
});

test('asking more than is left is a warning, saying whose limit it is', () => {
  const f = form({ cpu: '2', mem: '1g', clusterSize: '2' });
  assert.deepEqual(launchWarnings(f, choices({ left: { cpu: 3 } }), null), ['CPU: 4 asked, 3 left under your policy']);
  assert.deepEqual(launchWarnings(f, choices(), { scaling_group_remaining: { mem: String(GiB) } }), [
    'Memory: 2.0 GiB asked, 1.0 GiB left',
  ]);
});

test("the policy's kernels per session and concurrent sessions", () => {
  const policy = { max_containers_per_session: 1, max_concurrent_sessions: 2 };
  assert.deepEqual(launchWarnings(form({ clusterSize: '2' }), choices({ policy, liveCount: 2 }), null), [
    'Your policy allows 1 kernel per session.',
    'You already run 2 of 2 sessions: this one will wait.',
  ]);
  assert.deepEqual(launchWarnings(form({ clusterSize: '2' }), choices({ policy, liveCount: 1 }), null), [
    'Your policy allows 1 kernel per session.',
  ]);
  const three = { max_containers_per_session: 3 };
  assert.deepEqual(launchWarnings(form({ clusterSize: '4' }), choices({ policy: three }), null), [
    'Your policy allows 3 kernels per session.',
  ]);
});

test("less than the image's minimum is a warning", () => {
  const c = choices({ imageList: [{ ref: 'python:3.12', min: { mem: String(2 * GiB), cpu: '1' } }] });
  assert.deepEqual(launchWarnings(form({ mem: '1g' }), c, null), ['The image needs at least 2.0 GiB of Memory']);
  assert.deepEqual(launchWarnings(form({ mem: '1g', image: 'other' }), c, null), []);
});

test('more than the chosen group has free is a warning (the session waits)', () => {
  const c = choices({ groups: [{ name: 'g1', agentCount: 1, free: { cpu: 1 } }] });
  assert.deepEqual(launchWarnings(form({ cpu: '2', group: 'g1' }), c, null), [
    'CPU: only 1 free in g1 now (the session will wait)',
  ]);
  assert.deepEqual(launchWarnings(form({ cpu: '2' }), c, null), []);
  const empty = choices({ groups: [{ name: 'g1', agentCount: 0, free: { cpu: 0 } }] });
  assert.deepEqual(launchWarnings(form({ cpu: '2', group: 'g1' }), empty, null), []);
});
