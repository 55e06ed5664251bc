// Summary: running sessions, use against limits, free capacity, folders.
import { enc, get } from '../api.js';
import { checkPresets, keypairPolicy, liveSessions, resourceGroups, slotsToNumbers, sumSlots } from '../resources.js';
import {
  html,
  ErrorBanner,
  Loading,
  Meter,
  StatusBadge,
  errText,
  fmtAge,
  fmtBytes,
  fmtSlot,
  fmtSlots,
  slotLabel,
  useData,
} from '../ui.js';

function Unavailable({ error, what }) {
  if (error && error.status === 403) return html`<p class="muted">${what} are visible to administrators only.</p>`;
  return html`<${ErrorBanner} error=${error} />`;
}

function SessionsCard() {
  const { data, error, loading, reload } = useData(liveSessions, [], { interval: 5000 });
  return html`<section class="card" aria-labelledby="sum-sessions">
    <h2 id="sum-sessions">Active sessions ${data && html`<span class="count">${data.length}</span>`}</h2>
    ${loading && !data && html`<${Loading} />`}
    <${ErrorBanner} error=${error} onRetry=${reload} />
    ${data && !data.length && html`<p class="muted">No active sessions. <a href="#/sessions?launch=1">Start one</a>.</p>`}
    ${
      data &&
      data.length > 0 &&
      html`<ul class="plain-list">
      ${data.slice(0, 10).map(
        (s) => html`<li key=${s.sessionUuid || s.sessionId}>
        <a href=${'#/sessions/' + enc(s.sessionId)}>${s.sessionId}</a>
        <${StatusBadge} status=${s.status} />
        <span class="muted small">${s.image} · ${fmtAge(s.age)}</span>
      </li>`,
      )}
    </ul>
    ${data.length > 10 && html`<p><a href="#/sessions">All ${data.length} sessions</a></p>`}`
    }
  </section>`;
}

function UsageCard({ user }) {
  const { data, error, loading } = useData(
    async () => {
      const [sessions, pol, cp] = await Promise.all([
        liveSessions(),
        keypairPolicy(user),
        checkPresets().catch(() => null),
      ]);
      if (cp && cp.keypair_limits) {
        // the resource API: limits and use as the scheduler counts them
        return {
          used: slotsToNumbers(cp.keypair_using),
          count: sessions.length,
          ...pol,
          cp,
          policy: { ...(pol.policy || {}), total_resource_slots: slotsToNumbers(cp.keypair_limits) },
        };
      }
      return { used: sumSlots(sessions), count: sessions.length, ...pol };
    },
    [user.access_key],
    { interval: 10000 },
  );
  const lim = (data && data.policy && data.policy.total_resource_slots) || {};
  const keys = data ? [...new Set([...Object.keys(lim), ...Object.keys(data.used)])] : [];
  return html`<section class="card" aria-labelledby="sum-usage">
    <h2 id="sum-usage">Resources in use</h2>
    ${loading && !data && html`<${Loading} />`}
    <${ErrorBanner} error=${error} />
    ${
      data &&
      html`
      ${keys.length === 0 && html`<p class="muted">Nothing allocated.</p>`}
      ${keys.map(
        (k) => html`<${Meter} key=${k} label=${slotLabel(k)} used=${data.used[k] || 0}
        limit=${lim[k] === null ? undefined : lim[k]} fmt=${(v) => fmtSlot(k, v)} />`,
      )}
      ${
        data.policy &&
        data.policy.max_concurrent_sessions != null &&
        html`<${Meter} label="Sessions"
        used=${data.count} limit=${data.policy.max_concurrent_sessions} />`
      }
      <p class="muted small">${
        data.cp
          ? `Your keypair's limits${data.name ? ` (policy “${data.name}”)` : ''}; what remains also counts your project's and domain's limits.`
          : data.policy
            ? `Limits of keypair policy “${data.name}”.`
            : data.error && data.error.status === 403
              ? `Your limits (policy${data.name ? ' “' + data.name + '”' : ''}) are not visible to your role; a launch beyond them is refused with a message.`
              : data.error
                ? `Limits unavailable: ${errText(data.error)}`
                : ''
      }</p>`
    }
  </section>`;
}

function GroupsCard() {
  const { data: cp } = useData(() => checkPresets(), [], { interval: 15000 });
  const { data, error, loading } = useData(resourceGroups, [], { interval: 15000 });
  const mine = cp && cp.scaling_groups ? Object.entries(cp.scaling_groups) : null;
  return html`<section class="card" aria-labelledby="sum-groups">
    <h2 id="sum-groups">Resource groups</h2>
    ${
      mine &&
      html`<div class="table-wrap"><table data-test="my-groups">
      <thead><tr><th scope="col">Group</th><th scope="col">You use</th><th scope="col">You may still use</th></tr></thead>
      <tbody>${mine.map(
        ([name, g]) => html`<tr key=${name}><th scope="row">${name}</th>
        <td class="small">${fmtSlots(slotsToNumbers(g.using))}</td><td class="small">${fmtSlots(slotsToNumbers(g.remaining))}</td></tr>`,
      )}</tbody>
    </table></div>`
    }
    ${loading && !data && !mine && html`<${Loading} />`}
    ${error && !mine && html`<${Unavailable} error=${error} what="Resource groups and their free capacity" />`}
    ${data && mine && html`<h3 class="sub">Capacity (administrators)</h3>`}
    ${data && !data.length && html`<p class="muted">No resource groups.</p>`}
    ${
      data &&
      data.map(
        (g) => html`<div key=${g.name} class="group-block" data-group=${g.name}>
      <h3>${g.name} <span class="muted small">${g.agentCount} agent${g.agentCount === 1 ? '' : 's'}${g.is_active === false ? ' · inactive' : ''}</span></h3>
      ${!Object.keys(g.capacity).length && html`<p class="muted small">No live agents.</p>`}
      ${Object.keys(g.capacity).map(
        (k) => html`<${Meter} key=${k} label=${`${slotLabel(k)} (free ${fmtSlot(k, g.free[k])})`}
        used=${g.occupied[k] || 0} limit=${g.capacity[k]} fmt=${(v) => fmtSlot(k, v)} />`,
      )}
    </div>`,
      )
    }
  </section>`;
}

function FoldersCard() {
  const { data, error, loading, reload } = useData(async () => {
    const list = (await get('/folders')) || [];
    return list.filter((f) => !f.status || f.status === 'ready' || f.status === 'cloning');
  }, []);
  return html`<section class="card" aria-labelledby="sum-folders">
    <h2 id="sum-folders">Folders ${data && html`<span class="count">${data.length}</span>`}</h2>
    ${loading && !data && html`<${Loading} />`}
    <${ErrorBanner} error=${error} onRetry=${reload} />
    ${data && !data.length && html`<p class="muted">No folders yet. <a href="#/data">Create one</a>.</p>`}
    ${
      data &&
      data.slice(0, 8).map(
        (f) => html`<div key=${f.id}>
      <${Meter} label=${html`<a href=${'#/data/' + enc(f.name)}>${f.name}</a>`} used=${f.used_bytes || 0}
        limit=${f.max_size || undefined} fmt=${fmtBytes} />
    </div>`,
      )
    }
    ${data && data.length > 8 && html`<p><a href="#/data">All ${data.length} folders</a></p>`}
  </section>`;
}

export function SummaryPage({ user }) {
  return html`<section class="page">
    <div class="page-head"><h1>Summary</h1>
      <a class="btn primary" href="#/sessions?launch=1">Start a session</a></div>
    <div class="grid">
      <${SessionsCard} />
      <${UsageCard} user=${user} />
      <${GroupsCard} />
      <${FoldersCard} />
    </div>
  </section>`;
}
