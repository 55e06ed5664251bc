// Admin · Information: the version and health of every service and of the
// dependencies, as `tessera status --all` shows them: GET /admin/status
// (superadmins; each service's /healthz and /readyz probed by the gateway
// within a short time limit), the API version (GET /) and every agent's
// version (GET /admin/agents). When the platform status is refused or fails,
// the gateway's own /readyz checks are shown instead, with the reason.
import { get, openGet } from '../api.js';
import { AdminTabs } from '../admin.js';
import { html, ErrorBanner, Loading, StatusBadge, errText, fmtAge, useData } from '../ui.js';

// What each readiness check of the gateway is (the fallback table).
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

// The dependencies, in this order, with what each is.
const DEPS = [
  ['postgresql', 'PostgreSQL', 'auth, registry and vfolder data'],
  ['redis', 'Redis', 'occupancy, app routes, rate limits'],
  ['kafka', 'The bus (Kafka protocol)', 'events between services'],
  ['oci-registry', 'OCI registry', 'images (tessera-registry’s oci.registry)'],
];

async function load() {
  const [root, ready, status, agents] = await Promise.all([
    openGet('/').then((r) => r.data),
    openGet('/readyz').then(
      (r) => r.data,
      (e) => ({ status: 'unreachable', checks: {}, error: e.message }),
    ),
    get('/admin/status').then(
      (r) => ({ ok: r }),
      (e) => ({ error: errText(e) }),
    ),
    get('/admin/agents', { limit: 1000 }).then(
      (r) => (r && r.items) || [],
      () => null,
    ),
  ]);
  return { root, ready, status, agents, at: Date.now() };
}

const Health = ({ v }) =>
  v === 'ok'
    ? html`<span data-health="ok"><span class="badge st-running">ok</span></span>`
    : html`<span data-health="failed"><span class="badge st-error">failed</span> <span class="small">${v}</span></span>`;

const BAD = { color: 'var(--danger)' };

// One service's state: ready, not ready (its failed checks), unreachable (why).
function ServiceState({ s }) {
  if (s.state === 'ready') return html`<span class="badge st-running">ready</span>`;
  const failed = Object.entries(s.failed_checks || {});
  return html`<span class="badge st-error">${s.state}</span>
    ${s.error && html`<div class="small" style=${BAD} data-test="reason">${s.error}</div>`}
    ${failed.map(([k, v]) => html`<div class="small" style=${BAD} data-failed-check=${k}><span class="mono">${k}</span>: ${v}</div>`)}`;
}

function Services({ st }) {
  return html`<section class="card span-all" aria-labelledby="info-svcs"><h2 id="info-svcs">Services
    <span data-test="platform-status" data-status=${st.status}><span class=${'badge ' + (st.status === 'ok' ? 'st-running' : 'st-error')}>${st.status === 'ok' ? 'all ready' : st.status}</span></span></h2>
    ${st.agents_error && html`<p class="banner error" role="alert">The agents could not be listed: ${st.agents_error}</p>`}
    <div class="table-wrap"><table><thead><tr><th scope="col">Service</th><th scope="col">Address</th><th scope="col">Version</th><th scope="col">State</th><th scope="col">Latency</th></tr></thead>
      <tbody>${st.services.map(
        (
          s,
        ) => html`<tr key=${s.kind + s.service} data-service=${s.service} data-kind=${s.kind} data-state=${s.state} style=${s.state === 'unreachable' ? BAD : null}>
        <th scope="row">${s.kind === 'agent' ? html`<span class="muted small">agent </span>` : ''}<span class="mono">${s.service}</span></th>
        <td class="mono small">${s.address || '–'}</td>
        <td class="mono" data-version=${s.service}>${s.version || '–'}</td>
        <td><${ServiceState} s=${s} /></td>
        <td class="small">${s.latency_ms == null ? '–' : `${s.latency_ms} ms`}</td></tr>`,
      )}</tbody></table></div>
    <p class="muted small">Each service’s <code>/healthz</code> and <code>/readyz</code>, probed by the gateway at once within ${st.timeout_ms / 1000} s, read every 10 s (as <code>tessera status --all</code>).</p>
  </section>`;
}

function Dependencies({ deps }) {
  return html`<section class="card span-all" aria-labelledby="info-deps"><h2 id="info-deps">Dependencies</h2>
    <div class="table-wrap"><table><thead><tr><th scope="col">Dependency</th><th scope="col">Version</th><th scope="col">State</th></tr></thead>
      <tbody>${DEPS.map(([k, name, desc]) => {
        const d = deps[k] || { status: 'unknown' };
        return html`<tr key=${k} data-dep=${k}>
          <th scope="row">${name}<div class="muted small">${desc}${d.url ? html` · <span class="mono">${d.url}</span>` : ''}</div></th>
          <td class="mono" data-dep-version=${k}>${d.version || '–'}</td>
          <td><${Health} v=${d.status} />${d.reported_by && d.reported_by.length ? html`<div class="muted small">seen by ${d.reported_by.join(', ')}</div>` : ''}</td></tr>`;
      })}</tbody></table></div>
  </section>`;
}

// The gateway's own /readyz: the fallback when the platform status is not there.
function GatewayHealth({ ready, why }) {
  const checks = Object.entries(ready.checks || {});
  return html`<section class="card" aria-labelledby="info-health"><h2 id="info-health">Gateway health
    <span data-test="ready-status" data-ready=${ready.status}><span class=${'badge ' + (ready.status === 'ready' ? 'st-running' : 'st-error')}>${ready.status}</span></span></h2>
    <p class="banner error" role="alert" data-test="status-refused">Every service’s state could not be read: ${why}</p>
    ${ready.error && html`<p class="banner error" role="alert">${ready.error}</p>`}
    <div class="table-wrap"><table><thead><tr><th scope="col">Check</th><th scope="col">What it is</th><th scope="col">State</th></tr></thead>
      <tbody>${checks.map(
        ([k, v]) => html`<tr key=${k} data-check=${k}>
        <th scope="row">${what(k)[0]}</th><td class="muted small">${what(k)[1]}</td>
        <td><${Health} v=${v} /></td></tr>`,
      )}</tbody></table></div>
    <p class="muted small">As <code>tessera status</code> shows it: the gateway’s <code>/readyz</code>, read every 10 s.</p>
  </section>`;
}

export function AdminInfoPage() {
  const { data, error, loading, reload } = useData(load, [], { interval: 10000 });
  const st = data && data.status.ok;
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar"><button type="button" class="btn" onClick=${() => reload()}>Refresh</button></div></div>
    <${AdminTabs} current="info" />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Reading the platform's state…" />`}
    ${
      data &&
      html`<div class="grid info-grid">
      ${st && html`<${Services} st=${st} />`}
      ${
        st
          ? html`<${Dependencies} deps=${st.dependencies || {}} />`
          : html`<${GatewayHealth} ready=${data.ready} why=${data.status.error} />`
      }
      <div class="stack">
      <section class="card" aria-labelledby="info-ver"><h2 id="info-ver">Versions</h2>
        <dl class="info" data-test="versions">
          <dt>Console</dt><dd class="mono">${(document.querySelector('meta[name=generator]')?.content || '–').replace('tessera-console ', '')}</dd>
          <dt>Tessera (gateway)</dt><dd class="mono" data-version="gateway-root">${data.root.tessera || '–'}</dd>
          <dt>API</dt><dd class="mono">${data.root.version || '–'}</dd>
          <dt>Backend.AI manager</dt><dd class="mono">${data.root.manager || '–'}</dd>
        </dl>
        <p class="muted small">The services are released together: each answers its version at <code>/healthz</code> on its own address.</p>
      </section>
      <section class="card" aria-labelledby="info-agents"><h2 id="info-agents">Agents</h2>
        ${
          data.agents === null
            ? html`<p class="muted small">The agent list was refused.</p>`
            : !data.agents.length
              ? html`<p class="muted small">No agent has registered.</p>`
              : html`<div class="table-wrap"><table><thead><tr><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Version</th><th scope="col">Heartbeat</th></tr></thead>
            <tbody>${data.agents.map(
              (a) => html`<tr key=${a.id} data-info-agent=${a.id}>
              <th scope="row" class="mono">${a.id}<div class="muted small">${a.hostname || ''}</div></th>
              <td><${StatusBadge} status=${a.status} /></td><td class="mono">${a.version || '–'}</td>
              <td class="small">${a.last_heartbeat ? fmtAge(Math.max(0, data.at - new Date(a.last_heartbeat).getTime())) + ' ago' : '–'}</td></tr>`,
            )}</tbody></table></div>`
        }
      </section>
      </div>
    </div>`
    }
  </section>`;
}
