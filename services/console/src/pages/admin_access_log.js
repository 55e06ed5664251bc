// Admin · Access log: the API access log (GET /admin/access-log, docs/api.md
// "Admin REST"; `tessera admin access-log` in the CLI) with its filters as a
// form, newest first, 50 records a page with "Load more" (offset/limit).
// The API scopes it: a domain admin sees its domain's users' records.
import { useEffect, useRef, useState } from 'preact/hooks';
import { get } from '../api.js';
import { AdminTabs } from '../admin.js';
import { html, ErrorBanner, Loading, Opt, fmtTime } from '../ui.js';

const PAGE = 50;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const EMPTY = { access_key: '', user_id: '', method: '', path_prefix: '', status: '', since: '', until: '' };

// 2xx ok, 3xx info, 4xx warn, 5xx error: the class of the status badge.
export const statusClass = (s) => {
  const n = Number(s);
  return n >= 500 ? 'http-5xx' : n >= 400 ? 'http-4xx' : n >= 300 ? 'http-3xx' : n >= 200 ? 'http-2xx' : 'http-other';
};
const fmtMs = (us) => {
  const n = Number(us);
  return Number.isFinite(n) ? (n / 1000).toFixed(n < 10000 ? 2 : n < 1000000 ? 1 : 0) : '–';
};

export function AdminAccessLogPage() {
  const [form, setForm] = useState(EMPTY);
  const [filters, setFilters] = useState(EMPTY); // the applied ones
  const [st, setSt] = useState({ items: [], total: null, loading: true, error: null, more: false, done: false });
  const seq = useRef(0);

  const load = async (f, offset) => {
    const my = ++seq.current;
    setSt((s) => ({ ...s, loading: true, error: null, more: offset > 0 }));
    try {
      const r = await get('/admin/access-log', { ...f, limit: PAGE, offset });
      if (my !== seq.current) return;
      const page = (r && r.items) || [];
      setSt((s) => ({
        items: offset ? [...s.items, ...page] : page,
        total: r && r.total,
        loading: false,
        error: null,
        more: false,
        done: page.length < PAGE,
      }));
    } catch (error) {
      if (my === seq.current) setSt((s) => ({ ...s, loading: false, error, more: false }));
    }
  };
  useEffect(() => {
    load(filters, 0);
  }, [filters]);

  const apply = (e) => {
    e.preventDefault();
    setFilters({ ...form, method: form.method.toUpperCase() });
  };
  const reset = () => {
    setForm(EMPTY);
    setFilters(EMPTY);
  };
  const field = (k, label, attrs = {}) => html`<div class="field">
    <label for=${'al-' + k}>${label}</label>
    <input id=${'al-' + k} value=${form[k]} onInput=${(e) => setForm({ ...form, [k]: e.currentTarget.value })} ...${attrs} /></div>`;
  const { items, total, loading, error } = st;

  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar"><button type="button" class="btn" onClick=${() => load(filters, 0)}>Refresh</button></div></div>
    <${AdminTabs} current="access-log" />
    <form class="card access-filters" noValidate onSubmit=${apply} aria-label="Access log filters">
      <div class="filter-grid">
        ${field('access_key', 'Access key', { placeholder: 'AKIA…', autocomplete: 'off' })}
        ${field('user_id', 'User id', { placeholder: 'UUID', autocomplete: 'off' })}
        <div class="field"><label for="al-method">Method</label>
          <select id="al-method" value=${form.method} onChange=${(e) => setForm({ ...form, method: e.currentTarget.value })}>
            <${Opt} value="">Any<//>${METHODS.map((m) => html`<${Opt} value=${m}>${m}<//>`)}</select></div>
        ${field('path_prefix', 'Path starts with', { placeholder: '/session' })}
        ${field('status', 'Status', { type: 'number', min: 100, max: 599, placeholder: 'e.g. 404' })}
        ${field('since', 'Since (UTC)', { type: 'datetime-local', step: 1 })}
        ${field('until', 'Until (UTC)', { type: 'datetime-local', step: 1 })}
      </div>
      <div class="form-actions">
        <button type="button" class="btn" data-test="access-reset" onClick=${reset}>Clear</button>
        <button type="submit" class="btn primary" data-test="access-apply">Apply filters</button>
      </div>
    </form>
    <${ErrorBanner} error=${error} onRetry=${() => load(filters, 0)} />
    ${loading && !items.length && html`<${Loading} label="Loading the access log…" />`}
    ${!loading && !error && !items.length && html`<p class="empty" data-test="access-empty">No requests match.</p>`}
    ${
      items.length > 0 &&
      html`<div class="table-wrap"><table class="access-log" data-test="access-table">
      <thead><tr><th scope="col">Time</th><th scope="col">Request</th><th scope="col">Status</th>
        <th scope="col" class="num">Latency (ms)</th><th scope="col">Access key</th><th scope="col">User</th><th scope="col">Client</th></tr></thead>
      <tbody>${items.map(
        (
          r,
        ) => html`<tr key=${r.event_id} data-access-row=${r.event_id} data-method=${r.method} data-status=${r.status} data-path=${r.path}>
        <td class="small nowrap" title=${r.occurred_at}>${fmtTime(r.occurred_at)}</td>
        <td class="small"><span class="mono method">${r.method}</span> <span class="mono path">${r.path}</span>
          ${r.request_id && html`<div class="muted mono">${r.request_id}</div>`}</td>
        <td><span class=${'badge ' + statusClass(r.status)} data-status-class=${statusClass(r.status)}>${r.status}</span></td>
        <td class="num mono small" data-latency-ms=${Number(r.latency_us) / 1000}>${fmtMs(r.latency_us)}</td>
        <td class="mono small">${r.access_key || '–'}</td>
        <td class="mono small">${r.user_id || '–'}</td>
        <td class="mono small">${r.client_addr || '–'}</td></tr>`,
      )}</tbody></table></div>
      <div class="toolbar spread load-more">
        <span class="muted small" data-test="access-count">${items.length} of ${total ?? '?'} records, newest first.</span>
        ${
          !st.done &&
          (total === null || total === undefined || items.length < total) &&
          html`<button type="button" class="btn" data-test="access-more"
          disabled=${loading} onClick=${() => load(filters, items.length)}>${st.more ? 'Loading…' : 'Load more'}</button>`
        }
      </div>`
    }
  </section>`;
}
