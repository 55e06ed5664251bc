// Admin · Agents: every node with its capacity and occupancy per slot type
// (CPU, memory, each GPU with its fractional shares), status, heartbeat,
// whether it is drained and the sessions on it; superadmins drain and
// undrain it (POST /admin/agents/{id}/drain|undrain). Refreshes every 3 s,
// keeping what it shows meanwhile. Paged: 100 agents a page (?offset=), the
// counts from the API's totals, so 10,000 agents are as quick as 100.
import { useState } from 'preact/hooks';
import { enc, get, post } from '../api.js';
import { pageOf } from '../paging.js';
import { AdminTabs, Bar, isSuperadmin } from '../admin.js';
import { LIVE_STATUSES } from '../resources.js';
import {
  html,
  ErrorBanner,
  Loading,
  StatusBadge,
  confirmAction,
  fmtAge,
  fmtBytes,
  fmtSlots,
  fmtTime,
  slotLabel,
  toast,
  useAction,
  useData,
} from '../ui.js';

const num = (v) => {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
};
const round2 = (v) => String(Math.round(v * 100) / 100);

const PAGE = 100;

async function load(offset) {
  const [agents, alive, sessions] = await Promise.all([
    get('/admin/agents', { limit: PAGE, offset }),
    get('/admin/agents', { status: 'ALIVE', limit: 1 }).catch(() => null),
    get('/session', { all: 'true', status: LIVE_STATUSES.join(','), limit: 1000 }).catch(() => null),
  ]);
  return {
    agents: (agents && agents.items) || [],
    total: agents ? Number(agents.total) || 0 : 0,
    alive: alive ? Number(alive.total) || 0 : null,
    offset,
    sessions: sessions ? sessions.items || [] : null,
    at: Date.now(),
  };
}

// Sessions with a kernel on agent id.
const sessionsOn = (sessions, id) => (sessions || []).filter((s) => (s.kernels || []).some((k) => k.agent === id));

// Drained: a superadmin took it out of placement (schedulable false).
export const isDrained = (a) => !!a && a.schedulable === false;

function DrainButton({ a, onDone }) {
  const [busy, run] = useAction();
  const drained = isDrained(a);
  const click = () =>
    run(async () => {
      if (
        !drained &&
        !(await confirmAction({
          title: `Drain ${a.id}?`,
          confirmLabel: 'Drain',
          message: 'No new sessions will be placed on this agent; the sessions running there go on until they end.',
        }))
      )
        return;
      await post(`/admin/agents/${enc(a.id)}/${drained ? 'undrain' : 'drain'}`);
      toast(`${a.id} ${drained ? 'undrained' : 'drained'}`);
      onDone();
    });
  return html`<button type="button" class="btn small" data-test="agent-drain" disabled=${busy}
    onClick=${click}>${drained ? 'Undrain' : 'Drain'}</button>`;
}

function AgentCard({ a, sessions, now, su, onChanged }) {
  const slots = a.slots || {};
  const occ = a.occupied_slots || {};
  const gpus = (a.devices || []).filter((d) => d.slot_name === 'cuda.device');
  const other = Object.keys(slots).filter((k) => !['cpu', 'mem', 'cuda.device', 'cuda.shares'].includes(k));
  const mine = sessionsOn(sessions, a.id);
  const hb = a.last_heartbeat ? now - new Date(a.last_heartbeat).getTime() : NaN;
  return html`<section class="card agent-card" data-agent=${a.id} data-agent-status=${a.status} aria-labelledby=${'agent-' + a.id}>
    <div class="toolbar spread">
      <h2 id=${'agent-' + a.id}><span class="mono">${a.id}</span> <${StatusBadge} status=${a.status} />
        ${isDrained(a) && html` <span class="badge warn" data-test="agent-drained" title="No new sessions are placed here">drained</span>`}</h2>
      <span class="toolbar"><span class="muted small" title=${fmtTime(a.last_heartbeat)}>heartbeat ${Number.isFinite(hb) ? fmtAge(Math.max(0, hb)) + ' ago' : '–'}</span>
        ${su && html`<${DrainButton} a=${a} onDone=${onChanged} />`}</span>
    </div>
    <p class="muted small agent-meta">${[
      a.hostname || '–',
      html`<span class="mono">${a.addr || '–'}</span>`,
      `group ${a.resource_group || '–'}`,
      a.architecture,
      a.runtime,
      a.version && 'v' + a.version,
    ]
      .filter(Boolean)
      .map((x, i) => html`${i ? ' · ' : ''}${x}`)}</p>
    ${a.status_info && html`<p class=${'small ' + (a.status === 'ALIVE' ? 'muted' : 'warn')}>${a.status_info}</p>`}
    ${a.occupied_slots === null && html`<p class="warn small">Occupancy unknown (Redis did not answer).</p>`}
    <${Bar} label="CPU" test="cpu" used=${num(occ.cpu)} cap=${num(slots.cpu)} />
    <${Bar} label="Memory" test="mem" used=${num(occ.mem)} cap=${num(slots.mem)} fmt=${fmtBytes} />
    ${gpus.map((d) => {
      const cap = num(d.shares_capacity) || num(d.capacity) || 1;
      return html`<${Bar} key=${d.device_id} test=${'gpu-' + d.device_id}
        label=${html`GPU ${d.device_id} <span class="muted small">${[d.model, d.memory_bytes && fmtBytes(d.memory_bytes), d.mock && !/mock/i.test(d.model || '') && 'mock'].filter(Boolean).join(' · ')}</span>`}
        used=${num(d.occupied_shares)} cap=${cap} fmt=${round2} />`;
    })}
    ${
      !gpus.length &&
      slots['cuda.shares'] !== undefined &&
      html`<${Bar} label="GPU shares" test="cuda.shares"
      used=${num(occ['cuda.shares'])} cap=${num(slots['cuda.shares'])} fmt=${round2} />`
    }
    ${other.map((k) => html`<${Bar} key=${k} label=${slotLabel(k)} test=${k} used=${num(occ[k])} cap=${num(slots[k])} />`)}
    <h3 class="sub">Sessions on it (${sessions ? mine.length : '?'})</h3>
    ${
      sessions === null
        ? html`<p class="muted small">The session list was refused.</p>`
        : mine.length
          ? html`<ul class="plain-list agent-sessions">${mine.map(
              (s) => html`<li key=${s.sessionUuid} data-agent-session=${s.sessionId}>
          <span><span class="mono">${s.sessionId}</span> <${StatusBadge} status=${s.status} /></span>
          <span class="small muted">${fmtSlots(s.occupiedSlots && Object.keys(s.occupiedSlots).length ? s.occupiedSlots : s.requestedSlots)}</span></li>`,
            )}</ul>`
          : html`<p class="muted small">None.</p>`
    }
  </section>`;
}

export function AdminAgentsPage({ user }) {
  const [offset, setOffset] = useState(0);
  const { data, error, loading, reload } = useData(() => load(offset), [offset], { interval: 3000 });
  const agents = (data && data.agents) || [];
  const total = data ? data.total : 0;
  const alive = data && data.alive !== null ? data.alive : agents.filter((a) => a.status === 'ALIVE').length;
  const drained = agents.filter(isDrained).length;
  const page = pageOf(offset, PAGE, total, 'agents');
  const pager =
    total > PAGE &&
    html`<div class="toolbar" data-test="agents-pager">
      <button type="button" class="btn small" disabled=${page.prev === null} onClick=${() => setOffset(page.prev)}>Previous</button>
      <span class="muted small" data-test="agents-page">${page.label}</span>
      <button type="button" class="btn small" disabled=${page.next === null} onClick=${() => setOffset(page.next)}>Next</button>
    </div>`;
  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar"><span class="muted small" role="status">${data ? `${alive.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} agents alive${drained ? ` · ${drained} drained on this page` : ''} · updated ${new Date(data.at).toLocaleTimeString()}` : ''}</span>
        <button type="button" class="btn" onClick=${() => reload(true)}>Refresh</button></div></div>
    <${AdminTabs} current="agents" />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading agents…" />`}
    ${data && !agents.length && html`<p class="empty">No agent has registered.</p>`}
    ${pager}
    <div class="grid">${agents.map(
      (a) => html`<${AgentCard} key=${a.id} a=${a} sessions=${data.sessions} now=${data.at}
      su=${isSuperadmin(user)} onChanged=${() => reload(true)} />`,
    )}</div>
  </section>`;
}
