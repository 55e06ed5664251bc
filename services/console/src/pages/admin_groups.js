// Admin · Resource groups: each group's settings, its ALIVE agents and their
// capacity in use; superadmins create and edit (others read: the API lets
// only superadmins write).
import { useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { AdminTabs, Bar, isSuperadmin } from '../admin.js';
import { resourceGroups } from '../resources.js';
import { idleTimeoutFromForm } from '../limits_form.js';
import {
  html,
  ErrorBanner,
  Loading,
  Modal,
  Opt,
  confirmAction,
  errText,
  fmtBytes,
  fmtTime,
  slotLabel,
  toast,
  toastError,
  useData,
} from '../ui.js';

const TYPES = ['interactive', 'batch', 'inference'];

function GroupForm({ group, onClose, onSaved }) {
  const creating = !group;
  const [f, setF] = useState(() => ({
    name: group ? group.name : '',
    description: (group && group.description) || '',
    scheduler: group ? group.scheduler : 'fifo',
    agent_selector: group ? group.agent_selector : 'concentrated',
    types: new Set(group ? group.allowed_session_types || [] : ['interactive', 'batch']),
    pending_timeout: group ? String(group.pending_timeout ?? 0) : '0',
    idle_timeout: group ? String(group.idle_timeout ?? 0) : '0',
    idle_inference: group ? !!group.idle_inference : false,
    is_active: group ? !!group.is_active : true,
  }));
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    const t = Number(f.pending_timeout);
    if (!Number.isInteger(t) || t < 0) {
      setErr('The pending timeout is a whole number of seconds (0: none).');
      return;
    }
    let idle;
    try {
      idle = idleTimeoutFromForm(f.idle_timeout);
    } catch (x) {
      setErr(x.message);
      return;
    }
    if (!f.types.size) {
      setErr('Allow at least one session type.');
      return;
    }
    const body = {
      description: f.description,
      scheduler: f.scheduler,
      agent_selector: f.agent_selector,
      allowed_session_types: TYPES.filter((x) => f.types.has(x)),
      pending_timeout: t,
      idle_timeout: idle,
      idle_inference: f.idle_inference,
      is_active: f.is_active,
    };
    setBusy(true);
    try {
      if (creating) await post('/admin/resource-groups', { name: f.name.trim(), ...body });
      else await api('PATCH', '/admin/resource-groups/' + enc(group.name), { body });
      toast(`${creating ? 'Created' : 'Saved'} ${creating ? f.name.trim() : group.name}`);
      onSaved();
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Modal} title=${creating ? 'New resource group' : `Edit ${group.name}`} onClose=${onClose}>
    <form class="form" onSubmit=${submit} noValidate data-test="group-form">
      ${
        creating &&
        html`<div class="field"><label for="group-name">Name</label>
        <input id="group-name" value=${f.name} onInput=${set('name')} /></div>`
      }
      <div class="field"><label for="group-description">Description</label>
        <input id="group-description" value=${f.description} onInput=${set('description')} /></div>
      <div class="row2">
        <div class="field"><label for="group-scheduler">Scheduler</label>
          <select id="group-scheduler" value=${f.scheduler} onChange=${set('scheduler')}>${['fifo', 'lifo', 'drf'].map((v) => html`<${Opt} value=${v}>${v}<//>`)}</select></div>
        <div class="field"><label for="group-selector">Agent selector</label>
          <select id="group-selector" value=${f.agent_selector} onChange=${set('agent_selector')}>${['concentrated', 'dispersed', 'roundrobin'].map((v) => html`<${Opt} value=${v}>${v}<//>`)}</select></div>
      </div>
      <fieldset><legend>Session types</legend><div class="radios">${TYPES.map(
        (x) => html`<label><input type="checkbox" data-session-type=${x}
        checked=${f.types.has(x)} onChange=${() => {
          const s = new Set(f.types);
          s.has(x) ? s.delete(x) : s.add(x);
          setF({ ...f, types: s });
        }} /> ${x}</label>`,
      )}</div></fieldset>
      <div class="row2">
        <div class="field"><label for="group-timeout">Pending timeout (s, 0: none)</label>
          <input id="group-timeout" inputmode="numeric" value=${f.pending_timeout} onInput=${set('pending_timeout')} /></div>
        <div class="field"><label for="group-idle">Default idle timeout (s, 0: none)</label>
          <input id="group-idle" inputmode="numeric" value=${f.idle_timeout} onInput=${set('idle_timeout')} />
          <p class="hint">For sessions whose keypair policy leaves the idle timeout undefined (-1); running sessions follow a change.</p>
          <label class="inline"><input id="group-idle-inference" type="checkbox" checked=${f.idle_inference}
            onChange=${(e) => setF({ ...f, idle_inference: e.currentTarget.checked })} /> idle inference sessions are ended too</label></div>
      </div>
      <div class="row2">
        <div class="field"><span class="label">State</span><label class="inline"><input id="group-active" type="checkbox" checked=${f.is_active}
          onChange=${(e) => setF({ ...f, is_active: e.currentTarget.checked })} /> active</label></div>
      </div>
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="group-submit" disabled=${busy}>${busy ? 'Saving…' : creating ? 'Create' : 'Save'}</button></div>
    </form>
  <//>`;
}

// ---- resource-group access: which domains, projects and keypairs may use a group
const SCOPES = [
  ['domain', 'Domain'],
  ['project', 'Project'],
  ['keypair', 'Keypair'],
];
const items = (r) => (r && r.items) || [];

// The scopes an admin may name (the API scopes these lists to a domain
// admin's domain), with readable labels.
async function loadScopes() {
  const [domains, projects, keypairs, users] = await Promise.all([
    get('/admin/domains', { limit: 1000 }).then(items, () => []),
    get('/admin/projects', { limit: 1000 }).then(items, () => []),
    get('/admin/keypairs', { is_active: true, limit: 1000 }).then(items, () => []),
    get('/admin/users', { limit: 1000 }).then(items, () => []),
  ]);
  const email = Object.fromEntries(users.map((u) => [u.id, u.email]));
  return {
    domain: domains.map((d) => ({ id: d.name, label: d.name })),
    project: projects.map((p) => ({ id: p.id, label: `${p.name} (${p.domain_name})` })),
    keypair: keypairs.map((k) => ({
      id: k.access_key,
      label: `${k.access_key}${email[k.user_id] ? ' · ' + email[k.user_id] : ''}`,
    })),
  };
}

const scopeLabel = (a, scopes) => {
  const s = scopes && (scopes[a.scope_type] || []).find((x) => x.id === a.scope_id);
  return `${a.scope_type} ${s ? s.label : a.scope_id}`;
};

function AccessDialog({ group, rows, scopes, onClose, onChanged }) {
  const [type, setType] = useState('project');
  const [scope, setScope] = useState('');
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const choices = ((scopes.data && scopes.data[type]) || []).filter(
    (c) => !rows.some((a) => a.scope_type === type && a.scope_id === c.id),
  );
  const grant = async (e) => {
    e.preventDefault();
    setErr(null);
    if (!scope) {
      setErr(`Choose a ${type} first.`);
      return;
    }
    setBusy(true);
    try {
      await post('/admin/resource-group-access', { resource_group: group.name, scope_type: type, scope_id: scope });
      toast(`${group.name}: granted to ${scopeLabel({ scope_type: type, scope_id: scope }, scopes.data)}`);
      setScope('');
      onChanged();
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (a) => {
    const what = scopeLabel(a, scopes.data);
    if (
      !(await confirmAction({
        title: `Revoke ${what}?`,
        message: `New sessions of ${what} can no longer use ${group.name} (unless another grant allows them); running sessions keep running.`,
        confirmLabel: 'Revoke',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', '/admin/resource-group-access', {
        body: { resource_group: group.name, scope_type: a.scope_type, scope_id: a.scope_id },
      });
      toast(`${group.name}: ${what} revoked`);
      onChanged();
    } catch (x) {
      toastError(x);
    }
  };
  return html`<${Modal} title=${`Who may use ${group.name}`} onClose=${onClose} wide>
    <p class="muted small">A session may run in this group when its keypair, its user's domain or its project is granted here.</p>
    ${
      group.name === 'default' &&
      html`<p class="banner info" role="status"><span class="banner-text">While no grant names <code>default</code>, everyone may use it;
      once one does, only the scopes granted here may.</span></p>`
    }
    ${scopes.error && html`<${ErrorBanner} error=${scopes.error} />`}
    ${
      rows.length
        ? html`<div class="table-wrap"><table data-test="access-rows"><thead><tr><th scope="col">Scope</th><th scope="col">Who</th>
      <th scope="col">Domain</th><th scope="col">Granted</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${rows.map(
        (a) => html`<tr key=${a.scope_type + a.scope_id} data-access=${a.scope_type + ':' + a.scope_id}>
        <td>${a.scope_type}</td><th scope="row">${scopeLabel(a, scopes.data).slice(a.scope_type.length + 1)}</th>
        <td>${a.domain_name || '–'}</td><td class="small">${fmtTime(a.created_at)}</td>
        <td class="actions"><button type="button" class="btn small danger" data-test="revoke-access" onClick=${() => revoke(a)}>Revoke</button></td></tr>`,
      )}</tbody></table></div>`
        : html`<p class="empty">${group.name === 'default' ? 'No grant names it: everyone may use it.' : 'Nobody is granted this group yet.'}</p>`
    }
    <form class="form" onSubmit=${grant} noValidate>
      <div class="grant-row">
        <div class="field"><label for="access-scope-type">Grant to</label>
          <select id="access-scope-type" value=${type} onChange=${(e) => {
            setType(e.currentTarget.value);
            setScope('');
          }}>
            ${SCOPES.map(([v, l]) => html`<${Opt} value=${v}>${l}<//>`)}</select></div>
        <div class="field"><label for="access-scope">${SCOPES.find(([v]) => v === type)[1]}</label>
          <select id="access-scope" value=${scope} disabled=${!scopes.data} onChange=${(e) => setScope(e.currentTarget.value)}>
            <option value="">${scopes.data ? (choices.length ? `Choose a ${type}…` : `No ${type} left to grant`) : 'Loading…'}</option>
            ${choices.map((c) => html`<${Opt} value=${c.id}>${c.label}<//>`)}</select></div>
        <button type="submit" class="btn primary" data-test="grant-access" disabled=${busy || !scope}>${busy ? 'Granting…' : 'Grant'}</button>
      </div>
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Done</button></div>
    </form>
  <//>`;
}

export function AdminGroupsPage({ user }) {
  const { data, error, loading, reload } = useData(resourceGroups, [], { interval: 5000 });
  const access = useData(() => get('/admin/resource-group-access', { limit: 1000 }), []);
  const scopes = useData(loadScopes, []);
  const [editing, setEditing] = useState(null);
  const [granting, setGranting] = useState(null);
  const su = isSuperadmin(user);
  const rowsOf = (g) => items(access.data).filter((a) => a.resource_group === g.name);
  const openAccess = (g) => {
    scopes.reload(true);
    setGranting(g.name);
  };
  const groups = data || [];
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">${su && html`<button type="button" class="btn primary" data-test="create-group" onClick=${() => setEditing({})}>New resource group</button>`}</div></div>
    <${AdminTabs} current="groups" />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    <${ErrorBanner} error=${access.error} onRetry=${() => access.reload()} />
    ${loading && !data && html`<${Loading} label="Loading resource groups…" />`}
    ${data && !groups.length && html`<p class="empty">No resource groups.</p>`}
    <div class="grid">${groups.map(
      (g) => html`<section class="card" key=${g.name} data-group=${g.name}>
      <div class="toolbar spread"><h2>${g.name} <span class=${'badge ' + (g.is_active ? 'st-running' : 'st-terminated')}>${g.is_active ? 'active' : 'inactive'}</span></h2>
        <div class="toolbar"><button type="button" class="btn small" data-test="group-access" onClick=${() => openAccess(g)}>Access</button>
        ${su && html`<button type="button" class="btn small" data-test="edit-group" onClick=${() => setEditing({ group: g })}>Edit</button>`}</div></div>
      ${g.description && html`<p class="muted small">${g.description}</p>`}
      <dl class="info small"><dt>Scheduler</dt><dd>${g.scheduler} · ${g.agent_selector}</dd>
        <dt>Session types</dt><dd>${(g.allowed_session_types || []).join(', ') || '–'}</dd>
        <dt>Pending timeout</dt><dd>${g.pending_timeout ? g.pending_timeout + ' s' : 'none'}</dd>
        <dt>Default idle timeout</dt><dd>${g.idle_timeout ? g.idle_timeout + ' s' : 'none'}${g.idle_inference ? ' (inference sessions too)' : ''}</dd>
        <dt>Agents alive</dt><dd data-group-agents=${g.agentCount}>${g.agentCount}</dd>
        <dt>May use it</dt><dd data-group-access=${rowsOf(g).length}>${
          access.data
            ? rowsOf(g).length
              ? html`<ul class="access-list">${rowsOf(g).map(
                  (a) => html`<li key=${a.scope_type + a.scope_id}
          data-access=${a.scope_type + ':' + a.scope_id}>${scopeLabel(a, scopes.data)}</li>`,
                )}</ul>`
              : g.name === 'default'
                ? 'everyone (no grant names it)'
                : 'nobody granted'
            : '…'
        }</dd></dl>
      ${
        Object.keys(g.capacity).length > 0 &&
        html`<h3 class="sub">In use</h3>
        ${Object.keys(g.capacity)
          .filter((k) => k !== 'cuda.device' || !g.capacity['cuda.shares'])
          .map(
            (k) => html`<${Bar} key=${k} label=${slotLabel(k)} test=${k}
          used=${g.occupied[k] || 0} cap=${g.capacity[k]} fmt=${k === 'mem' ? fmtBytes : undefined} />`,
          )}`
      }
    </section>`,
    )}</div>
    ${
      granting &&
      html`<${AccessDialog} group=${groups.find((g) => g.name === granting) || { name: granting }} rows=${rowsOf({ name: granting })} scopes=${scopes}
      onClose=${() => setGranting(null)} onChanged=${() => access.reload(true)} />`
    }
    ${
      editing &&
      html`<${GroupForm} group=${editing.group} onClose=${() => setEditing(null)} onSaved=${() => {
        setEditing(null);
        reload(true);
      }} />`
    }
  </section>`;
}
