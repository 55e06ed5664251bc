// The launcher's form state (src/pages/launcher_form.js): `make console-unit`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INITIAL_FORM, PRESETS, gpuKinds, launcherForm, presetOptions } from '../src/pages/launcher_form.js';

const run = (state, ...actions) => actions.reduce(launcherForm, state);

test('a field typed is set; the state before it is left as it was', () => {
  const before = structuredClone(INITIAL_FORM);
  const s = launcherForm(INITIAL_FORM, { type: 'field', name: 'image', value: 'python:3.12' });
  assert.equal(s.image, 'python:3.12');
  assert.deepEqual(INITIAL_FORM, before);
});

test('changes made one after the other all stay (no update is lost)', () => {
  const s = run(
    INITIAL_FORM,
    { type: 'field', name: 'name', value: 'train' },
    { type: 'field', name: 'cpu', value: '3' },
    { type: 'mount', name: 'data', on: true },
    { type: 'mountPath', name: 'data', path: '/mnt/data' },
    { type: 'field', name: 'env', value: 'A=1' },
  );
  assert.equal(s.name, 'train');
  assert.equal(s.cpu, '3');
  assert.deepEqual(s.mounts, { data: '/mnt/data' });
  assert.equal(s.env, 'A=1');
});

test('typing in a field a preset sets makes the form Custom; other fields keep the preset', () => {
  for (const name of ['cpu', 'mem', 'gpuKind', 'gpu']) {
    assert.equal(launcherForm(INITIAL_FORM, { type: 'field', name, value: '2' }).preset, '', name);
  }
  for (const name of ['shmem', 'name', 'clusterSize']) {
    assert.equal(launcherForm(INITIAL_FORM, { type: 'field', name, value: '2' }).preset, 'small', name);
  }
});

test('a built-in preset sets CPU, memory and GPU and keeps the shared memory typed', () => {
  const typed = run(INITIAL_FORM, { type: 'field', name: 'shmem', value: '64m' });
  const s = launcherForm(typed, { type: 'preset', preset: PRESETS.find((p) => p.name === 'gpu') });
  assert.deepEqual(
    { preset: s.preset, cpu: s.cpu, mem: s.mem, gpuKind: s.gpuKind, gpu: s.gpu, shmem: s.shmem },
    { preset: 'gpu', cpu: '4', mem: '16g', gpuKind: 'cuda.device', gpu: '1', shmem: '64m' },
  );
  const back = launcherForm(s, { type: 'preset', preset: PRESETS[0] });
  assert.equal(back.gpuKind, '');
  assert.equal(back.gpu, '');
  assert.equal(launcherForm(s, { type: 'preset', preset: null }).preset, '');
});

test("a server preset's shared memory replaces the one typed", () => {
  const [p] = presetOptions([{ name: 'p', resource_slots: { cpu: '1', mem: '1073741824' } }], []);
  const typed = run(INITIAL_FORM, { type: 'field', name: 'shmem', value: '64m' });
  assert.equal(launcherForm(typed, { type: 'preset', preset: p }).shmem, '');
});

test('the default project is chosen once the projects load, else the first; a choice made stays', () => {
  const projects = [
    { value: 'a', label: 'a' },
    { value: 'default', label: 'default' },
  ];
  assert.equal(launcherForm(INITIAL_FORM, { type: 'projects', projects }).project, 'default');
  assert.equal(launcherForm(INITIAL_FORM, { type: 'projects', projects: [projects[0]] }).project, 'a');
  const chosen = run(INITIAL_FORM, { type: 'field', name: 'project', value: 'a' });
  assert.equal(launcherForm(chosen, { type: 'projects', projects }).project, 'a');
  assert.equal(launcherForm(INITIAL_FORM, { type: 'projects', projects: [] }).project, '');
});

test('a chosen resource group not allowed to the project is dropped', () => {
  const s = run(INITIAL_FORM, { type: 'field', name: 'group', value: 'gpu' });
  assert.equal(launcherForm(s, { type: 'groups', allowed: ['cpu'] }).group, '');
  assert.equal(launcherForm(s, { type: 'groups', allowed: ['cpu', 'gpu'] }).group, 'gpu');
  assert.equal(launcherForm(s, { type: 'groups', allowed: null }).group, 'gpu');
});

test('a folder unticked loses its mount path; ticked again it starts from the default', () => {
  const s = run(
    INITIAL_FORM,
    { type: 'mount', name: 'data', on: true },
    { type: 'mountPath', name: 'data', path: '/x' },
    { type: 'mount', name: 'data', on: false },
  );
  assert.deepEqual(s.mounts, {});
  assert.deepEqual(launcherForm(s, { type: 'mount', name: 'data', on: true }).mounts, { data: '' });
  assert.deepEqual(INITIAL_FORM.mounts, {});
});

test('an unknown action is an error, not a silent no-op', () => {
  assert.throws(() => launcherForm(INITIAL_FORM, { type: 'nope' }), /unknown action nope/);
});

test('the GPU preset is offered only where the cluster has cuda slots', () => {
  assert.deepEqual(gpuKinds({ cpu: 'count', mem: 'bytes', 'cuda.shares': 'count' }), ['cuda.shares']);
  assert.deepEqual(gpuKinds(undefined), []);
  assert.ok(!presetOptions(null, []).some((p) => p.name === 'gpu'));
  assert.ok(presetOptions(null, ['cuda.device']).some((p) => p.name === 'gpu'));
});

test("the server's presets become form values with a label", () => {
  const list = presetOptions(
    [
      {
        name: 'big',
        resource_slots: { cpu: '8', mem: '34359738368', 'cuda.device': '2' },
        shared_memory: '67108864',
        allocatable: false,
      },
    ],
    [],
  );
  assert.deepEqual(list, [
    {
      name: 'big',
      cpu: '8',
      mem: '32g',
      shmem: '64m',
      gpuKind: 'cuda.device',
      gpu: '2',
      allocatable: false,
      label: 'big (CPU 8 · Memory 32 GiB · GPU 2) – not available now',
    },
  ]);
});
