// Sessions: a list that refreshes itself, a status filter, the launcher.
import { useState } from 'preact/hooks';
import { api, enc, get } from '../api.js';
import { idleSummary } from '../idle.js';
import { ALL_STATUSES, LIVE_STATUSES, isLive } from '../resources.js';
import {
  Opt,
  html,
  ErrorBanner,
  Loading,
  StatusBadge,
  confirmAction,
  fmtAge,
  fmtSlots,
  toast,
  toastError,
  useData,
} from '../ui.js';
import { Launcher } from './launcher.js';

const FILTERS = [['', 'All'], ['live', 'Active'], ...ALL_STATUSES.map((s) => [s, s])];

export async function destroySession(name) {
  const ok = await confirmAction({
    title: `Destroy session ${name}?`,
    message: 'Its processes are stopped and its containers removed. Files in mounted folders are kept.',
    confirmLabel: 'Destroy',
    danger: true,
  });
  if (!ok) return false;
  try {
    const r = await api('DELETE', '/session/' + enc(name));
    toast(`Session ${name}: ${(r && r.status) || 'destroyed'}`);
    return true;
  } catch (e) {
    toastError(e);
    return false;
  }
}

function Progress({ name, onDone }) {
  const { data, error } = useData(() => get('/session/' + enc(name)), [name], { interval: 1500 });
  const st = data && data.status;
  const finished = st && !['PENDING', 'SCHEDULED', 'PREPARING', 'PULLING'].includes(st);
  return html`<div class=${'banner ' + (st === 'ERROR' || st === 'CANCELLED' ? 'error' : finished ? 'success' : 'info')}
      role="status" aria-live="polite" data-test="launch-progress" data-launching=${name}>
    ${!finished && html`<span class="spinner" aria-hidden="true"></span>`}
    <span class="banner-text">Session <a href=${'#/sessions/' + enc(name)}>${name}</a>:
      ${st ? html` <${StatusBadge} status=${st} />` : ' creating…'}
      ${data && data.statusInfo && html` <span class="muted">${data.statusInfo}</span>`}
      ${error && html` <span>${error.message}</span>`}</span>
    <button type="button" class="btn small ghost" aria-label="Dismiss" onClick=${onDone}>×</button>
  </div>`;
}

export function SessionsPage({ user, query }) {
  const [filter, setFilter] = useState('');
  const [launching, setLaunching] = useState([]);
  const showLauncher = query.get('launch') === '1';
  const status = filter === 'live' ? LIVE_STATUSES.join(',') : filter;
  const { data, error, loading, reload } = useData(() => get('/session', { status, limit: 100 }), [status], {
    interval: 3000,
  });
  const items = (data && data.items) || [];

  const closeLauncher = () => {
    location.hash = '#/sessions';
  };
  const launched = (name) => {
    setLaunching((l) => [name, ...l.filter((n) => n !== name)]);
    closeLauncher();
    reload(true);
  };

  return html`<section class="page">
    <div class="page-head">
      <h1>Sessions</h1>
      <div class="toolbar">
        <label class="inline">Status
          <select id="session-filter" value=${filter} onChange=${(e) => setFilter(e.currentTarget.value)}>
            ${FILTERS.map(([v, l]) => html`<${Opt} value=${v}>${l}<//>`)}
          </select></label>
        <button type="button" class="btn" onClick=${() => reload()} aria-label="Refresh the list">Refresh</button>
        <a class="btn primary" href="#/sessions?launch=1" data-test="launch" role="button">Start a session</a>
      </div>
    </div>
    ${launching.map((n) => html`<${Progress} key=${n} name=${n} onDone=${() => setLaunching((l) => l.filter((x) => x !== n))} />`)}
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading sessions…" />`}
    ${data && !items.length && html`<p class="empty">No sessions${filter ? ' with this status' : ''}.</p>`}
    ${
      items.length > 0 &&
      html`<div class="table-wrap"><table class="sessions">
      <thead><tr><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Age</th>
        <th scope="col">Resources</th><th scope="col">Image</th><th scope="col">Project</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${items.map(
        (s) => html`<tr key=${s.sessionUuid || s.sessionId} data-session=${s.sessionId}>
        <th scope="row"><a href=${'#/sessions/' + enc(s.sessionId)}>${s.sessionId}</a>
          <div class="muted small">${s.type}${s.scalingGroup ? ' · ' + s.scalingGroup : ''}</div></th>
        <td data-status=${s.status}><${StatusBadge} status=${s.status} />
          ${s.statusInfo && html`<div class="muted small status-info">${s.statusInfo}</div>`}
          ${idleSummary(s.idleChecks).idle && html`<div class="muted small" data-test="idle">idle: ${idleSummary(s.idleChecks).idle}</div>`}</td>
        <td>${fmtAge(s.age)}</td>
        <td class="small">${fmtSlots(isLive(s.status) && s.occupiedSlots && Object.keys(s.occupiedSlots).length ? s.occupiedSlots : s.requestedSlots)}</td>
        <td class="small mono">${s.image}</td>
        <td>${s.groupName || '–'}</td>
        <td class="actions">${
          isLive(s.status) &&
          s.status !== 'TERMINATING' &&
          html`<button type="button" class="btn small danger"
          data-test="destroy" aria-label=${'Destroy ' + s.sessionId}
          onClick=${async () => {
            if (await destroySession(s.sessionId)) reload(true);
          }}>Destroy</button>`
        }</td>
      </tr>`,
      )}</tbody>
    </table></div>
    ${data.total > items.length && html`<p class="muted small">Showing the newest ${items.length} of ${data.total}.</p>`}`
    }
    ${showLauncher && html`<${Launcher} user=${user} onClose=${closeLauncher} onLaunched=${launched} />`}
  </section>`;
}
