// Admin · Users: the list with search, create and edit (role, status,
// domain, projects, policy), deactivate, and a user's keypairs (issue,
// revoke). The API scopes it: a domain admin sees its domain's users and is
// not offered what the API refuses it (another domain, the superadmin role).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { AdminTabs, isSuperadmin } from '../admin.js';
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

// The choices of the form: domains, projects (per domain), user policies.
async function loadChoices(user) {
  const [domains, projects, policies] = await Promise.all([
    get('/admin/domains', { limit: 1000 }).then(items, () => [{ name: user.domain }]),
    get('/admin/projects', { limit: 1000 }).then(items, () => []),
    get('/admin/user-resource-policies', { limit: 1000 }).then(items, () => []),
  ]);
  return { domains, projects, policies };
}

function UserForm({ user, target, choices, onClose, onSaved }) {
  const creating = !target;
  const roles = isSuperadmin(user) ? ['user', 'admin', 'superadmin'] : ['user', 'admin'];
  const [f, setF] = useState(() => ({
    email: target ? target.email : '',
    username: target ? target.username : '',
    password: '',
    full_name: (target && target.full_name) || '',
    role: target ? target.role : 'user',
    status: target ? target.status : 'active',
    domain_name: target ? target.domain_name : user.domain,
    resource_policy:
      (target && target.resource_policy) ||
      (choices.policies.some((p) => p.name === 'default') || !choices.policies.length
        ? 'default'
        : choices.policies[0].name),
    projects: new Set((target && target.projects) || []),
  }));
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const domainProjects = choices.projects.filter((p) => p.domain_name === f.domain_name);
  const toggle = (id) => {
    const s = new Set(f.projects);
    s.has(id) ? s.delete(id) : s.add(id);
    setF({ ...f, projects: s });
  };
  // a superadmin's record is read-only to domain admins (the API refuses)
  const locked = target && target.role === 'superadmin' && !isSuperadmin(user);

  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    if (!f.email || !f.username || (creating && !f.password)) {
      setErr('E-mail, user name and (for a new user) password are required.');
      return;
    }
    setBusy(true);
    try {
      const body = {
        email: f.email,
        username: f.username,
        full_name: f.full_name,
        role: f.role,
        status: f.status,
        domain_name: f.domain_name,
        resource_policy: f.resource_policy,
      };
      if (f.password) body.password = f.password;
      let saved;
      if (creating) {
        saved = await post('/admin/users', { ...body, projects: [...f.projects] });
      } else {
        // only what changed: a domain admin may then edit what it may
        for (const k of Object.keys(body))
          if (k !== 'password' && (body[k] === (target[k] ?? '') || (k === 'status' && target.status === 'deleted')))
            delete body[k];
        saved = Object.keys(body).length ? await api('PATCH', '/admin/users/' + enc(target.id), { body }) : target;
        const before = new Set(target.projects || []);
        const add = [...f.projects].filter((p) => !before.has(p));
        const del = [...before].filter((p) => !f.projects.has(p));
        for (const p of add) await post(`/admin/projects/${enc(p)}/members`, { user_ids: [target.id] });
        for (const p of del)
          await api('DELETE', `/admin/projects/${enc(p)}/members`, { body: { user_ids: [target.id] } });
      }
      toast(`${creating ? 'Created' : 'Saved'} ${saved.email || f.email}`);
      onSaved(saved);
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };

  return html`<${Modal} title=${creating ? 'New user' : `Edit ${target.email}`} onClose=${onClose} wide>
    <form class="form" onSubmit=${submit} noValidate data-test="user-form">
      ${locked && html`<p class="banner info" role="status">A superadmin: only a superadmin may change it.</p>`}
      <div class="row2">
        <div class="field"><label for="user-email">E-mail</label>
          <input id="user-email" type="email" autocomplete="off" value=${f.email} onInput=${set('email')} disabled=${locked} /></div>
        <div class="field"><label for="user-username">User name</label>
          <input id="user-username" autocomplete="off" value=${f.username} onInput=${set('username')} disabled=${locked} /></div>
      </div>
      <div class="row2">
        <div class="field"><label for="user-fullname">Full name</label>
          <input id="user-fullname" value=${f.full_name} onInput=${set('full_name')} disabled=${locked} /></div>
        <div class="field"><label for="user-password">${creating ? 'Password' : 'New password (empty: unchanged)'}</label>
          <input id="user-password" type="password" autocomplete="new-password" value=${f.password} onInput=${set('password')} disabled=${locked} /></div>
      </div>
      <div class="row3">
        <div class="field"><label for="user-role">Role</label>
          <select id="user-role" value=${f.role} onChange=${set('role')} disabled=${locked}>
            ${(locked ? ['superadmin'] : roles).map((r) => html`<${Opt} value=${r}>${r === 'admin' ? 'admin (domain admin)' : r}<//>`)}
          </select></div>
        <div class="field"><label for="user-status">Status</label>
          <select id="user-status" value=${f.status} onChange=${set('status')} disabled=${locked || (target && target.status === 'deleted')}>
            ${(target && target.status === 'deleted' ? ['deleted'] : ['active', 'inactive']).map((s) => html`<${Opt} value=${s}>${s}<//>`)}
          </select></div>
        <div class="field"><label for="user-domain">Domain</label>
          <select id="user-domain" value=${f.domain_name} onChange=${(e) => setF({ ...f, domain_name: e.currentTarget.value, projects: new Set() })}
            disabled=${locked || !isSuperadmin(user)}>
            ${(choices.domains.length ? choices.domains : [{ name: f.domain_name }]).map((d) => html`<${Opt} value=${d.name}>${d.name}<//>`)}
          </select></div>
      </div>
      <div class="field"><label for="user-policy">Resource policy</label>
        ${
          choices.policies.length
            ? html`<select id="user-policy" value=${f.resource_policy} onChange=${set('resource_policy')} disabled=${locked}>
              ${choices.policies.map((p) => html`<${Opt} value=${p.name}>${p.name}<//>`)}</select>`
            : html`<input id="user-policy" value=${f.resource_policy} onInput=${set('resource_policy')} disabled=${locked} />`
        }</div>
      <fieldset><legend>Projects in ${f.domain_name}</legend>
        ${
          domainProjects.length
            ? html`<ul class="mount-list">${domainProjects.map(
                (p) => html`<li key=${p.id}><label>
          <input type="checkbox" data-project=${p.name} checked=${f.projects.has(p.id)} onChange=${() => toggle(p.id)} disabled=${locked} /> ${p.name}</label></li>`,
              )}</ul>`
            : html`<p class="muted small">No project in this domain.</p>`
        }
      </fieldset>
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions">
        <button type="button" class="btn" onClick=${onClose}>Cancel</button>
        ${!locked && html`<button type="submit" class="btn primary" data-test="user-submit" disabled=${busy}>${busy ? 'Saving…' : creating ? 'Create user' : 'Save'}</button>`}
      </div>
    </form>
  <//>`;
}

// Copies text to the clipboard (the Clipboard API, else a selection and
// execCommand, as an http:// page may not have the API); whether it did.
async function copyText(text, node) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* below */
  }
  try {
    const range = document.createRange();
    range.selectNodeContents(node);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

function IssuedKeypair({ issued }) {
  const [copied, setCopied] = useState(false);
  const secretRef = useRef(null);
  const copy = async () => {
    if (await copyText(issued.secret_key, secretRef.current)) {
      setCopied(true);
      toast('Secret key copied');
    } else toastError('The browser did not copy: select the secret key and copy it by hand.');
  };
  return html`<div class="banner success" role="status" data-test="issued-keypair"><span class="banner-text">
    New keypair${issued.resource_policy ? html` with policy <strong>${issued.resource_policy}</strong>` : ''}${issued.is_admin ? ' (admin)' : ''}: copy the secret now, it is not shown again.
    <span class="secret-line">Access key <code data-test="new-access-key">${issued.access_key}</code></span>
    <span class="secret-line">Secret key <code class="secret" data-test="new-secret-key" ref=${secretRef}>${issued.secret_key}</code>
      <button type="button" class="btn small" data-test="copy-secret" onClick=${copy}>${copied ? 'Copied' : 'Copy'}</button></span></span></div>`;
}

function KeypairsDialog({ target, onClose }) {
  const { data, error, loading, reload } = useData(
    () => get('/admin/keypairs', { user: target.id, limit: 100 }),
    [target.id],
  );
  const policies = useData(() => get('/admin/keypair-resource-policies', { limit: 1000 }).then(items), []);
  const names = (policies.data || []).map((p) => p.name);
  const [issued, setIssued] = useState(null);
  const [busy, setBusy] = useState(false);
  const [policy, setPolicy] = useState('default');
  const [asAdmin, setAsAdmin] = useState(false);
  const [saving, setSaving] = useState(null); // the access key whose policy is being changed
  const [err, setErr] = useState(null);
  // is_admin keypairs belong to administrators: the API refuses it for role user
  const mayBeAdmin = target.role !== 'user';
  const issue = async (e) => {
    if (e) e.preventDefault();
    setBusy(true);
    setErr(null);
    try {
      const body = { user_id: target.id, resource_policy: policy };
      if (mayBeAdmin && asAdmin) body.is_admin = true;
      setIssued(await post('/admin/keypairs', body));
      reload(true);
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (kp) => {
    if (
      !(await confirmAction({
        title: `Revoke ${kp.access_key}?`,
        message: `Programs using this keypair of ${target.email} can no longer call the API.`,
        confirmLabel: 'Revoke',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', '/admin/keypairs/' + enc(kp.access_key));
      toast(`${kp.access_key} revoked`);
      reload(true);
    } catch (e) {
      toastError(e);
    }
  };
  const changePolicy = async (kp, name) => {
    if (name === kp.resource_policy) return;
    setSaving(kp.access_key);
    setErr(null);
    try {
      await api('PATCH', '/admin/keypairs/' + enc(kp.access_key), { body: { resource_policy: name } });
      toast(`${kp.access_key}: policy ${name}`);
    } catch (x) {
      setErr(`${kp.access_key}: ${errText(x)}`);
    } finally {
      setSaving(null);
      reload(true);
    }
  };
  const policyCell = (kp) => {
    if (!kp.is_active || !names.length)
      return html`<span data-test="keypair-policy-name">${kp.resource_policy || '–'}</span>`;
    const opts = names.includes(kp.resource_policy) ? names : [kp.resource_policy, ...names];
    return html`<select class="keypair-policy" data-test="keypair-policy" aria-label=${`Resource policy of ${kp.access_key}`}
      value=${kp.resource_policy} disabled=${saving === kp.access_key} onChange=${(e) => changePolicy(kp, e.currentTarget.value)}>
      ${opts.map((n) => html`<${Opt} value=${n}>${n}<//>`)}</select>`;
  };
  return html`<${Modal} title=${`Keypairs of ${target.email}`} onClose=${onClose} wide>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} />`}
    ${
      data &&
      (items(data).length
        ? html`<div class="table-wrap"><table class="keypairs"><thead><tr><th scope="col">Access key</th><th scope="col">State</th><th scope="col">Policy</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${items(data).map(
        (kp) => html`<tr key=${kp.access_key} data-keypair=${kp.access_key} data-policy-of=${kp.resource_policy}>
        <th scope="row" class="mono small">${kp.access_key}</th>
        <td>${kp.is_active ? 'active' : kp.revoked_at ? 'revoked' : 'inactive'}${kp.is_admin ? ' · admin' : ''}</td>
        <td>${policyCell(kp)}</td><td class="small">${fmtTime(kp.last_used)}</td>
        <td class="actions">${kp.is_active && html`<button type="button" class="btn small danger" data-test="revoke-keypair" onClick=${() => revoke(kp)}>Revoke</button>`}</td></tr>`,
      )}</tbody></table></div>`
        : html`<p class="empty">No keypairs.</p>`)
    }
    ${policies.error && html`<p class="muted small">Keypair policies could not be read (${errText(policies.error)}): new keypairs get <code>default</code>.</p>`}
    ${issued && html`<${IssuedKeypair} key=${issued.access_key} issued=${issued} />`}
    ${err && html`<p class="banner error" role="alert" data-test="keypair-error">${err}</p>`}
    <form class="issue-keypair" onSubmit=${issue} noValidate>
      <div class="grant-row">
        <div class="field"><label for="keypair-policy">Resource policy of a new keypair</label>
          ${
            names.length
              ? html`<select id="keypair-policy" value=${policy} onChange=${(e) => setPolicy(e.currentTarget.value)}>
              ${(names.includes('default') ? names : ['default', ...names]).map((n) => html`<${Opt} value=${n}>${n}<//>`)}</select>`
              : html`<input id="keypair-policy" value=${policy} onInput=${(e) => setPolicy(e.currentTarget.value)} />`
          }</div>
        ${
          mayBeAdmin
            ? html`<label class="inline"><input type="checkbox" id="keypair-admin" checked=${asAdmin} onChange=${(e) => setAsAdmin(e.currentTarget.checked)} /> Admin keypair</label>`
            : html`<span></span>`
        }
        <button type="submit" class="btn" data-test="issue-keypair" disabled=${busy || target.status === 'deleted'}>${busy ? 'Issuing…' : 'Issue a keypair'}</button>
      </div>
      ${!mayBeAdmin && html`<p class="hint">Admin keypairs are for administrators; this user's role is <code>user</code>.</p>`}
    </form>
    <div class="form-actions">
      <button type="button" class="btn primary" onClick=${onClose}>Done</button></div>
  <//>`;
}

export function AdminUsersPage({ user }) {
  const [q, setQ] = useState('');
  const [typed, setTyped] = useState('');
  const [status, setStatus] = useState('');
  const [editing, setEditing] = useState(null); // {target} or {} for a new user
  const [keys, setKeys] = useState(null);
  useEffect(() => {
    const t = setTimeout(() => setQ(typed.trim()), 300);
    return () => clearTimeout(t);
  }, [typed]);
  const { data, error, loading, reload } = useData(() => get('/admin/users', { q, status, limit: 200 }), [q, status]);
  const choices = useData(() => loadChoices(user), []);
  const list = items(data);
  const projectName = (id) => {
    const p = ((choices.data && choices.data.projects) || []).find((x) => x.id === id);
    return p ? p.name : id.slice(0, 8);
  };
  const manageable = (t) => isSuperadmin(user) || t.role !== 'superadmin';

  const setActive = async (t, active) => {
    if (
      !active &&
      !(await confirmAction({
        title: `Deactivate ${t.email}?`,
        message: 'The user can no longer sign in or call the API until activated again; its sessions keep running.',
        confirmLabel: 'Deactivate',
        danger: true,
      }))
    )
      return;
    try {
      await api('PATCH', '/admin/users/' + enc(t.id), { body: { status: active ? 'active' : 'inactive' } });
      toast(`${t.email} ${active ? 'activated' : 'deactivated'}`);
      reload(true);
    } catch (e) {
      toastError(e);
    }
  };

  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">
        <label class="inline" for="user-search">Search</label>
        <input id="user-search" type="search" placeholder="e-mail, name" value=${typed} onInput=${(e) => setTyped(e.currentTarget.value)} style="width: 14rem" />
        <label class="inline">Status <select id="user-status-filter" value=${status} onChange=${(e) => setStatus(e.currentTarget.value)}>
          ${[
            ['', 'Any'],
            ['active', 'active'],
            ['inactive', 'inactive'],
            ['deleted', 'deleted'],
          ].map(([v, l]) => html`<${Opt} value=${v}>${l}<//>`)}</select></label>
        <button type="button" class="btn primary" data-test="create-user" disabled=${!choices.data} onClick=${() => setEditing({})}>New user</button>
      </div></div>
    <${AdminTabs} current="users" />
    ${!isSuperadmin(user) && html`<p class="muted small">You manage the users of domain <strong>${user.domain}</strong>.</p>`}
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading users…" />`}
    ${data && !list.length && html`<p class="empty">No users${q ? ` matching “${q}”` : ''}.</p>`}
    ${
      list.length > 0 &&
      html`<div class="table-wrap"><table class="users">
      <thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Domain</th>
        <th scope="col">Projects</th><th scope="col">Policy</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map(
        (t) => html`<tr key=${t.id} data-user=${t.email}>
        <th scope="row">${t.email}<div class="muted small">${t.username}${t.full_name ? ' · ' + t.full_name : ''}</div></th>
        <td data-role=${t.role}>${t.role}</td>
        <td data-user-status=${t.status}><span class=${'badge ' + (t.status === 'active' ? 'st-running' : t.status === 'deleted' ? 'st-terminated' : 'st-pending')}>${t.status}</span></td>
        <td>${t.domain_name}</td>
        <td class="small">${(t.projects || []).map(projectName).join(', ') || '–'}</td>
        <td class="small">${t.resource_policy || '–'}</td>
        <td class="actions">${
          manageable(t) &&
          html`
          <button type="button" class="btn small" data-test="edit-user" disabled=${!choices.data} onClick=${() => setEditing({ target: t })}>Edit</button>
          <button type="button" class="btn small" data-test="user-keypairs" onClick=${() => setKeys(t)}>Keypairs</button>
          ${t.status === 'active' && t.id !== user.user_id && html`<button type="button" class="btn small danger" data-test="deactivate-user" onClick=${() => setActive(t, false)}>Deactivate</button>`}
          ${t.status === 'inactive' && html`<button type="button" class="btn small" data-test="activate-user" onClick=${() => setActive(t, true)}>Activate</button>`}`
        }</td>
      </tr>`,
      )}</tbody></table></div>
      ${data.total > list.length && html`<p class="muted small">Showing ${list.length} of ${data.total}: narrow the search.</p>`}`
    }
    ${
      editing &&
      choices.data &&
      html`<${UserForm} user=${user} target=${editing.target} choices=${choices.data}
      onClose=${() => setEditing(null)} onSaved=${() => {
        setEditing(null);
        reload(true);
      }} />`
    }
    ${keys && html`<${KeypairsDialog} target=${keys} onClose=${() => setKeys(null)} />`}
    ${choices.error && html`<p class="muted small">Domains, projects or policies could not be read: ${errText(choices.error)}</p>`}
  </section>`;
}
