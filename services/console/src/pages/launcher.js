// The session launcher, a dialog: loads what may be chosen (images,
// projects, resource groups, presets, folders, limits), keeps the form in
// launcher_form.js's reducer, warns and builds the request with
// launcher_validate.js, then POST /session with enqueueOnly; the sessions
// page follows its progress.
import { useEffect, useReducer, useState } from 'preact/hooks';
import { enc, get, post } from '../api.js';
import {
  allowedGroups,
  checkPresets,
  keypairPolicy,
  liveSessions,
  remaining,
  resourceGroups,
  slotTypes,
  sumSlots,
} from '../resources.js';
import { Opt, html, ErrorBanner, Loading, Modal, errText, fmtSlots, useData } from '../ui.js';
import { INITIAL_FORM, gpuKinds, launcherForm, presetOptions } from './launcher_form.js';
import { clusterSize, launchRequest, launchWarnings, slotsLeft } from './launcher_validate.js';

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

export function Launcher({ user, onClose, onLaunched }) {
  const me = user || {};
  const { data: ch, error: loadError, loading } = useData(() => loadChoices(me), []);
  const [f, dispatch] = useReducer(launcherForm, INITIAL_FORM);
  useEffect(() => {
    if (ch) dispatch({ type: 'projects', projects: ch.projects });
  }, [ch]);
  const { data: cp } = useData(() => checkPresets(f.project, f.group).catch(() => null), [f.project, f.group]);
  // The groups allowed to this project too (resource-group access may grant one to the project).
  const { data: allowedHere } = useData(
    () => (f.project ? allowedGroups(f.project).catch(() => null) : Promise.resolve(null)),
    [f.project],
  );
  const allowed = allowedHere || (ch && ch.allowed);
  useEffect(() => {
    dispatch({ type: 'groups', allowed: allowedHere });
  }, [allowedHere]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const set = (name) => (e) => dispatch({ type: 'field', name, value: e.currentTarget.value });

  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    const { body, error: wrong } = launchRequest(f, { needProject: !!(ch && ch.projects.length) });
    if (wrong) {
      setError(wrong);
      return;
    }
    setBusy(true);
    try {
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
      <${EnvironmentFields} f=${f} ch=${ch} allowed=${allowed} set=${set} />
      <${ResourceFields} f=${f} ch=${ch} cp=${cp} set=${set} dispatch=${dispatch} />
      <${MountFields} ch=${ch} mounts=${f.mounts} dispatch=${dispatch} />
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

// Image, name, type (with the batch fields), project and resource group.
function EnvironmentFields({ f, ch, allowed, set }) {
  return html`<fieldset><legend>Environment</legend>
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
  </fieldset>`;
}

// Preset, CPU, memory, shared memory, cluster size and mode, GPU; what may
// still be requested and the warnings (launchWarnings).
function ResourceFields({ f, ch, cp, set, dispatch }) {
  const kinds = gpuKinds(ch && ch.slots);
  const serverPresets = (cp && cp.presets) || (ch && ch.apiPresets && ch.apiPresets.length ? ch.apiPresets : null);
  const presetList = presetOptions(serverPresets, kinds);
  const applyPreset = (e) =>
    dispatch({ type: 'preset', preset: presetList.find((x) => x.name === e.currentTarget.value) || null });
  const kernels = clusterSize(f.clusterSize) || 1;
  const left = slotsLeft(cp, ch);
  const problems = launchWarnings(f, ch, cp);
  return html`<fieldset><legend>Resources</legend>
    <div class="field"><label for="launch-preset">Preset</label>
      <select id="launch-preset" value=${presetList.some((p) => p.name === f.preset) ? f.preset : ''} onChange=${applyPreset}>
        <option value="">Custom</option>
        ${presetList.map((p) => html`<${Opt} value=${p.name}>${p.label}<//>`)}
      </select></div>
    <div class="row3">
      <div class="field"><label for="launch-cpu">CPU cores</label>
        <input id="launch-cpu" inputmode="decimal" value=${f.cpu} onInput=${set('cpu')} /></div>
      <div class="field"><label for="launch-mem">Memory</label>
        <input id="launch-mem" value=${f.mem} onInput=${set('mem')} placeholder="4g" /></div>
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
      kinds.length > 0 &&
      html`<div class="row2">
      <div class="field"><label for="launch-gpu-kind">GPU</label>
        <select id="launch-gpu-kind" value=${f.gpuKind} onChange=${set('gpuKind')}>
          <option value="">None</option>
          ${kinds.map((k) => html`<${Opt} value=${k}>${k === 'cuda.device' ? 'Whole GPUs (cuda.device)' : k === 'cuda.shares' ? 'GPU shares (cuda.shares)' : k}<//>`)}
        </select></div>
      ${
        f.gpuKind &&
        html`<div class="field"><label for="launch-gpu">Amount</label>
        <input id="launch-gpu" inputmode="decimal" value=${f.gpu} onInput=${set('gpu')} /></div>`
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
  </fieldset>`;
}

// The user's folders, each with a tick and, once ticked, its mount path.
function MountFields({ ch, mounts, dispatch }) {
  return html`<fieldset><legend>Folders to mount</legend>
    ${ch && ch.foldersError && html`<${ErrorBanner} error=${ch.foldersError} />`}
    ${ch && !ch.folders.length && html`<p class="muted small">No folders. Create them on the Data page.</p>`}
    ${
      ch &&
      ch.folders.length > 0 &&
      html`<ul class="mount-list">${ch.folders.map(
        (fo) => html`<li key=${fo.id}>
      <label><input type="checkbox" data-mount=${fo.name} checked=${fo.name in mounts}
        onChange=${(e) => dispatch({ type: 'mount', name: fo.name, on: e.currentTarget.checked })} />
        ${fo.name} <span class="muted small">${fo.permission}${fo.is_owner === false ? ', shared' : ''}</span></label>
      ${
        fo.name in mounts &&
        html`<input class="mount-path" aria-label=${'Mount path of ' + fo.name} data-mount-path=${fo.name}
        placeholder=${'/home/work/' + fo.name} value=${mounts[fo.name]}
        onInput=${(e) => dispatch({ type: 'mountPath', name: fo.name, path: e.currentTarget.value })} />`
      }
    </li>`,
      )}</ul>`
    }
  </fieldset>`;
}
