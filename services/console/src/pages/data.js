// Data: folders (create, rename, share, leave, delete), invitations, trash.
import { useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import {
  Opt,
  html,
  ErrorBanner,
  Loading,
  Modal,
  confirmAction,
  errText,
  fmtBytes,
  fmtTime,
  toast,
  toastError,
  useData,
} from '../ui.js';

function FolderDialog({ onClose, onDone }) {
  const { data: hosts, error: hostsError, loading } = useData(() => get('/folders/_/hosts'), []);
  const [f, setF] = useState({ name: '', host: '', permission: 'rw', usage_mode: 'general' });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    if (!f.name.trim()) {
      setError('Give the folder a name.');
      return;
    }
    setBusy(true);
    try {
      const body = { name: f.name.trim(), permission: f.permission, usage_mode: f.usage_mode };
      const host = f.host || (hosts && hosts.default);
      if (host) body.host = host;
      await post('/folders', body);
      toast(`Folder ${body.name} created`);
      onDone();
    } catch (err) {
      setError(errText(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Modal} title="New folder" onClose=${onClose}>
    <form class="form" onSubmit=${submit} noValidate>
      <div class="field"><label for="folder-name">Name</label>
        <input id="folder-name" value=${f.name} onInput=${set('name')} required autocapitalize="off" spellcheck="false" /></div>
      <div class="field"><label for="folder-host">Storage host</label>
        ${
          loading
            ? html`<${Loading} />`
            : html`<select id="folder-host" value=${f.host || (hosts && hosts.default) || ''} onChange=${set('host')}>
          ${((hosts && hosts.allowed) || []).map((h) => html`<${Opt} value=${h}>${h}${hosts.default === h ? ' (default)' : ''}<//>`)}
          ${(!hosts || !(hosts.allowed || []).length) && html`<option value="">Default</option>`}
        </select>`
        }
        <${ErrorBanner} error=${hostsError} /></div>
      <div class="row2">
        <div class="field"><label for="folder-permission">Permission</label>
          <select id="folder-permission" value=${f.permission} onChange=${set('permission')}>
            <option value="rw">Read and write</option><option value="ro">Read only</option><option value="wd">Read, write, delete</option></select></div>
        <div class="field"><label for="folder-usage-mode">Usage</label>
          <select id="folder-usage-mode" value=${f.usage_mode} onChange=${set('usage_mode')}>
            <option value="general">General</option><option value="data">Data</option><option value="model">Model</option></select></div>
      </div>
      ${error && html`<p class="banner error" role="alert">${error}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="folder-create-submit" disabled=${busy}>${busy ? 'Creating…' : 'Create'}</button></div>
    </form>
  <//>`;
}

function PromptDialog({ title, label, id, initial = '', submitLabel, onSubmit, onClose, children, testId }) {
  const [value, setValue] = useState(initial);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      await onSubmit(value.trim());
      onClose();
    } catch (err) {
      setError(errText(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Modal} title=${title} onClose=${onClose}>
    <form class="form" onSubmit=${submit} noValidate>
      <div class="field"><label for=${id}>${label}</label>
        <input id=${id} value=${value} onInput=${(e) => setValue(e.currentTarget.value)} required autocapitalize="off" spellcheck="false" /></div>
      ${children}
      ${error && html`<p class="banner error" role="alert">${error}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test=${testId} disabled=${busy || !value.trim()}>${busy ? 'Working…' : submitLabel}</button></div>
    </form>
  <//>`;
}

export function InviteDialog({ folder, onClose }) {
  const [perm, setPerm] = useState('ro');
  return html`<${PromptDialog} title=${'Share ' + folder.name} label="E-mail addresses (comma-separated)" id="invite-emails"
    submitLabel="Invite" testId="invite-submit" onClose=${onClose}
    onSubmit=${async (v) => {
      const emails = v.split(/[\s,;]+/).filter(Boolean);
      if (!emails.length) throw new Error('Enter at least one e-mail address.');
      const r = await post('/folders/' + enc(folder.name) + '/invite', { perm, emails });
      const n = r && r.invited_ids ? r.invited_ids.length : emails.length;
      toast(
        n
          ? `${n} invitation${n > 1 ? 's' : ''} sent for ${folder.name}`
          : `No new invitation: ${emails.join(', ')} already invited or with access`,
      );
    }}>
    <div class="field"><label for="invite-perm">Permission</label>
      <select id="invite-perm" value=${perm} onChange=${(e) => setPerm(e.currentTarget.value)}>
        <option value="ro">Read only</option><option value="rw">Read and write</option><option value="wd">Read, write, delete</option></select></div>
  <//>`;
}

function FoldersTab({ user }) {
  const { data, error, loading, reload } = useData(() => get('/folders'), []);
  const [dialog, setDialog] = useState(null);
  const folders = (data || []).filter((f) => f.status !== 'trash' && f.status !== 'purged' && f.status !== 'purging');

  const del = async (fo) => {
    if (
      !(await confirmAction({
        title: `Move ${fo.name} to the trash?`,
        message: 'It can be restored from the Trash tab until it is purged.',
        confirmLabel: 'Move to trash',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', '/folders/' + enc(fo.name));
      toast(`${fo.name} moved to the trash`);
      reload(true);
    } catch (e) {
      toastError(e);
    }
  };
  const leave = async (fo) => {
    if (
      !(await confirmAction({
        title: `Leave ${fo.name}?`,
        message: 'You lose access to this shared folder.',
        confirmLabel: 'Leave',
        danger: true,
      }))
    )
      return;
    try {
      await post('/folders/' + enc(fo.name) + '/leave');
      toast(`Left ${fo.name}`);
      reload(true);
    } catch (e) {
      toastError(e);
    }
  };

  return html`<div>
    <div class="toolbar">
      <button type="button" class="btn primary" data-test="create-folder" onClick=${() => setDialog({ kind: 'create' })}>New folder</button>
      <button type="button" class="btn" onClick=${() => reload()}>Refresh</button>
    </div>
    <${InvitationsTab} user=${user} receivedOnly onChange=${() => reload(true)} />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading folders…" />`}
    ${data && !folders.length && html`<p class="empty">No folders yet.</p>`}
    ${
      folders.length > 0 &&
      html`<div class="table-wrap"><table>
      <thead><tr><th scope="col">Name</th><th scope="col">Host</th><th scope="col">Usage</th><th scope="col">Access</th><th scope="col">Size / quota</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${folders.map(
        (fo) => html`<tr key=${fo.id} data-folder=${fo.name}>
        <th scope="row"><a href=${'#/data/' + enc(fo.name)}>${fo.name}</a>${fo.status && fo.status !== 'ready' && html` <span class="badge">${fo.status}</span>`}</th>
        <td>${fo.host}</td><td>${fo.usage_mode}</td>
        <td>${fo.is_owner ? 'owner' : fo.ownership_type === 'group' ? `project (${fo.permission})` : `shared (${fo.permission})`}</td>
        <td>${fmtBytes(fo.used_bytes || 0)}${fo.max_size ? ' / ' + fmtBytes(fo.max_size) : ''}</td>
        <td class="actions">
          ${fo.is_owner && html`<button type="button" class="btn small" data-test="rename-folder" onClick=${() => setDialog({ kind: 'rename', fo })}>Rename</button>`}
          ${fo.is_owner && fo.ownership_type !== 'group' && html`<button type="button" class="btn small" data-test="share-folder" onClick=${() => setDialog({ kind: 'invite', fo })}>Share</button>`}
          ${!fo.is_owner && fo.ownership_type !== 'group' && html`<button type="button" class="btn small" data-test="leave-folder" onClick=${() => leave(fo)}>Leave</button>`}
          ${fo.is_owner && html`<button type="button" class="btn small danger" data-test="delete-folder" onClick=${() => del(fo)}>Delete</button>`}
        </td></tr>`,
      )}</tbody>
    </table></div>`
    }
    ${
      dialog &&
      dialog.kind === 'create' &&
      html`<${FolderDialog} onClose=${() => setDialog(null)} onDone=${() => {
        setDialog(null);
        reload(true);
      }} />`
    }
    ${
      dialog &&
      dialog.kind === 'rename' &&
      html`<${PromptDialog} title=${'Rename ' + dialog.fo.name} label="New name" id="rename-folder-name"
      initial=${dialog.fo.name} submitLabel="Rename" testId="rename-submit" onClose=${() => setDialog(null)}
      onSubmit=${async (v) => {
        await post('/folders/' + enc(dialog.fo.name) + '/rename', { new_name: v });
        toast(`Renamed to ${v}`);
        reload(true);
      }} />`
    }
    ${dialog && dialog.kind === 'invite' && html`<${InviteDialog} folder=${dialog.fo} onClose=${() => setDialog(null)} />`}
  </div>`;
}

// Whether the signed-in user sent the invitation (it then offers Cancel).
const sentByMe = (inv, user) =>
  (!!inv.inviter && [user.username, user.email].includes(inv.inviter)) ||
  ((inv.inviter || '').split('@')[0] === user.username && (inv.invitee || '').split('@')[0] !== user.username);

function InvitationsTab({ user, onChange, receivedOnly }) {
  const { data, error, loading, reload } = useData(() => get('/folders/invitations/list'), []);
  const list = ((data && data.invitations) || []).filter((inv) => !receivedOnly || !sentByMe(inv, user));
  if (receivedOnly && !list.length) return null;
  const act = async (inv, accept) => {
    try {
      if (accept) await post('/folders/invitations/accept', { inv_id: inv.id });
      else await api('DELETE', '/folders/invitations/delete', { body: { inv_id: inv.id } });
      toast(
        accept
          ? `You can now use ${inv.vfolder_name}`
          : sentByMe(inv, user)
            ? 'Invitation canceled'
            : 'Invitation declined',
      );
      reload(true);
      if (onChange) onChange();
    } catch (e) {
      toastError(e);
    }
  };
  return html`<div class=${receivedOnly ? 'card invitations-card' : ''}>
    ${receivedOnly && html`<h2>Invitations <span class="count">${list.length}</span></h2>`}
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} />`}
    ${data && !list.length && html`<p class="empty">No pending invitations.</p>`}
    ${
      list.length > 0 &&
      html`<ul class="plain-list invitations">${list.map(
        (inv) => html`<li key=${inv.id} data-invitation=${inv.id}>
      <div><strong>${inv.vfolder_name}</strong> <span class="muted small">from ${inv.inviter} · ${inv.perm} · ${fmtTime(inv.created_at)}</span></div>
      ${
        sentByMe(inv, user)
          ? html`<button type="button" class="btn small" onClick=${() => act(inv, false)}>Cancel</button>`
          : html`<div class="toolbar"><button type="button" class="btn small primary" data-test="accept-invitation" onClick=${() => act(inv, true)}>Accept</button>
          <button type="button" class="btn small" data-test="decline-invitation" onClick=${() => act(inv, false)}>Decline</button></div>`
      }
    </li>`,
      )}</ul>`
    }
  </div>`;
}

// The trash: GET /folders?status=trash (the user's own and its projects'
// trashed folders); restore and purge take the id.
function TrashTab() {
  const { data, error, loading, reload } = useData(() => get('/folders?status=trash'), []);
  const [busy, setBusy] = useState(false);
  const [byId, setById] = useState('');
  const act = async (id, name, what) => {
    if (
      what === 'purge' &&
      !(await confirmAction({
        title: `Purge ${name || id}?`,
        message: 'Its files are removed for good.',
        confirmLabel: 'Purge',
        danger: true,
      }))
    )
      return;
    setBusy(true);
    try {
      await post(what === 'purge' ? '/folders/purge' : '/folders/restore-from-trash', { vfolder_id: id });
      toast(what === 'purge' ? `${name || id} purged` : `${name || id} restored`);
      setById('');
    } catch (e) {
      toastError(e);
    } finally {
      setBusy(false);
      reload(true);
    }
  };
  const list = data || [];
  return html`<div>
    <p class="muted small">Trashed folders still count against your quota until purged; the server purges them after its retention time.</p>
    ${error && html`<${ErrorBanner} error=${error} />`}
    ${loading && !data && html`<${Loading} />`}
    ${data && !list.length && html`<p class="empty">Nothing in the trash.</p>`}
    ${
      list.length > 0 &&
      html`<div class="table-wrap"><table><thead><tr><th scope="col">Name</th><th scope="col">Host</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map(
        (
          t,
        ) => html`<tr key=${t.id} data-trash=${t.name}><th scope="row">${t.name}<div class="muted small mono">${t.id}</div></th><td>${t.host}</td><td>${fmtTime(t.created_at)}</td>
        <td class="actions"><button type="button" class="btn small" data-test="restore-folder" disabled=${busy} onClick=${() => act(t.id, t.name, 'restore')}>Restore</button>
          <button type="button" class="btn small danger" data-test="purge-folder" disabled=${busy} onClick=${() => act(t.id, t.name, 'purge')}>Purge</button></td></tr>`,
      )}</tbody></table></div>`
    }
    <form class="inline-form" onSubmit=${(e) => {
      e.preventDefault();
      if (byId.trim()) act(byId.trim(), '', 'restore');
    }}>
      <label for="trash-id">Restore a folder by id</label>
      <input id="trash-id" value=${byId} onInput=${(e) => setById(e.currentTarget.value)} placeholder="folder id (UUID)" class="mono" />
      <button type="submit" class="btn" disabled=${busy || !byId.trim()}>Restore</button>
    </form>
  </div>`;
}

const TABS = [
  ['folders', 'Folders'],
  ['invitations', 'Invitations'],
  ['trash', 'Trash'],
];

export function DataPage({ user, query }) {
  const tab = TABS.some(([k]) => k === query.get('tab')) ? query.get('tab') : 'folders';
  return html`<section class="page">
    <div class="page-head"><h1>Data</h1></div>
    <nav class="tabs" aria-label="Data sections">
      ${TABS.map(([k, l]) => html`<a href=${k === 'folders' ? '#/data' : '#/data?tab=' + k} data-tab=${k} aria-current=${tab === k ? 'page' : undefined}>${l}</a>`)}
    </nav>
    ${tab === 'folders' && html`<${FoldersTab} user=${user} />`}
    ${tab === 'invitations' && html`<${InvitationsTab} user=${user} />`}
    ${tab === 'trash' && html`<${TrashTab} />`}
  </section>`;
}
