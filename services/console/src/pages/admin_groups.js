// Admin · Resource groups: each group's settings, its ALIVE agents and their
// capacity in use; superadmins create and edit (others read: the API lets
// only superadmins write).
import { useState } from 'preact/hooks';
import { api, enc, post } from '../api.js';
import { AdminTabs, Bar, isSuperadmin } from '../admin.js';
import { resourceGroups } from '../resources.js';
import { html, ErrorBanner, Loading, Modal, Opt, errText, fmtBytes, slotLabel, toast, useData } from '../ui.js';

const TYPES = ['interactive', 'batch', 'inference'];

function GroupForm({ group, onClose, onSaved }) {
  const creating = !group;
  const [f, setF] = useState(() => ({
    name: group ? group.name : '', description: (group && group.description) || '',
    scheduler: group ? group.scheduler : 'fifo', agent_selector: group ? group.agent_selector : 'concentrated',
    types: new Set(group ? group.allowed_session_types || [] : ['interactive', 'batch']),
    pending_timeout: group ? String(group.pending_timeout ?? 0) : '0', is_active: group ? !!group.is_active : true,
  }));
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    const t = Number(f.pending_timeout);
    if (!Number.isInteger(t) || t < 0) { setErr('The pending timeout is a whole number of seconds (0: none).'); return; }
    if (!f.types.size) { setErr('Allow at least one session type.'); return; }
    const body = { description: f.description, scheduler: f.scheduler, agent_selector: f.agent_selector,
      allowed_session_types: TYPES.filter((x) => f.types.has(x)), pending_timeout: t, is_active: f.is_active };
    setBusy(true);
    try {
      if (creating) await post('/admin/resource-groups', { name: f.name.trim(), ...body });
      else await api('PATCH', '/admin/resource-groups/' + enc(group.name), { body });
      toast(`${creating ? 'Created' : 'Saved'} ${creating ? f.name.trim() : group.name}`);
      onSaved();
    } catch (x) { setErr(errText(x)); } finally { setBusy(false); }
  };
  return html`<${Modal} title=${creating ? 'New resource group' : `Edit ${group.name}`} onClose=${onClose}>
    <form class="form" onSubmit=${submit} noValidate data-test="group-form">
      ${creating && html`<div class="field"><label for="group-name">Name</label>
        <input id="group-name" value=${f.name} onInput=${set('name')} /></div>`}
      <div class="field"><label for="group-description">Description</label>
        <input id="group-description" value=${f.description} onInput=${set('description')} /></div>
      <div class="row2">
        <div class="field"><label for="group-scheduler">Scheduler</label>
          <select id="group-scheduler" value=${f.scheduler} onChange=${set('scheduler')}>${['fifo', 'lifo', 'drf'].map((v) => html`<${Opt} value=${v}>${v}<//>`)}</select></div>
        <div class="field"><label for="group-selector">Agent selector</label>
          <select id="group-selector" value=${f.agent_selector} onChange=${set('agent_selector')}>${['concentrated', 'dispersed', 'roundrobin'].map((v) => html`<${Opt} value=${v}>${v}<//>`)}</select></div>
      </div>
      <fieldset><legend>Session types</legend><div class="radios">${TYPES.map((x) => html`<label><input type="checkbox" data-session-type=${x}
        checked=${f.types.has(x)} onChange=${() => { const s = new Set(f.types); s.has(x) ? s.delete(x) : s.add(x); setF({ ...f, types: s }); }} /> ${x}</label>`)}</div></fieldset>
      <div class="row2">
        <div class="field"><label for="group-timeout">Pending timeout (s, 0: none)</label>
          <input id="group-timeout" inputmode="numeric" value=${f.pending_timeout} onInput=${set('pending_timeout')} /></div>
        <div class="field"><span class="label">State</span><label class="inline"><input id="group-active" type="checkbox" checked=${f.is_active}
          onChange=${(e) => setF({ ...f, is_active: e.currentTarget.checked })} /> active</label></div>
      </div>
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="group-submit" disabled=${busy}>${busy ? 'Saving…' : creating ? 'Create' : 'Save'}</button></div>
    </form>
  <//>`;
}

export function AdminGroupsPage({ user }) {
  const { data, error, loading, reload } = useData(resourceGroups, [], { interval: 5000 });
  const [editing, setEditing] = useState(null);
  const su = isSuperadmin(user);
  const groups = data || [];
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">${su && html`<button type="button" class="btn primary" data-test="create-group" onClick=${() => setEditing({})}>New resource group</button>`}</div></div>
    <${AdminTabs} current="groups" />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading resource groups…" />`}
    ${data && !groups.length && html`<p class="empty">No resource groups.</p>`}
    <div class="grid">${groups.map((g) => html`<section class="card" key=${g.name} data-group=${g.name}>
      <div class="toolbar spread"><h2>${g.name} <span class=${'badge ' + (g.is_active ? 'st-running' : 'st-terminated')}>${g.is_active ? 'active' : 'inactive'}</span></h2>
        ${su && html`<button type="button" class="btn small" data-test="edit-group" onClick=${() => setEditing({ group: g })}>Edit</button>`}</div>
      ${g.description && html`<p class="muted small">${g.description}</p>`}
      <dl class="info small"><dt>Scheduler</dt><dd>${g.scheduler} · ${g.agent_selector}</dd>
        <dt>Session types</dt><dd>${(g.allowed_session_types || []).join(', ') || '–'}</dd>
        <dt>Pending timeout</dt><dd>${g.pending_timeout ? g.pending_timeout + ' s' : 'none'}</dd>
        <dt>Agents alive</dt><dd data-group-agents=${g.agentCount}>${g.agentCount}</dd></dl>
      ${Object.keys(g.capacity).length > 0 && html`<h3 class="sub">In use</h3>
        ${Object.keys(g.capacity).filter((k) => k !== 'cuda.device' || !g.capacity['cuda.shares']).map((k) => html`<${Bar} key=${k} label=${slotLabel(k)} test=${k}
          used=${g.occupied[k] || 0} cap=${g.capacity[k]} fmt=${k === 'mem' ? fmtBytes : undefined} />`)}`}
    </section>`)}</div>
    ${editing && html`<${GroupForm} group=${editing.group} onClose=${() => setEditing(null)} onSaved=${() => { setEditing(null); reload(true); }} />`}
  </section>`;
}
