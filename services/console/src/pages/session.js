// One session: info, apps, status history, logs; restart and destroy.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { idleSummary } from '../idle.js';
import { isLive } from '../resources.js';
import {
  html,
  ErrorBanner,
  Loading,
  StatusBadge,
  confirmAction,
  fmtAge,
  fmtSlots,
  fmtTime,
  openInNewTab,
  toast,
  toastError,
  useAction,
  useData,
} from '../ui.js';
import { destroySession } from './sessions.js';

export function openApp(session, app) {
  if (app === 'ttyd') {
    const w = window.open(location.pathname + location.search + '#/terminal/' + enc(session), '_blank');
    if (!w) location.hash = '#/terminal/' + enc(session);
    return Promise.resolve();
  }
  return openInNewTab(post('/session/' + enc(session) + '/start-service', { app }).then((r) => r.url));
}

function Apps({ s }) {
  const ports = s.servicePorts || [];
  const running = s.status === 'RUNNING';
  if (!ports.length) return html`<p class="muted">This session has no apps.</p>`;
  return html`<div class="apps">
    ${ports.map(
      (p) => html`<button type="button" class="btn app" data-app=${p.name} disabled=${!running}
        title=${running ? `Open ${p.name} in a new tab` : 'Apps open once the session is RUNNING'}
        onClick=${() => openApp(s.sessionId, p.name).catch(toastError)}>
      ${p.name === 'ttyd' ? 'Terminal' : p.name}<span class="muted small"> ${p.protocol}${p.container_ports ? ' :' + [].concat(p.container_ports).join(',') : ''}</span>
    </button>`,
    )}
    ${!running && html`<p class="muted small">Apps can be opened while the session is RUNNING.</p>`}
  </div>`;
}

function History({ name, status }) {
  const { data, error, loading } = useData(() => get('/session/' + enc(name) + '/history'), [name, status]);
  if (loading && !data) return html`<${Loading} />`;
  return html`<${ErrorBanner} error=${error} />
    ${
      data &&
      html`<ol class="history">${(data.items || []).map(
        (h, i) => html`<li key=${i}>
      <${StatusBadge} status=${h.status} /> <span class="muted small">${fmtTime(h.at)}</span>
      ${h.reason && html`<div class="small">${h.reason}</div>`}</li>`,
      )}</ol>`
    }`;
}

function Logs({ name }) {
  const [follow, setFollow] = useState(false);
  const { data, error, loading, reload } = useData(() => get('/session/' + enc(name) + '/logs'), [name, follow], {
    interval: follow ? 2000 : 0,
  });
  const pre = useRef(null);
  const text = data && data.result ? data.result.logs : '';
  useEffect(() => {
    if (follow && pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [text, follow]);
  return html`<div>
    <div class="toolbar">
      <label class="inline"><input type="checkbox" id="logs-follow" checked=${follow} onChange=${(e) => setFollow(e.currentTarget.checked)} /> Follow</label>
      <button type="button" class="btn small" onClick=${() => reload()} disabled=${loading}>Refresh</button>
    </div>
    <${ErrorBanner} error=${error} />
    ${
      loading && !data
        ? html`<${Loading} label="Loading logs…" />`
        : html`<pre class="logs" ref=${pre} tabindex="0" aria-label="Container logs" data-test="logs">${text || '(no output yet)'}</pre>`
    }
  </div>`;
}

export function SessionPage({ name }) {
  const { data: s, error, loading, reload } = useData(() => get('/session/' + enc(name)), [name], { interval: 3000 });
  const [busy, run] = useAction();
  const restart = () =>
    run(async () => {
      if (
        !(await confirmAction({
          title: `Restart ${name}?`,
          message: 'Its kernels are restarted; mounts and the work directory are kept, running processes end.',
          confirmLabel: 'Restart',
        }))
      )
        return;
      const r = await api('PATCH', '/session/' + enc(name));
      toast(`Session ${name}: ${(r && r.status) || 'restarting'}`);
      reload(true);
    });
  return html`<section class="page">
    <nav class="crumbs" aria-label="Breadcrumb"><a href="#/sessions">Sessions</a> / <span>${name}</span></nav>
    <div class="page-head">
      <h1>${name} ${s && html`<span data-status=${s.status}><${StatusBadge} status=${s.status} /></span>`}</h1>
      ${
        s &&
        isLive(s.status) &&
        s.status !== 'TERMINATING' &&
        html`<div class="toolbar">
        <button type="button" class="btn" data-test="restart" disabled=${busy || s.status !== 'RUNNING'} onClick=${restart}>Restart</button>
        <button type="button" class="btn danger" data-test="destroy" disabled=${busy}
          onClick=${async () => {
            if (await destroySession(name)) reload(true);
          }}>Destroy</button>
      </div>`
      }
    </div>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !s && html`<${Loading} label="Loading the session…" />`}
    ${
      s &&
      html`
      ${s.statusInfo && html`<p class=${'banner ' + (s.status === 'ERROR' ? 'error' : 'info')} role="status">${s.statusInfo}</p>`}
      <div class="grid">
        <section class="card" aria-labelledby="s-info"><h2 id="s-info">Info</h2>
          <dl class="info">
            <dt>Image</dt><dd class="mono">${s.image}${s.architecture ? ` (${s.architecture})` : ''}</dd>
            <dt>Type</dt><dd>${s.type}</dd>
            <dt>Project</dt><dd>${s.groupName || '–'}</dd>
            <dt>Resource group</dt><dd>${s.scalingGroup || s.resourceGroup || '–'}</dd>
            <dt>Resources</dt><dd>${fmtSlots(s.occupiedSlots && Object.keys(s.occupiedSlots).length ? s.occupiedSlots : s.requestedSlots)}</dd>
            <dt>Created</dt><dd>${fmtTime(s.creationTime)} (${fmtAge(s.age)} ago)</dd>
            ${s.startsAt && html`<dt>Starts at</dt><dd>${fmtTime(s.startsAt)}</dd>`}
            ${s.terminationTime && html`<dt>Ended</dt><dd>${fmtTime(s.terminationTime)}</dd>`}
            ${s.result && s.result !== 'UNDEFINED' && html`<dt>Result</dt><dd>${s.result}${s.exitCode != null ? ` (exit ${s.exitCode})` : ''}</dd>`}
            ${idleSummary(s.idleChecks).idle && html`<dt>Idle</dt><dd data-test="idle">${idleSummary(s.idleChecks).idle} (idle timeout ${idleSummary(s.idleChecks).idleTimeout} s${idleSummary(s.idleChecks).idleLevel ? ', set by the ' + idleSummary(s.idleChecks).idleLevel : ''}: no app traffic, terminal or exec)</dd>`}
            ${idleSummary(s.idleChecks).lifetime && html`<dt>Lifetime</dt><dd data-test="lifetime">${idleSummary(s.idleChecks).lifetime}</dd>`}
            <dt>Id</dt><dd class="mono small">${s.sessionUuid}</dd>
          </dl>
        </section>
        <section class="card" aria-labelledby="s-apps"><h2 id="s-apps">Apps</h2><${Apps} s=${s} /></section>
        <section class="card" aria-labelledby="s-hist"><h2 id="s-hist">Status history</h2><${History} name=${name} status=${s.status} /></section>
        ${
          s.kernels &&
          s.kernels.length > 0 &&
          html`<section class="card" aria-labelledby="s-kern"><h2 id="s-kern">Kernels</h2>
          ${s.clusterSize > 1 && html`<p class="small muted" data-test="cluster-mode">${s.clusterMode === 'multi-node' ? 'Multi node' : 'Single node'} cluster of ${s.clusterSize} kernels: each reaches the others by name.</p>`}
          <div class="table-wrap"><table data-test="kernels"><thead><tr><th scope="col">Kernel</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Node</th><th scope="col">Exit</th></tr></thead>
          <tbody>${s.kernels.map(
            (
              k,
            ) => html`<tr key=${k.id} data-kernel=${k.name || k.id}><td class="mono">${k.name || k.role + (k.idx != null ? ' #' + k.idx : '')}</td><td>${k.role}</td><td><${StatusBadge} status=${k.status} />
            ${k.statusInfo && html`<div class="small muted">${k.statusInfo}</div>`}</td><td class="small" data-test="kernel-node">${k.agent || '–'}</td><td>${k.exitCode ?? '–'}</td></tr>`,
          )}</tbody></table></div>
        </section>`
        }
      </div>
      <section class="card wide-card" aria-labelledby="s-logs"><h2 id="s-logs">Container logs</h2><${Logs} name=${name} /></section>`
    }
  </section>`;
}
