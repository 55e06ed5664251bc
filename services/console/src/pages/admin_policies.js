// Admin · Resource policies: the three kinds (keypair, user, project) with
// what each limit means; superadmins create, edit and delete, domain admins
// read (the API lets only superadmins write).
import { useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { AdminTabs, isSuperadmin } from '../admin.js';
import { bytesForInput } from '../resources.js';
import {
  HostsField,
  SlotsFields,
  fmtHosts,
  fmtLimits,
  hostsFromText,
  hostsToText,
  slotsFromForm,
  slotsToForm,
} from '../limits_form.js';
import {
  html,
  ErrorBanner,
  Loading,
  Modal,
  confirmAction,
  errText,
  fmtBytes,
  fmtTime,
  parseBytes,
  toast,
  toastError,
  useData,
} from '../ui.js';

const items = (r) => (r && r.items) || [];
const noneIf0 = (v, fmt = String) => (v === null || v === undefined || Number(v) === 0 ? 'no limit' : fmt(v));
const seconds = (v) => `${v} s`;

// Each kind: its path, who it limits, and its number fields: [key, label,
// meaning, how an empty field is sent, how the value shows in the table].
const FOLDER_FIELDS = (who) => [
  ['max_vfolder_count', 'Folders', `how many folders ${who} may own; 0 or empty = no limit`, 0, noneIf0],
  [
    'max_quota_scope_size',
    'Folder quota',
    `the most bytes ${who}'s folders may hold together (k/m/g/t: 100g); 0 or empty = no limit`,
    0,
    (v) => noneIf0(v, fmtBytes),
    'bytes',
  ],
];
export const KINDS = {
  keypair: {
    label: 'Keypair policies',
    path: '/admin/keypair-resource-policies',
    about:
      'What the sessions of a keypair (each user’s API key) may use and how long they live. Users and keypairs name one; “default” is given to new keypairs.',
    slots: true,
    fields: [
      [
        'max_concurrent_sessions',
        'Concurrent sessions',
        'how many sessions a keypair may have running at once; 0 or empty = no limit',
        0,
        noneIf0,
      ],
      [
        'max_pending_session_count',
        'Pending sessions',
        'how many sessions may wait in the queue at once; empty = no limit',
        null,
        noneIf0,
      ],
      [
        'max_containers_per_session',
        'Containers per session',
        'the most containers (kernels) one session may have; at least 1',
        1,
        String,
      ],
      [
        'idle_timeout',
        'Idle timeout',
        'seconds an interactive session may go unused (no app traffic, stream or exec) before it is ended; 0 or empty = never; -1 = undefined: the resource group’s default. A project’s or domain’s stricter cap wins; running sessions follow a change',
        0,
        (v) => noneIf0(v, seconds),
      ],
      [
        'max_session_lifetime',
        'Session lifetime',
        'seconds a session may stay RUNNING, busy or not, before it is terminated; 0 or empty = no limit. Taken when a session is created',
        0,
        (v) => noneIf0(v, seconds),
      ],
      [
        'max_rootfs_size',
        'Container disk',
        'the most bytes each container may write on its node, its root file system and /home/work together (k/m/g/t: 50g; at least 16m); writes past it fail as on a full disk. 0 or empty = the agent’s own limit (agent.rootfs_size, 32g by default). Taken when a session is created',
        0,
        (v) => (v === null || v === undefined || Number(v) === 0 ? 'agent’s default' : fmtBytes(v)),
        'bytes',
      ],
    ],
  },
  user: {
    label: 'User policies',
    path: '/admin/user-resource-policies',
    about: 'The limits of a user’s own folders. Each user names one (Users → Edit).',
    fields: FOLDER_FIELDS('a user'),
  },
  project: {
    label: 'Project policies',
    path: '/admin/project-resource-policies',
    about: 'The limits of a project’s folders. Each project names one (Domains & projects → Edit).',
    fields: FOLDER_FIELDS('a project'),
  },
};

function PolicyForm({ kind, policy, onClose, onSaved }) {
  const k = KINDS[kind];
  const creating = !policy;
  const [name, setName] = useState('');
  const [f, setF] = useState(() => {
    const v = {};
    for (const [key, , , , , unit] of k.fields) {
      const x = policy ? policy[key] : undefined;
      v[key] = x === null || x === undefined ? '' : unit === 'bytes' && Number(x) ? bytesForInput(x) : String(x);
    }
    if (!policy && 'max_containers_per_session' in v) v.max_containers_per_session = '1';
    return {
      ...v,
      slots: slotsToForm(policy && policy.total_resource_slots),
      hosts: hostsToText(policy && policy.allowed_vfolder_hosts),
    };
  });
  const [err, setErr] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setErr(null);
    const body = {};
    try {
      for (const [key, label, , empty, , unit] of k.fields) {
        const t = String(f[key]).trim();
        let v = empty;
        if (t) {
          v = unit === 'bytes' ? parseBytes(t) : Number(t);
          if (!Number.isInteger(v) || v < (key === 'idle_timeout' ? -1 : 0))
            throw new Error(
              `${label}: “${t}” is not a whole number${unit === 'bytes' ? ' of bytes (k/m/g/t allowed)' : ''}`,
            );
        }
        if (!policy || v !== policy[key]) body[key] = v;
      }
      if (k.slots) {
        body.total_resource_slots = slotsFromForm(f.slots);
        body.allowed_vfolder_hosts = hostsFromText(f.hosts);
      }
    } catch (x) {
      setErr(errText(x));
      return;
    }
    setBusy(true);
    try {
      if (creating) await post(k.path, { name: name.trim(), ...body });
      else await api('PATCH', `${k.path}/${enc(policy.name)}`, { body });
      toast(`${creating ? 'Created' : 'Saved'} ${kind} policy ${creating ? name.trim() : policy.name}`);
      onSaved();
    } catch (x) {
      setErr(errText(x));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Modal} title=${creating ? `New ${kind} policy` : `Edit ${kind} policy ${policy.name}`} onClose=${onClose} wide>
    <form class="form" onSubmit=${submit} noValidate data-test="policy-form">
      ${
        creating &&
        html`<div class="field"><label for="policy-name">Name</label>
        <input id="policy-name" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
        <p class="hint">1 to 64 characters, no “/”. It cannot be renamed later.</p></div>`
      }
      <div class="row2">${k.fields.map(
        ([key, label, meaning]) => html`<div class="field" key=${key}>
        <label for=${'policy-' + key}>${label} <code class="muted small">${key}</code></label>
        <input id=${'policy-' + key} value=${f[key]} placeholder=${meaning.includes('empty = ') ? meaning.split('empty = ')[1] : ''}
          onInput=${(e) => setF({ ...f, [key]: e.currentTarget.value })} />
        <p class="hint">${meaning}</p></div>`,
      )}</div>
      ${
        k.slots &&
        html`<${SlotsFields} idPrefix="policy" value=${f.slots} onChange=${(slots) => setF({ ...f, slots })}
        help="The most all running sessions of one keypair may hold together, per slot (total_resource_slots). Empty: no limit on that slot." />
        <${HostsField} id="policy-hosts" value=${f.hosts} onChange=${(hosts) => setF({ ...f, hosts })} />`
      }
      ${err && html`<p class="banner error" role="alert">${err}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="policy-submit" disabled=${busy}>${busy ? 'Saving…' : creating ? 'Create policy' : 'Save'}</button></div>
    </form>
  <//>`;
}

export function AdminPoliciesPage({ user, query }) {
  const kind = KINDS[query && query.get('kind')] ? query.get('kind') : 'keypair';
  const k = KINDS[kind];
  const su = isSuperadmin(user);
  const { data, error, loading, reload } = useData(() => get(k.path, { limit: 1000 }), [kind]);
  const [editing, setEditing] = useState(null);
  const [delError, setDelError] = useState(null);
  const list = items(data);
  const remove = async (p) => {
    if (
      !(await confirmAction({
        title: `Delete ${kind} policy ${p.name}?`,
        message: `It is removed for good. A policy still named by a ${kind === 'keypair' ? 'keypair' : kind} cannot be deleted.`,
        confirmLabel: 'Delete',
        danger: true,
      }))
    )
      return;
    setDelError(null);
    try {
      await api('DELETE', `${k.path}/${enc(p.name)}`);
      toast(`Deleted ${kind} policy ${p.name}`);
      reload(true);
    } catch (x) {
      if (x.status === 409) setDelError(new Error(`${p.name} was not deleted: ${errText(x)}`));
      else toastError(x);
    }
  };
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">${su && html`<button type="button" class="btn primary" data-test="create-policy" onClick=${() => setEditing({})}>New ${kind} policy</button>`}</div></div>
    <${AdminTabs} current="policies" />
    <nav class="subtabs" aria-label="Policy kinds">${Object.entries(KINDS).map(
      ([key, v]) => html`<a href=${'#/admin/policies?kind=' + key}
      data-policy-kind=${key} aria-current=${key === kind ? 'page' : undefined}>${v.label}</a>`,
    )}</nav>
    <p class="muted small">${k.about}${su ? '' : ' You may read these; only a superadmin may change them.'}</p>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    <${ErrorBanner} error=${delError} onClose=${() => setDelError(null)} />
    ${loading && !data && html`<${Loading} label="Loading policies…" />`}
    ${data && !list.length && html`<p class="empty">No ${kind} policies.</p>`}
    ${
      list.length > 0 &&
      html`<div class="table-wrap"><table class="policies" data-kind=${kind}><thead><tr><th scope="col">Policy</th>
      ${k.fields.map(([key, label, meaning]) => html`<th scope="col" key=${key} title=${meaning}>${label}</th>`)}
      ${k.slots && html`<th scope="col">Resource slots</th><th scope="col">Storage hosts</th>`}
      <th scope="col">Created</th>${su && html`<th scope="col"><span class="sr-only">Actions</span></th>`}</tr></thead>
      <tbody>${list.map(
        (p) => html`<tr key=${p.name} data-policy=${p.name}>
        <th scope="row">${p.name}</th>
        ${k.fields.map(([key, , , , fmt]) => html`<td key=${key} data-field=${key} data-value=${p[key] ?? ''}>${fmt(p[key])}</td>`)}
        ${k.slots && html`<td class="small">${fmtLimits(p.total_resource_slots)}</td><td class="small">${fmtHosts(p.allowed_vfolder_hosts)}</td>`}
        <td class="small">${fmtTime(p.created_at)}</td>
        ${
          su &&
          html`<td class="actions"><button type="button" class="btn small" data-test="edit-policy" onClick=${() => setEditing({ policy: p })}>Edit</button>
          ${p.name !== 'default' && html`<button type="button" class="btn small danger" data-test="delete-policy" onClick=${() => remove(p)}>Delete</button>`}</td>`
        }
      </tr>`,
      )}</tbody></table></div>`
    }
    <dl class="info small policy-help" data-test="policy-help">${k.fields.map(([key, label, meaning]) => html`<dt key=${key}>${label} (<code>${key}</code>)</dt><dd>${meaning}</dd>`)}
      ${
        k.slots &&
        html`<dt>Resource slots (<code>total_resource_slots</code>)</dt><dd>the most all running sessions of one keypair may hold together, per slot: CPU cores, memory (bytes; 32g), whole GPUs (cuda.device), GPU shares (cuda.shares, 0.5 = half a GPU); a slot not named has no limit</dd>
        <dt>Storage hosts (<code>allowed_vfolder_hosts</code>)</dt><dd>the storage hosts the keypair's folders may use, each with the permissions given there</dd>`
      }</dl>
    ${
      editing &&
      su &&
      html`<${PolicyForm} kind=${kind} policy=${editing.policy} onClose=${() => setEditing(null)} onSaved=${() => {
        setEditing(null);
        reload(true);
      }} />`
    }
  </section>`;
}
