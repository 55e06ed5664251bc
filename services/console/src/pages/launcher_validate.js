// The launcher's checks, as plain functions of the form (launcher_form.js)
// and what the launcher loaded: what the session asks for, the warnings shown
// while the form is filled in (they do not block the launch), and the
// POST /session body or the first thing wrong with the form (docs/console.md,
// "Launcher"). No DOM, no requests: test/launcher_validate.test.js.
import { slotsToNumbers } from '../resources.js';
import { fmtSlot, parseBytes, slotLabel } from '../ui.js';

// "3" -> 3; 0 when it is no number of kernels from 1 to 64.
export function clusterSize(text) {
  const t = String(text ?? '').trim();
  if (!/^[0-9]{1,2}$/.test(t)) return 0;
  const n = Number(t);
  return n >= 1 && n <= 64 ? n : 0;
}

// "NAME=value" lines (blank lines and # comments skipped) -> {NAME: value};
// throws on a line without a name before "=".
export function parseEnv(text) {
  const env = {};
  for (const raw of String(text ?? '').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const i = line.indexOf('=');
    if (i <= 0) throw new Error(`Environment line “${line}” is not NAME=value`);
    env[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return env;
}

// The session's total: per kernel x the cluster size ({slot: number}; NaN
// where a field is no amount).
export function requestedSlots(form) {
  const kernels = clusterSize(form.clusterSize) || 1;
  const r = { cpu: Number(form.cpu) * kernels, mem: parseBytes(form.mem) * kernels };
  if (form.gpuKind && form.gpu) r[form.gpuKind] = Number(form.gpu) * kernels;
  return r;
}

// What may still be requested: check-presets' remaining (the group's, else the
// keypair's), else what the keypair policy leaves; undefined when unknown.
export function slotsLeft(checked, choices) {
  const r = checked && (checked.scaling_group_remaining || checked.keypair_remaining);
  if (r) return slotsToNumbers(r);
  return (choices && choices.left) || undefined;
}

// The warnings for the form: more than is left, more kernels than the policy
// allows, the concurrent sessions used up, less than the image needs, more
// than the chosen group has free. choices: what loadChoices() returned;
// checked: the check-presets answer or null.
export function launchWarnings(form, choices, checked) {
  const problems = [];
  if (!choices) return problems;
  const requested = requestedSlots(form);
  const kernels = clusterSize(form.clusterSize) || 1;
  const left = slotsLeft(checked, choices);
  if (left) {
    for (const [k, v] of Object.entries(requested)) {
      if (Number.isFinite(v) && left[k] !== undefined && v > left[k])
        problems.push(
          `${slotLabel(k)}: ${fmtSlot(k, v)} asked, ${fmtSlot(k, left[k])} left${checked ? '' : ' under your policy'}`,
        );
    }
  }
  const policy = choices.policy;
  const maxC = policy && policy.max_containers_per_session;
  if (maxC && kernels > maxC) problems.push(`Your policy allows ${maxC} kernel${maxC === 1 ? '' : 's'} per session.`);
  if (policy && policy.max_concurrent_sessions != null && choices.liveCount >= policy.max_concurrent_sessions)
    problems.push(
      `You already run ${choices.liveCount} of ${policy.max_concurrent_sessions} sessions: this one will wait.`,
    );
  const img = choices.imageList && choices.imageList.find((i) => i.ref === form.image);
  if (img) {
    for (const [k, v] of Object.entries(img.min)) {
      if (requested[k] !== undefined && Number.isFinite(requested[k]) && requested[k] < Number(v))
        problems.push(`The image needs at least ${fmtSlot(k, v)} of ${slotLabel(k)}`);
    }
  }
  const g = choices.groups && form.group && choices.groups.find((x) => x.name === form.group);
  if (g && g.agentCount) {
    for (const [k, v] of Object.entries(requested)) {
      if (Number.isFinite(v) && g.free[k] !== undefined && v > g.free[k])
        problems.push(`${slotLabel(k)}: only ${fmtSlot(k, g.free[k])} free in ${g.name} now (the session will wait)`);
    }
  }
  return problems;
}

const randomName = () => 's-' + Math.random().toString(36).slice(2, 8);

// The form -> {body} for POST /session (enqueueOnly), or {error} with the
// first thing wrong, in the order the form reads. needProject: the user has
// projects, so one must be chosen; makeName: the name of an unnamed session.
export function launchRequest(form, { needProject = false, makeName = randomName } = {}) {
  if (!form.image.trim()) return { error: 'Choose an image.' };
  if (needProject && !form.project) return { error: 'Choose a project.' };
  if (form.name && !/^[A-Za-z0-9_.-]{1,64}$/.test(form.name))
    return { error: 'A name is 1 to 64 letters, digits, “_”, “-” or “.”.' };
  if (!(Number(form.cpu) > 0)) return { error: 'CPU must be a positive number.' };
  if (!(parseBytes(form.mem) > 0)) return { error: 'Memory must be an amount such as 512m or 4g.' };
  const size = clusterSize(form.clusterSize);
  if (!size) return { error: 'The cluster size is a number of kernels from 1 to 64.' };
  const resources = { cpu: form.cpu.trim(), mem: form.mem.trim() };
  if (form.gpuKind && form.gpu) resources[form.gpuKind] = form.gpu.trim();
  const config = { resources };
  if (form.group) config.scaling_group = form.group;
  if (form.shmem.trim()) config.resource_opts = { shmem: form.shmem.trim() };
  let env;
  try {
    env = parseEnv(form.env);
  } catch (e) {
    return { error: e.message };
  }
  if (Object.keys(env).length) config.environ = env;
  const mounts = form.mounts || {};
  const names = Object.keys(mounts);
  if (names.length) {
    config.mounts = names;
    const map = {};
    for (const n of names) if (mounts[n].trim()) map[n] = mounts[n].trim();
    if (Object.keys(map).length) config.mount_map = map;
  }
  const ports = form.ports
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
  if (ports.some((p) => !Number.isInteger(p) || p < 1024 || p > 65535))
    return { error: 'Extra ports are numbers from 1024 to 65535.' };
  if (ports.length) config.preopen_ports = ports;
  const body = { image: form.image.trim(), type: form.type, enqueueOnly: true, config };
  if (size > 1) {
    body.cluster_size = size;
    body.cluster_mode = form.clusterMode;
  }
  body.name = form.name.trim() || makeName();
  if (form.project) body.group_name = form.project;
  if (form.type === 'batch') {
    if (!form.startup.trim()) return { error: 'A batch session needs a startup command.' };
    body.startupCommand = form.startup;
    if (form.startsAt.trim()) body.starts_at = form.startsAt.trim();
  }
  return { body };
}
