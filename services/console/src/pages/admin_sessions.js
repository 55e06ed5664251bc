// Admin · All sessions: every session the admin may see (GET /session?all=true:
// a domain admin its domain's), filters (user, project, status, agent) and
// force-terminate (DELETE /session/{uuid}?forced=true).
import { useState } from 'preact/hooks';
import { api, enc, get } from '../api.js';
import { AdminTabs } from '../admin.js';
import { ALL_STATUSES, LIVE_STATUSES, isLive } from '../resources.js';
import {
  html,
  ErrorBanner,
  Loading,
  Opt,
  StatusBadge,
  confirmAction,
  fmtAge,
  fmtSlots,
  toast,
  toastError,
  useData,
} from '../ui.js';

const STATUS_FILTERS = [['live', 'Active'], ['', 'All'], ...ALL_STATUSES.map((s) => [s, s])];
const agentsOf = (s) => [...new Set((s.kernels || []).map((k) => k.agent).filter(Boolean))];

async function forceTerminate(s, owner) {
  const ok = await confirmAction({
    title: `Force-terminate ${s.sessionId}?`,
    message: `The session of ${owner} is ended at once, without waiting for its agent. Files in mounted folders are kept.`,
    confirmLabel: 'Force-terminate',
    danger: true,
  });
  if (!ok) return false;
  try {
    const r = await api('DELETE', '/session/' + enc(s.sessionUuid), { query: { forced: 'true' } });
    toast(`Session ${s.sessionId}: ${(r && r.status) || 'terminated'}`);
    return true;
  } catch (e) {
    toastError(e);
    return false;
  }
}

export function AdminSessionsPage() {
  const [status, setStatus] = useState('live');
  const [userF, setUserF] = useState('');
  const [project, setProject] = useState('');
  const [agent, setAgent] = useState('');
  const st = status === 'live' ? LIVE_STATUSES.join(',') : status;
  const { data, error, loading, reload } = useData(
    () => get('/session', { all: 'true', status: st, limit: 1000 }),
    [st],
    { interval: 3000 },
  );
  const users = useData(
    () =>
      get('/admin/users', { limit: 1000 }).then(
        (r) => (r && r.items) || [],
        () => [],
      ),
    [],
  );
  const all = (data && data.items) || [];
  const email = (s) => {
    const u = (users.data || []).find((x) => x.id === s.userId);
    return u ? u.email : s.accessKey || s.userId || '–';
  };
  const owners = [...new Map(all.map((s) => [s.userId, email(s)])).entries()].sort((a, b) => a[1].localeCompare(b[1]));
  const projects = [...new Set(all.map((s) => s.groupName).filter(Boolean))].sort();
  const agents = [...new Set(all.flatMap(agentsOf))].sort();
  const shown = all.filter(
    (s) =>
      (!userF || s.userId === userF) &&
      (!project || s.groupName === project) &&
      (!agent || agentsOf(s).includes(agent)),
  );

  const sel = (id, label, value, set, opts) => html`<label class="inline">${label}
    <select id=${id} value=${value} onChange=${(e) => set(e.currentTarget.value)}>
      ${opts.map(([v, l]) => html`<${Opt} value=${v}>${l}<//>`)}</select></label>`;

  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">
        ${sel('admin-session-status', 'Status', status, setStatus, STATUS_FILTERS)}
        ${sel('admin-session-user', 'User', userF, setUserF, [['', 'Anyone'], ...owners])}
        ${sel('admin-session-project', 'Project', project, setProject, [['', 'Any'], ...projects.map((p) => [p, p])])}
        ${sel('admin-session-agent', 'Agent', agent, setAgent, [['', 'Any'], ...agents.map((a) => [a, a])])}
        <button type="button" class="btn" onClick=${() => reload()}>Refresh</button>
      </div></div>
    <${AdminTabs} current="sessions" />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading sessions…" />`}
    ${data && !shown.length && html`<p class="empty">No sessions match.</p>`}
    ${
      shown.length > 0 &&
      html`<div class="table-wrap"><table class="sessions admin-sessions">
      <thead><tr><th scope="col">Name</th><th scope="col">Owner</th><th scope="col">Status</th><th scope="col">Age</th>
        <th scope="col">Resources</th><th scope="col">Project</th><th scope="col">Agent</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${shown.map(
        (s) => html`<tr key=${s.sessionUuid} data-session=${s.sessionId} data-session-uuid=${s.sessionUuid}>
        <th scope="row">${s.sessionId}<div class="muted small">${s.type}${s.scalingGroup ? ' · ' + s.scalingGroup : ''} · <span class="mono">${s.image}</span></div></th>
        <td class="small">${email(s)}<div class="muted">${s.domainName || ''}</div></td>
        <td data-status=${s.status}><${StatusBadge} status=${s.status} />
          ${s.statusInfo && html`<div class="muted small status-info">${s.statusInfo}</div>`}</td>
        <td>${fmtAge(s.age)}</td>
        <td class="small">${fmtSlots(isLive(s.status) && s.occupiedSlots && Object.keys(s.occupiedSlots).length ? s.occupiedSlots : s.requestedSlots)}</td>
        <td>${s.groupName || '–'}</td>
        <td class="small mono">${agentsOf(s).join(', ') || '–'}</td>
        <td class="actions">${
          isLive(s.status) &&
          html`<button type="button" class="btn small danger" data-test="force-terminate"
          aria-label=${'Force-terminate ' + s.sessionId}
          onClick=${async () => {
            if (await forceTerminate(s, email(s))) reload(true);
          }}>Force-terminate</button>`
        }</td>
      </tr>`,
      )}</tbody></table></div>
      <p class="muted small">${shown.length} of ${data.total ?? all.length} sessions${data.total > all.length ? ` (the newest ${all.length} read)` : ''}.</p>`
    }
  </section>`;
}
