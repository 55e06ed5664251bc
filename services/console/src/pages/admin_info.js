// Admin · Information: versions and the health of every dependency, as
// `tessera status` shows them (the gateway's /readyz: PostgreSQL, Redis,
// the bus, the internal services it forwards to), the API version (GET /)
// and every agent's version (GET /admin/agents).
import { get, openGet } from '../api.js';
import { AdminTabs } from '../admin.js';
import { html, ErrorBanner, Loading, StatusBadge, fmtAge, useData } from '../ui.js';

// What each readiness check of the gateway is.
const CHECKS = {
  postgresql: ['PostgreSQL', 'database'],
  redis: ['Redis', 'cache and occupancy'],
  kafka: ['The bus (Kafka protocol)', 'events between services'],
  auth: ['tessera-auth', 'users, keypairs, policies'],
  registry: ['tessera-registry', 'sessions, agents, images'],
  vfolder: ['tessera-vfolder', 'folders and transfers'],
  wsproxy: ['tessera-wsproxy', 'apps and terminals'],
  consumers: ['Bus consumers', 'the gateway reads the bus'],
  'auth-events': ['Auth events', 'revoked keys and changed users reach the gateway'],
  lifecycle: ['The gateway itself', 'starting or draining'],
};
const what = (k) => CHECKS[k] || [k, k.endsWith('-events') ? `bus consumer of ${k.slice(0, -7)} events` : `check ${k}`];

async function load() {
  const [root, ready, agents] = await Promise.all([
    openGet('/').then((r) => r.data),
    openGet('/readyz').then((r) => r.data, (e) => ({ status: 'unreachable', checks: {}, error: e.message })),
    get('/admin/agents', { limit: 1000 }).then((r) => (r && r.items) || [], () => null),
  ]);
  return { root, ready, agents, at: Date.now() };
}

const Health = ({ v }) => v === 'ok'
  ? html`<span data-health="ok"><span class="badge st-running">ok</span></span>`
  : html`<span data-health="failed"><span class="badge st-error">failed</span> <span class="small">${v}</span></span>`;

export function AdminInfoPage() {
  const { data, error, loading, reload } = useData(load, [], { interval: 10000 });
  const checks = data ? Object.entries(data.ready.checks || {}) : [];
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar"><button type="button" class="btn" onClick=${() => reload()}>Refresh</button></div></div>
    <${AdminTabs} current="info" />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Reading the platform's state…" />`}
    ${data && html`<div class="grid info-grid">
      <div class="stack">
      <section class="card" aria-labelledby="info-ver"><h2 id="info-ver">Versions</h2>
        <dl class="info" data-test="versions">
          <dt>Console</dt><dd class="mono">${(document.querySelector('meta[name=generator]')?.content || '–').replace('tessera-console ', '')}</dd>
          <dt>Tessera (gateway)</dt><dd class="mono" data-version="gateway">${data.root.tessera || '–'}</dd>
          <dt>API</dt><dd class="mono">${data.root.version || '–'}</dd>
          <dt>Backend.AI manager</dt><dd class="mono">${data.root.manager || '–'}</dd>
        </dl>
        <p class="muted small">The services are released together: each answers its version at <code>/healthz</code> on its own address.</p>
      </section>
      <section class="card" aria-labelledby="info-agents"><h2 id="info-agents">Agents</h2>
        ${data.agents === null ? html`<p class="muted small">The agent list was refused.</p>`
          : !data.agents.length ? html`<p class="muted small">No agent has registered.</p>`
          : html`<div class="table-wrap"><table><thead><tr><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Version</th><th scope="col">Heartbeat</th></tr></thead>
            <tbody>${data.agents.map((a) => html`<tr key=${a.id} data-info-agent=${a.id}>
              <th scope="row" class="mono">${a.id}<div class="muted small">${a.hostname || ''}</div></th>
              <td><${StatusBadge} status=${a.status} /></td><td class="mono">${a.version || '–'}</td>
              <td class="small">${a.last_heartbeat ? fmtAge(Math.max(0, data.at - new Date(a.last_heartbeat).getTime())) + ' ago' : '–'}</td></tr>`)}</tbody></table></div>`}
      </section>
      </div>
      <section class="card" aria-labelledby="info-health"><h2 id="info-health">Health
        <span data-test="ready-status" data-ready=${data.ready.status}><span class=${'badge ' + (data.ready.status === 'ready' ? 'st-running' : 'st-error')}>${data.ready.status}</span></span></h2>
        ${data.ready.error && html`<p class="banner error" role="alert">${data.ready.error}</p>`}
        <div class="table-wrap"><table><thead><tr><th scope="col">Check</th><th scope="col">What it is</th><th scope="col">State</th></tr></thead>
          <tbody>${checks.map(([k, v]) => html`<tr key=${k} data-check=${k}>
            <th scope="row">${what(k)[0]}</th><td class="muted small">${what(k)[1]}</td>
            <td><${Health} v=${v} /></td></tr>`)}</tbody></table></div>
        <p class="muted small">As <code>tessera status</code> shows it: the gateway's <code>/readyz</code>, read every 10 s.</p>
      </section>
    </div>`}
  </section>`;
}
