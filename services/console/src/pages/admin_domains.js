// Admin · Domains & projects: the domains (superadmins: all, with create,
// edit, deactivate; a domain admin its own, description only, as the API
// allows) and the projects of the chosen domain, with their members.
import { useEffect, useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { AdminTabs, isSuperadmin } from '../admin.js';
import {
  HostsField,
  SlotsFields,
  fmtHosts,
  fmtLimits,
  hostsFromText,
  hostsToText,
  idleTimeoutFromForm,
  slotsFromForm,
  slotsToForm,
} from '../limits_form.js';
import {
  html,
  ErrorBanner,
  Loading,
  Modal,
  Opt,
  confirmAction,
  errText,
  fmtTime,
  toast,
  toastError,
  useData,
} from '../ui.js';

const items = (r) => (r && r.items) || [];
const ActiveBadge = ({ on }) =>
  html`<span class=${'badge ' + (on ? 'st-running' : 'st-terminated')}>${on ? 'active' : 'inactive'}</span>`;

// The fields of a domain or a project shared by both forms.
function limitsState(rec) {
  return {
    description: (rec && rec.description) || '',
    is_active: rec ? !!rec.is_active : true,
    slots: slotsToForm(rec && rec.total_resource_slots),
    hosts: hostsToText(rec && rec.allowed_vfolder_hosts),
    idle_timeout: String((rec && rec.idle_timeout) ?? 0),
  };
}

// Only what changed (a PATCH), or everything (a POST).
function limitsBody(f, rec, { withHosts = true } = {}) {
  const body = { description: f.description, is_active: f.is_active, total_resource_slots: slotsFromForm(f.slots) };
  if (withHosts) body.allowed_vfolder_hosts = hostsFromText(f.hosts);
  body.idle_timeout = idleTimeoutFromForm(f.idle_timeout);
  if (!rec) return body;
  if (body.idle_timeout === (rec.idle_timeout ?? 0)) delete body.idle_timeout;
  const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const norm = (o) => Object.fromEntries(Object.entries(o || {}).sort());
  if (body.description === (rec.description || '')) delete body.description;
  if (body.is_active === !!rec.is_active) delete body.is_active;
  if (same(norm(slotsFromForm(slotsToForm(rec.total_resource_slots))), norm(body.total_resource_slots)))
    delete body.total_resource_slots;
  if (withHosts && same(norm(rec.allowed_vfolder_hosts), norm(body.allowed_vfolder_hosts)))
    delete body.allowed_vfolder_hosts;
  return body;
}

// The cap on the idle timeout of a domain's or a project's sessions.
const IdleField = ({ id, value, onChange, whose }) =>
  html`<div class="field"><label for=${id}>Idle timeout cap (s)</label>
    <input id=${id} inputmode="numeric" value=${value} onInput=${(e) => onChange(e.currentTarget.value)} />
    <p class="hint">At most this long unused before ${whose} interactive sessions are ended, whatever their keypair policy says (the strictest setting wins; running sessions follow a change). 0: no cap.</p></div>`;

function DomainForm({ user, domain, onClose, onSaved }) {
  const creating = !domain;
  const su = isSuperadmin(user);
  const [name, setName] = useState('');
  const [f, setF] = useState(() => limitsState(domain));
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    setBusy(true);
    try {
      if (creating) {
        await post('/admin/domains', { name: name.trim(), ...limitsBody(f, null) });
      } else {
        const body = su
          ? limitsBody(f, domain)
          : { description: f.description, idle_timeout: idleTimeoutFromForm(f.idle_timeout) };
        if (Object.keys(body).length) await api('PATCH', '/admin/domains/' + enc(domain.name), { body });
      }
      toast(`${creating ? 'Created' : 'Saved'} domain ${creating ? name.trim() : domain.name}`);
      onSaved();
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Modal} title=${creating ? 'New domain' : `Edit domain ${domain.name}`} onClose=${onClose} wide>
    <form class="form" onSubmit=${submit} noValidate data-test="domain-form">
      ${!su && html`<p class="banner info" role="status">As a domain admin you may change the description and the idle timeout only.</p>`}
      ${
        creating &&
        html`<div class="field"><label for="domain-name">Name</label>
        <input id="domain-name" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
        <p class="hint">1 to 64 characters, no “/”; users log in naming it. It cannot be renamed later.</p></div>`
      }
      <div class="field"><label for="domain-description">Description</label>
        <input id="domain-description" value=${f.description} onInput=${(e) => setF({ ...f, description: e.currentTarget.value })} /></div>
      <div class="field"><span class="label">State</span><label class="inline"><input id="domain-active" type="checkbox" checked=${f.is_active} disabled=${!su}
        onChange=${(e) => setF({ ...f, is_active: e.currentTarget.checked })} /> active</label>
        <p class="hint">An inactive domain's users cannot log in or start sessions.</p></div>
      <${SlotsFields} idPrefix="domain" value=${f.slots} disabled=${!su} onChange=${(slots) => setF({ ...f, slots })}
        help="The most all sessions of the domain's users may hold together, per slot. Empty: no limit." />
      <${HostsField} id="domain-hosts" value=${f.hosts} disabled=${!su} onChange=${(hosts) => setF({ ...f, hosts })} />
      <${IdleField} id="domain-idle" value=${f.idle_timeout} onChange=${(idle_timeout) => setF({ ...f, idle_timeout })} whose="the domain's" />
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="domain-submit" disabled=${busy}>${busy ? 'Saving…' : creating ? 'Create domain' : 'Save'}</button></div>
    </form>
  <//>`;
}

function ProjectForm({ domain, project, policies, onClose, onSaved }) {
  const creating = !project;
  const [name, setName] = useState('');
  const [f, setF] = useState(() => ({
    ...limitsState(project),
    resource_policy: (project && project.resource_policy) || 'default',
  }));
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    setBusy(true);
    try {
      const body = limitsBody(f, project);
      if (!project || f.resource_policy !== project.resource_policy) body.resource_policy = f.resource_policy;
      if (creating) await post('/admin/projects', { name: name.trim(), domain_name: domain, ...body });
      else if (Object.keys(body).length) await api('PATCH', '/admin/projects/' + enc(project.id), { body });
      toast(`${creating ? 'Created' : 'Saved'} project ${creating ? name.trim() : project.name}`);
      onSaved();
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  const names = policies.length ? policies.map((p) => p.name) : [f.resource_policy];
  return html`<${Modal} title=${creating ? `New project in ${domain}` : `Edit project ${project.name}`} onClose=${onClose} wide>
    <form class="form" onSubmit=${submit} noValidate data-test="project-form">
      ${
        creating &&
        html`<div class="field"><label for="project-name">Name</label>
        <input id="project-name" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
        <p class="hint">Unique in the domain; sessions name it as <code>group_name</code>.</p></div>`
      }
      <div class="field"><label for="project-description">Description</label>
        <input id="project-description" value=${f.description} onInput=${(e) => setF({ ...f, description: e.currentTarget.value })} /></div>
      <div class="row2">
        <div class="field"><label for="project-policy">Project resource policy</label>
          <select id="project-policy" value=${f.resource_policy} onChange=${(e) => setF({ ...f, resource_policy: e.currentTarget.value })}>
            ${names.map((n) => html`<${Opt} value=${n}>${n}<//>`)}</select>
          <p class="hint">Limits the project's folders (count, quota): see Resource policies.</p></div>
        <div class="field"><span class="label">State</span><label class="inline"><input id="project-active" type="checkbox" checked=${f.is_active}
          onChange=${(e) => setF({ ...f, is_active: e.currentTarget.checked })} /> active</label>
          <p class="hint">No new sessions in an inactive project.</p></div>
      </div>
      <${SlotsFields} idPrefix="project" value=${f.slots} onChange=${(slots) => setF({ ...f, slots })}
        help="The most all sessions of the project may hold together, per slot. Empty: no limit." />
      <${HostsField} id="project-hosts" value=${f.hosts} onChange=${(hosts) => setF({ ...f, hosts })} />
      <${IdleField} id="project-idle" value=${f.idle_timeout} onChange=${(idle_timeout) => setF({ ...f, idle_timeout })} whose="the project's" />
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="project-submit" disabled=${busy}>${busy ? 'Saving…' : creating ? 'Create project' : 'Save'}</button></div>
    </form>
  <//>`;
}

function MembersDialog({ project, onClose }) {
  const path = `/admin/projects/${enc(project.id)}/members`;
  const { data, error, loading, reload } = useData(() => get(path, { limit: 1000 }), [project.id]);
  const [emails, setEmails] = useState('');
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const add = async (e) => {
    e.preventDefault();
    setErr(null);
    const list = emails
      .split(/[\s,;]+/)
      .map((x) => x.trim())
      .filter(Boolean);
    if (!list.length) {
      setErr('Name at least one e-mail address.');
      return;
    }
    setBusy(true);
    try {
      const r = await post(path, { emails: list });
      toast(`${r && r.added ? r.added.length : list.length} added to ${project.name}`);
      setEmails('');
      reload(true);
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  const remove = async (m) => {
    if (
      !(await confirmAction({
        title: `Remove ${m.email} from ${project.name}?`,
        message: 'The user can no longer start sessions in this project or use its folders.',
        confirmLabel: 'Remove',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', path, { body: { user_ids: [m.id] } });
      toast(`${m.email} removed`);
      reload(true);
    } catch (x) {
      toastError(x);
    }
  };
  const list = items(data);
  return html`<${Modal} title=${`Members of ${project.name}`} onClose=${onClose} wide>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading members…" />`}
    ${
      data &&
      (list.length
        ? html`<div class="table-wrap"><table data-test="members"><thead><tr><th scope="col">User</th><th scope="col">Role</th>
      <th scope="col">Status</th><th scope="col">Added</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map(
        (m) => html`<tr key=${m.id} data-member=${m.email}>
        <th scope="row">${m.email}<div class="muted small">${m.username}${m.full_name ? ' · ' + m.full_name : ''}</div></th>
        <td>${m.role}</td><td>${m.status}</td><td class="small">${fmtTime(m.added_at)}</td>
        <td class="actions"><button type="button" class="btn small danger" data-test="remove-member" onClick=${() => remove(m)}>Remove</button></td></tr>`,
      )}</tbody></table></div>`
        : html`<p class="empty">No members yet.</p>`)
    }
    <form class="form" onSubmit=${add} noValidate>
      <div class="field"><label for="member-emails">Add users by e-mail</label>
        <input id="member-emails" value=${emails} placeholder="ada@example.com, bob@example.com" onInput=${(e) => setEmails(e.currentTarget.value)} />
        <p class="hint">Users of domain ${project.domain_name}; several separated by commas or spaces. All or none are added.</p></div>
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Done</button>
        <button type="submit" class="btn primary" data-test="add-members" disabled=${busy}>${busy ? 'Adding…' : 'Add'}</button></div>
    </form>
  <//>`;
}

function ProjectsSection({ user, domain, policies }) {
  const { data, error, loading, reload } = useData(() => get('/admin/projects', { domain, limit: 1000 }), [domain]);
  const [editing, setEditing] = useState(null);
  const [members, setMembers] = useState(null);
  const list = items(data);
  const setActive = async (p, active) => {
    if (
      !active &&
      !(await confirmAction({
        title: `Deactivate project ${p.name}?`,
        message: 'No new sessions may start in it; running ones keep running. Activate it again with Edit.',
        confirmLabel: 'Deactivate',
        danger: true,
      }))
    )
      return;
    try {
      if (active) await api('PATCH', '/admin/projects/' + enc(p.id), { body: { is_active: true } });
      else await api('DELETE', '/admin/projects/' + enc(p.id));
      toast(`Project ${p.name} ${active ? 'activated' : 'deactivated'}`);
      reload(true);
    } catch (x) {
      toastError(x);
    }
  };
  return html`<section class="card span-all" data-test="projects">
    <div class="toolbar spread"><h2>Projects in ${domain}</h2>
      <button type="button" class="btn primary" data-test="create-project" onClick=${() => setEditing({})}>New project</button></div>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading projects…" />`}
    ${data && !list.length && html`<p class="empty">No projects in ${domain}.</p>`}
    ${
      list.length > 0 &&
      html`<div class="table-wrap"><table class="projects"><thead><tr><th scope="col">Project</th><th scope="col">State</th>
      <th scope="col">Resource limits</th><th scope="col">Policy</th><th scope="col">Storage hosts</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map(
        (p) => html`<tr key=${p.id} data-project-row=${p.name} data-project-id=${p.id}>
        <th scope="row">${p.name}${p.description && html`<div class="muted small">${p.description}</div>`}</th>
        <td data-active=${String(!!p.is_active)}><${ActiveBadge} on=${p.is_active} /></td>
        <td class="small">${fmtLimits(p.total_resource_slots)}</td><td class="small">${p.resource_policy}</td>
        <td class="small">${fmtHosts(p.allowed_vfolder_hosts)}</td>
        <td class="actions">
          <button type="button" class="btn small" data-test="project-members" onClick=${() => setMembers(p)}>Members</button>
          <button type="button" class="btn small" data-test="edit-project" onClick=${() => setEditing({ project: p })}>Edit</button>
          ${
            p.is_active
              ? html`<button type="button" class="btn small danger" data-test="deactivate-project" onClick=${() => setActive(p, false)}>Deactivate</button>`
              : html`<button type="button" class="btn small" data-test="activate-project" onClick=${() => setActive(p, true)}>Activate</button>`
          }</td>
      </tr>`,
      )}</tbody></table></div>`
    }
    ${
      editing &&
      html`<${ProjectForm} user=${user} domain=${domain} project=${editing.project} policies=${policies}
      onClose=${() => setEditing(null)} onSaved=${() => {
        setEditing(null);
        reload(true);
      }} />`
    }
    ${
      members &&
      html`<${MembersDialog} project=${members} onClose=${() => {
        setMembers(null);
        reload(true);
      }} />`
    }
  </section>`;
}

export function AdminDomainsPage({ user }) {
  const su = isSuperadmin(user);
  const { data, error, loading, reload } = useData(() => get('/admin/domains', { limit: 1000 }), []);
  const pols = useData(() => get('/admin/project-resource-policies', { limit: 1000 }).then(items, () => []), []);
  const [editing, setEditing] = useState(null);
  const [domain, setDomain] = useState(user.domain || 'default');
  const list = items(data);
  // items() keeps the list's identity while data stays the same.
  useEffect(() => {
    if (list.length && !list.some((d) => d.name === domain)) setDomain(list[0].name);
  }, [list, domain]);
  const setActive = async (d, active) => {
    if (
      !active &&
      !(await confirmAction({
        title: `Deactivate domain ${d.name}?`,
        message: 'Its users can no longer log in or start sessions until it is activated again.',
        confirmLabel: 'Deactivate',
        danger: true,
      }))
    )
      return;
    try {
      if (active) await api('PATCH', '/admin/domains/' + enc(d.name), { body: { is_active: true } });
      else await api('DELETE', '/admin/domains/' + enc(d.name));
      toast(`Domain ${d.name} ${active ? 'activated' : 'deactivated'}`);
      reload(true);
    } catch (x) {
      toastError(x);
    }
  };
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">${su && html`<button type="button" class="btn primary" data-test="create-domain" onClick=${() => setEditing({})}>New domain</button>`}</div></div>
    <${AdminTabs} current="domains" />
    ${!su && html`<p class="muted small">You manage domain <strong>${user.domain}</strong>: its description and its projects.</p>`}
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading domains…" />`}
    ${data && !list.length && html`<p class="empty">No domains.</p>`}
    <div class="grid">
    ${
      list.length > 0 &&
      html`<section class="card span-all"><h2>Domains</h2><div class="table-wrap"><table class="domains"><thead><tr><th scope="col">Domain</th><th scope="col">State</th>
      <th scope="col">Resource limits</th><th scope="col">Storage hosts</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map(
        (d) => html`<tr key=${d.name} data-domain=${d.name} class=${d.name === domain ? 'selected' : ''}>
        <th scope="row">${d.name}${d.description && html`<div class="muted small">${d.description}</div>`}</th>
        <td data-active=${String(!!d.is_active)}><${ActiveBadge} on=${d.is_active} /></td>
        <td class="small">${fmtLimits(d.total_resource_slots)}</td><td class="small">${fmtHosts(d.allowed_vfolder_hosts)}</td>
        <td class="small">${fmtTime(d.created_at)}</td>
        <td class="actions">
          ${d.name !== domain && html`<button type="button" class="btn small" data-test="show-projects" onClick=${() => setDomain(d.name)}>Projects</button>`}
          <button type="button" class="btn small" data-test="edit-domain" onClick=${() => setEditing({ domain: d })}>Edit</button>
          ${
            su &&
            (d.is_active
              ? html`<button type="button" class="btn small danger" data-test="deactivate-domain" onClick=${() => setActive(d, false)}>Deactivate</button>`
              : html`<button type="button" class="btn small" data-test="activate-domain" onClick=${() => setActive(d, true)}>Activate</button>`)
          }</td>
      </tr>`,
      )}</tbody></table></div></section>`
    }
    ${data && list.length > 0 && html`<${ProjectsSection} key=${domain} user=${user} domain=${domain} policies=${pols.data || []} />`}
    </div>
    ${
      editing &&
      html`<${DomainForm} user=${user} domain=${editing.domain} onClose=${() => setEditing(null)} onSaved=${() => {
        setEditing(null);
        reload(true);
      }} />`
    }
  </section>`;
}
