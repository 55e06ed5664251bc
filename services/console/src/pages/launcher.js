// The session launcher: POST /session with enqueueOnly, then the sessions
// page follows its progress.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { enc, get, post } from '../api.js';
import {
  allowedGroups,
  bytesForInput,
  checkPresets,
  keypairPolicy,
  liveSessions,
  remaining,
  resourceGroups,
  slotTypes,
  slotsToNumbers,
  sumSlots,
} from '../resources.js';
import {
  Opt,
  html,
  ErrorBanner,
  Loading,
  Modal,
  errText,
  fmtSlot,
  fmtSlots,
  parseBytes,
  slotLabel,
  useData,
} from '../ui.js';

const PRESETS = [
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

const tryGet = (p) =>
  p.then(
    (data) => ({ data }),
    (error) => ({ error }),
  );

async function loadChoices(user) {
  const [images, recent, me, groups, slots, folders, pol, live, allowed, apiPresets] = await Promise.all([
    tryGet(get('/admin/images', { limit: 1000 })),
    tryGet(get('/session', { limit: 50 })),
    tryGet(user.user_id ? get('/admin/users/' + enc(user.user_id)) : Promise.reject(new Error('no user id'))),
    tryGet(resourceGroups()),
    slotTypes(),
    tryGet(get('/folders')),
    keypairPolicy(user),
    tryGet(liveSessions()),
    tryGet(allowedGroups()),
    tryGet(get('/resource/presets')),
  ]);
  const imageList = images.data
    ? (images.data.items || []).map((i) => ({ ref: i.reference, min: i.min_slots || {} }))
    : null;
  const recentImages = [...new Set(((recent.data && recent.data.items) || []).map((s) => s.image).filter(Boolean))];
  // The user's projects: ids from its user record; names from the projects
  // list (users see the projects they belong to), else from past sessions.
  const known = {};
  for (const s of (recent.data && recent.data.items) || [])
    if (s.groupId && s.groupName) known[s.groupId] = s.groupName;
  const mine = await tryGet(get('/admin/projects', { limit: 1000 }));
  for (const p of (mine.data && mine.data.items) || []) known[p.id] = p.name;
  const projects = ((me.data && me.data.projects) || []).map((p) => {
    if (p && typeof p === 'object') return { value: p.name || p.id, label: p.name || p.id };
    if (known[p]) return { value: known[p], label: known[p] };
    return { value: p, label: `project ${String(p).slice(0, 8)}` };
  });
  const used = live.data ? sumSlots(live.data) : {};
  return {
    imageList,
    recentImages,
    projects,
    projectsKnown: !!me.data,
    groups: groups.data ? groups.data.filter((g) => g.is_active !== false) : null,
    allowed: allowed.data || null,
    apiPresets: apiPresets.data ? apiPresets.data.resource_presets || apiPresets.data.presets || [] : null,
    slots,
    folders: folders.data ? folders.data.filter((f) => !f.status || f.status === 'ready') : [],
    foldersError: folders.error,
    policy: pol.policy,
    policyName: pol.name,
    used,
    left: pol.policy ? remaining(pol.policy, used) : null,
    liveCount: live.data ? live.data.length : null,
  };
}

// "3" -> 3; 0 when it is no number of kernels from 1 to 64.
export function clusterSize(text) {
  const t = String(text ?? '').trim();
  if (!/^[0-9]{1,2}$/.test(t)) return 0;
  const n = Number(t);
  return n >= 1 && n <= 64 ? n : 0;
}

function parseEnv(text) {
  const env = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const i = line.indexOf('=');
    if (i <= 0) throw new Error(`Environment line “${line}” is not NAME=value`);
    env[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return env;
}

export function Launcher({ user, onClose, onLaunched }) {
  const me = user || {};
  const { data: ch, error: loadError, loading } = useData(() => loadChoices(me), []);
  const [f, setF] = useState({
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
  });
  useEffect(() => {
    if (ch && ch.projects.length && !f.project) {
      const d = ch.projects.find((p) => p.value === 'default') || ch.projects[0];
      setF((x) => ({ ...x, project: d.value }));
    }
  }, [ch]);
  const { data: cp } = useData(() => checkPresets(f.project, f.group).catch(() => null), [f.project, f.group]);
  // The groups allowed to this project too (resource-group access may grant one to the project).
  const { data: allowedHere } = useData(
    () => (f.project ? allowedGroups(f.project).catch(() => null) : Promise.resolve(null)),
    [f.project],
  );
  const allowed = allowedHere || (ch && ch.allowed);
  useEffect(() => {
    if (allowedHere && f.group && !allowedHere.includes(f.group)) setF((x) => ({ ...x, group: '' }));
  }, [allowedHere]);
  const [mounts, setMounts] = useState({}); // name -> mount path ('' = default)
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const set = (k) => (e) =>
    setF({ ...f, [k]: e.currentTarget.type === 'checkbox' ? e.currentTarget.checked : e.currentTarget.value });
  const hasCuda = ch && ch.slots && Object.keys(ch.slots).filter((k) => k.startsWith('cuda.'));

  // Presets: check-presets' (with "allocatable"), else /resource/presets, else built-in ones.
  const presets = (cp && cp.presets) || (ch && ch.apiPresets && ch.apiPresets.length ? ch.apiPresets : null);
  const presetList = presets
    ? presets.map((p) => {
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
      })
    : PRESETS.filter((p) => !p.gpuOnly || (hasCuda && hasCuda.length));
  const applyPreset = (e) => {
    const p = presetList.find((x) => x.name === e.currentTarget.value);
    if (!p) {
      setF({ ...f, preset: '' });
      return;
    }
    setF({
      ...f,
      preset: p.name,
      cpu: p.cpu,
      mem: p.mem,
      shmem: p.shmem ?? f.shmem,
      gpuKind: p.gpuKind || '',
      gpu: p.gpu || '',
    });
  };

  // The session's total: per kernel x the cluster size.
  const kernels = clusterSize(f.clusterSize) || 1;
  const requested = useMemo(() => {
    const r = { cpu: Number(f.cpu) * kernels, mem: parseBytes(f.mem) * kernels };
    if (f.gpuKind && f.gpu) r[f.gpuKind] = Number(f.gpu) * kernels;
    return r;
  }, [f.cpu, f.mem, f.gpuKind, f.gpu, kernels]);

  const problems = [];
  const left =
    cp && (cp.scaling_group_remaining || cp.keypair_remaining)
      ? slotsToNumbers(cp.scaling_group_remaining || cp.keypair_remaining)
      : ch && ch.left;
  if (ch) {
    if (left)
      for (const [k, v] of Object.entries(requested)) {
        if (Number.isFinite(v) && left[k] !== undefined && v > left[k])
          problems.push(
            `${slotLabel(k)}: ${fmtSlot(k, v)} asked, ${fmtSlot(k, left[k])} left${cp ? '' : ' under your policy'}`,
          );
      }
    const maxC = ch.policy && ch.policy.max_containers_per_session;
    if (maxC && kernels > maxC) problems.push(`Your policy allows ${maxC} kernel${maxC === 1 ? '' : 's'} per session.`);
    if (ch.policy && ch.policy.max_concurrent_sessions != null && ch.liveCount >= ch.policy.max_concurrent_sessions)
      problems.push(
        `You already run ${ch.liveCount} of ${ch.policy.max_concurrent_sessions} sessions: this one will wait.`,
      );
    const img = ch.imageList && ch.imageList.find((i) => i.ref === f.image);
    if (img)
      for (const [k, v] of Object.entries(img.min)) {
        if (requested[k] !== undefined && Number.isFinite(requested[k]) && requested[k] < Number(v))
          problems.push(`The image needs at least ${fmtSlot(k, v)} of ${slotLabel(k)}`);
      }
    if (ch.groups && f.group) {
      const g = ch.groups.find((x) => x.name === f.group);
      if (g && g.agentCount)
        for (const [k, v] of Object.entries(requested)) {
          if (Number.isFinite(v) && g.free[k] !== undefined && v > g.free[k])
            problems.push(
              `${slotLabel(k)}: only ${fmtSlot(k, g.free[k])} free in ${g.name} now (the session will wait)`,
            );
        }
    }
  }

  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    try {
      if (!f.image.trim()) throw new Error('Choose an image.');
      if (ch && ch.projects.length && !f.project) throw new Error('Choose a project.');
      if (f.name && !/^[A-Za-z0-9_.-]{1,64}$/.test(f.name))
        throw new Error('A name is 1 to 64 letters, digits, “_”, “-” or “.”.');
      if (!(Number(f.cpu) > 0)) throw new Error('CPU must be a positive number.');
      if (!(parseBytes(f.mem) > 0)) throw new Error('Memory must be an amount such as 512m or 4g.');
      const size = clusterSize(f.clusterSize);
      if (!size) throw new Error('The cluster size is a number of kernels from 1 to 64.');
      const resources = { cpu: f.cpu.trim(), mem: f.mem.trim() };
      if (f.gpuKind && f.gpu) resources[f.gpuKind] = f.gpu.trim();
      const config = { resources };
      if (f.group) config.scaling_group = f.group;
      if (f.shmem.trim()) config.resource_opts = { shmem: f.shmem.trim() };
      const env = parseEnv(f.env);
      if (Object.keys(env).length) config.environ = env;
      const names = Object.keys(mounts);
      if (names.length) {
        config.mounts = names;
        const map = {};
        for (const n of names) if (mounts[n].trim()) map[n] = mounts[n].trim();
        if (Object.keys(map).length) config.mount_map = map;
      }
      const ports = f.ports
        .split(/[\s,]+/)
        .filter(Boolean)
        .map(Number);
      if (ports.some((p) => !Number.isInteger(p) || p < 1024 || p > 65535))
        throw new Error('Extra ports are numbers from 1024 to 65535.');
      if (ports.length) config.preopen_ports = ports;
      const body = { image: f.image.trim(), type: f.type, enqueueOnly: true, config };
      if (size > 1) {
        body.cluster_size = size;
        body.cluster_mode = f.clusterMode;
      }
      body.name = f.name.trim() || 's-' + Math.random().toString(36).slice(2, 8);
      if (f.project) body.group_name = f.project;
      if (f.type === 'batch') {
        if (!f.startup.trim()) throw new Error('A batch session needs a startup command.');
        body.startupCommand = f.startup;
        if (f.startsAt.trim()) body.starts_at = f.startsAt.trim();
      }
      setBusy(true);
      const r = await post('/session', body);
      onLaunched((r && r.sessionName) || body.name);
    } catch (err) {
      const p = err.problem || {};
      setError(p.vfolder ? `${errText(err)} (folder ${p.vfolder})` : errText(err));
    } finally {
      setBusy(false);
    }
  };

  return html`<${Modal} title="Start a session" onClose=${onClose} wide>
    ${loading && html`<${Loading} label="Loading images, folders and limits…" />`}
    <${ErrorBanner} error=${loadError} />
    <form class="form launcher" onSubmit=${submit} noValidate>
      <fieldset><legend>Environment</legend>
        <div class="field"><label for="launch-image">Image</label>
          ${
            !ch || (ch.imageList && ch.imageList.length)
              ? html`<select id="launch-image" value=${f.image} onChange=${set('image')} required disabled=${!ch}>
                <option value="">${ch ? 'Choose an image…' : 'Loading images…'}</option>
                ${ch && ch.imageList.map((i) => html`<${Opt} value=${i.ref}>${i.ref}<//>`)}
              </select>`
              : html`<input id="launch-image" list="launch-image-list" value=${f.image} onInput=${set('image')} required
                placeholder="e.g. python:3.12" autocapitalize="off" spellcheck="false" />
              <datalist id="launch-image-list">${(ch ? ch.recentImages : []).map((i) => html`<option value=${i} />`)}</datalist>
              <p class="hint">Type an image reference${ch && ch.recentImages.length ? '; recent ones are suggested' : ''}.</p>`
          }
        </div>
        <div class="field"><label for="launch-name">Session name <span class="muted">(optional)</span></label>
          <input id="launch-name" value=${f.name} onInput=${set('name')} placeholder="made up when empty" autocapitalize="off" spellcheck="false" /></div>
        <div class="field"><span class="label" id="launch-type-label">Type</span>
          <div class="radios" role="radiogroup" aria-labelledby="launch-type-label">
            <label><input type="radio" name="launch-type" id="launch-type-interactive" value="interactive" checked=${f.type === 'interactive'} onChange=${set('type')} /> Interactive</label>
            <label><input type="radio" name="launch-type" id="launch-type-batch" value="batch" checked=${f.type === 'batch'} onChange=${set('type')} /> Batch</label>
          </div></div>
        ${
          f.type === 'batch' &&
          html`
          <div class="field"><label for="launch-startup">Startup command</label>
            <textarea id="launch-startup" rows="2" value=${f.startup} onInput=${set('startup')} placeholder="python train.py"></textarea></div>
          <div class="field"><label for="launch-starts-at">Start at <span class="muted">(optional: ISO time or a delay such as 30s)</span></label>
            <input id="launch-starts-at" value=${f.startsAt} onInput=${set('startsAt')} placeholder="2026-01-02T03:04:05Z or 10m" /></div>`
        }
        <div class="row2">
          <div class="field"><label for="launch-project">Project</label>
            ${
              ch && ch.projects.length
                ? html`<select id="launch-project" value=${f.project} onChange=${set('project')}>
                  ${!ch.projects.some((p) => p.value === 'default') && !f.project && html`<option value="">Choose a project…</option>`}
                  ${ch.projects.map((p) => html`<${Opt} value=${p.value}>${p.label}<//>`)}</select>`
                : html`<input id="launch-project" value=${f.project} onInput=${set('project')} placeholder="default" />`
            }
            ${
              ch &&
              ch.projectsKnown &&
              !ch.projects.length &&
              html`<p class="hint warn">You are not a member of any project, so a launch in the
              default project is refused: ask an administrator to add you to one.</p>`
            }</div>
          <div class="field"><label for="launch-group">Resource group</label>
            ${
              ch && allowed && allowed.length
                ? html`<select id="launch-group" value=${f.group} onChange=${set('group')}><option value="">Default</option>
                  ${allowed.map((g) => html`<${Opt} value=${g}>${g}<//>`)}</select>`
                : ch && ch.groups && ch.groups.length
                  ? html`<select id="launch-group" value=${f.group} onChange=${set('group')}><option value="">Default</option>
                  ${ch.groups.map((g) => html`<${Opt} value=${g.name}>${g.name}${g.agentCount ? ` (free: ${fmtSlots(g.free)})` : ''}<//>`)}</select>`
                  : html`<input id="launch-group" value=${f.group} onInput=${set('group')} placeholder="default" />`
            }</div>
        </div>
      </fieldset>
      <fieldset><legend>Resources</legend>
        <div class="field"><label for="launch-preset">Preset</label>
          <select id="launch-preset" value=${presetList.some((p) => p.name === f.preset) ? f.preset : ''} onChange=${applyPreset}>
            <option value="">Custom</option>
            ${presetList.map((p) => html`<${Opt} value=${p.name}>${p.label}<//>`)}
          </select></div>
        <div class="row3">
          <div class="field"><label for="launch-cpu">CPU cores</label>
            <input id="launch-cpu" inputmode="decimal" value=${f.cpu} onInput=${(e) => setF({ ...f, cpu: e.currentTarget.value, preset: '' })} /></div>
          <div class="field"><label for="launch-mem">Memory</label>
            <input id="launch-mem" value=${f.mem} onInput=${(e) => setF({ ...f, mem: e.currentTarget.value, preset: '' })} placeholder="4g" /></div>
          <div class="field"><label for="launch-shmem">Shared memory <span class="muted">(optional)</span></label>
            <input id="launch-shmem" value=${f.shmem} onInput=${set('shmem')} placeholder="64m" /></div>
        </div>
        <div class="row2">
          <div class="field"><label for="launch-cluster-size">Kernels <span class="muted">(cluster size)</span></label>
            <input id="launch-cluster-size" inputmode="numeric" value=${f.clusterSize} onInput=${set('clusterSize')} /></div>
          <div class="field"><label for="launch-cluster-mode">Cluster mode</label>
            <select id="launch-cluster-mode" value=${f.clusterMode} onChange=${set('clusterMode')} disabled=${kernels < 2}>
              <option value="single-node">Single node (every kernel on one node)</option>
              <option value="multi-node">Multi node (kernels on several nodes)</option>
            </select></div>
        </div>
        ${kernels > 1 && html`<p class="hint" data-test="launch-cluster-hint">${kernels} kernels, main1, sub1${kernels > 2 ? ' … sub' + (kernels - 1) : ''}, each with the resources below, reaching each other by name.</p>`}
        ${
          hasCuda &&
          hasCuda.length > 0 &&
          html`<div class="row2">
          <div class="field"><label for="launch-gpu-kind">GPU</label>
            <select id="launch-gpu-kind" value=${f.gpuKind} onChange=${(e) => setF({ ...f, gpuKind: e.currentTarget.value, preset: '' })}>
              <option value="">None</option>
              ${hasCuda.map((k) => html`<${Opt} value=${k}>${k === 'cuda.device' ? 'Whole GPUs (cuda.device)' : k === 'cuda.shares' ? 'GPU shares (cuda.shares)' : k}<//>`)}
            </select></div>
          ${
            f.gpuKind &&
            html`<div class="field"><label for="launch-gpu">Amount</label>
            <input id="launch-gpu" inputmode="decimal" value=${f.gpu} onInput=${(e) => setF({ ...f, gpu: e.currentTarget.value, preset: '' })} /></div>`
          }
        </div>`
        }
        ${
          ch &&
          html`<div class="check-box" aria-live="polite">
          ${
            cp && left
              ? html`<p class="small" data-test="launch-remaining">You may still request${f.group ? ` in ${f.group}` : ''}: ${fmtSlots(left)}.</p>`
              : ch.left
                ? html`<p class="small">Still available under your policy${ch.policyName ? ` “${ch.policyName}”` : ''}: ${Object.keys(ch.left).length ? fmtSlots(ch.left) : 'no slot limits'}.</p>`
                : html`<p class="small muted">Your limits are not visible to your role; in use now: ${Object.keys(ch.used).length ? fmtSlots(ch.used) : 'nothing'}.</p>`
          }
          ${problems.map((p) => html`<p class="small warn">⚠ ${p}</p>`)}
        </div>`
        }
      </fieldset>
      <fieldset><legend>Folders to mount</legend>
        ${ch && ch.foldersError && html`<${ErrorBanner} error=${ch.foldersError} />`}
        ${ch && !ch.folders.length && html`<p class="muted small">No folders. Create them on the Data page.</p>`}
        ${
          ch &&
          ch.folders.length > 0 &&
          html`<ul class="mount-list">${ch.folders.map(
            (fo) => html`<li key=${fo.id}>
          <label><input type="checkbox" data-mount=${fo.name} checked=${fo.name in mounts}
            onChange=${(e) => {
              const m = { ...mounts };
              if (e.currentTarget.checked) m[fo.name] = '';
              else delete m[fo.name];
              setMounts(m);
            }} />
            ${fo.name} <span class="muted small">${fo.permission}${fo.is_owner === false ? ', shared' : ''}</span></label>
          ${
            fo.name in mounts &&
            html`<input class="mount-path" aria-label=${'Mount path of ' + fo.name} data-mount-path=${fo.name}
            placeholder=${'/home/work/' + fo.name} value=${mounts[fo.name]} onInput=${(e) => setMounts({ ...mounts, [fo.name]: e.currentTarget.value })} />`
          }
        </li>`,
          )}</ul>`
        }
      </fieldset>
      <details><summary>Environment variables and ports</summary>
        <div class="field"><label for="launch-env">Environment variables <span class="muted">(NAME=value, one a line)</span></label>
          <textarea id="launch-env" rows="3" value=${f.env} onInput=${set('env')} spellcheck="false"></textarea></div>
        <div class="field"><label for="launch-ports">Extra ports to open <span class="muted">(1024–65535, comma-separated)</span></label>
          <input id="launch-ports" value=${f.ports} onInput=${set('ports')} placeholder="8080, 6006" /></div>
      </details>
      ${error && html`<p class="banner error" role="alert">${error}</p>`}
      <div class="form-actions">
        <button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="launch-submit" disabled=${busy}>${busy ? 'Starting…' : 'Start'}</button>
      </div>
    </form>
  <//>`;
}
