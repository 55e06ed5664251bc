// The launcher's form state: one object changed only through launcherForm(),
// a reducer (useReducer), so every change starts from the latest state and
// none is lost to a stale closure. Also the presets the form offers. No DOM,
// no requests: test/launcher_form.test.js runs it under Node.
import { bytesForInput, slotsToNumbers } from '../resources.js';
import { fmtSlots } from '../ui.js';

// The built-in presets, offered when the server lists none.
export const PRESETS = [
  { name: 'small', label: 'Small (1 CPU, 1 GiB)', cpu: '1', mem: '1g' },
  { name: 'medium', label: 'Medium (2 CPU, 4 GiB)', cpu: '2', mem: '4g' },
  { name: 'large', label: 'Large (4 CPU, 16 GiB)', cpu: '4', mem: '16g' },
  {
    name: 'gpu',
    label: 'GPU (4 CPU, 16 GiB, 1 GPU)',
    cpu: '4',
    mem: '16g',
    gpuKind: 'cuda.device',
    gpu: '1',
    gpuOnly: true,
  },
];

// Every field is text as typed; mounts is {folder name: mount path ('' = default)}.
export const INITIAL_FORM = {
  image: '',
  name: '',
  type: 'interactive',
  startup: '',
  startsAt: '',
  project: '',
  group: '',
  preset: 'small',
  cpu: '1',
  mem: '1g',
  gpuKind: '',
  gpu: '',
  shmem: '',
  env: '',
  ports: '',
  clusterSize: '1',
  clusterMode: 'single-node',
  mounts: {},
};

// The fields a preset sets: typing in one of them makes the form "Custom".
const PRESET_FIELDS = ['cpu', 'mem', 'gpuKind', 'gpu'];

// The accelerator slots the cluster has ("cuda.device", "cuda.shares"), [] when none.
export function gpuKinds(slots) {
  return Object.keys(slots || {}).filter((k) => k.startsWith('cuda.'));
}

// The presets to offer: the server's (check-presets' with "allocatable", else
// /resource/presets) as form values, else the built-in ones (the GPU one only
// where the cluster has cuda slots).
export function presetOptions(serverPresets, gpuKindList) {
  if (!serverPresets) return PRESETS.filter((p) => !p.gpuOnly || gpuKindList.length > 0);
  return serverPresets.map((p) => {
    const rs = p.resource_slots || {};
    const gk = Object.keys(rs).find((k) => k.startsWith('cuda.'));
    return {
      name: p.name,
      cpu: String(rs.cpu ?? ''),
      mem: bytesForInput(rs.mem),
      shmem: p.shared_memory ? bytesForInput(p.shared_memory) : '',
      gpuKind: gk || '',
      gpu: gk ? String(rs[gk]) : '',
      allocatable: p.allocatable,
      label: `${p.name} (${fmtSlots(slotsToNumbers(rs))})${p.allocatable === false ? ' – not available now' : ''}`,
    };
  });
}

// The form's reducer. Actions:
//   {type: 'field', name, value}   a field typed or chosen
//   {type: 'preset', preset}       a preset from presetOptions(), or null for Custom
//   {type: 'projects', projects}   the user's projects loaded: choose "default" (else
//                                  the first) unless one is chosen already
//   {type: 'groups', allowed}      the resource groups allowed now: a chosen group
//                                  not among them is dropped
//   {type: 'mount', name, on}      a folder ticked or unticked
//   {type: 'mountPath', name, path}
export function launcherForm(state, action) {
  switch (action.type) {
    case 'field': {
      const next = { ...state, [action.name]: action.value };
      if (PRESET_FIELDS.includes(action.name)) next.preset = '';
      return next;
    }
    case 'preset': {
      const p = action.preset;
      if (!p) return { ...state, preset: '' };
      return {
        ...state,
        preset: p.name,
        cpu: p.cpu,
        mem: p.mem,
        shmem: p.shmem ?? state.shmem,
        gpuKind: p.gpuKind || '',
        gpu: p.gpu || '',
      };
    }
    case 'projects': {
      if (state.project || !action.projects || !action.projects.length) return state;
      const d = action.projects.find((p) => p.value === 'default') || action.projects[0];
      return { ...state, project: d.value };
    }
    case 'groups':
      if (!action.allowed || !state.group || action.allowed.includes(state.group)) return state;
      return { ...state, group: '' };
    case 'mount': {
      const mounts = { ...state.mounts };
      if (action.on) mounts[action.name] = mounts[action.name] ?? '';
      else delete mounts[action.name];
      return { ...state, mounts };
    }
    case 'mountPath':
      return { ...state, mounts: { ...state.mounts, [action.name]: action.path } };
    default:
      throw new Error(`launcherForm: unknown action ${action.type}`);
  }
}
