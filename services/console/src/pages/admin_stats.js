// Admin · Statistics: usage over time (CPU-hours, GPU-hours, memory
// GiB-hours) by project or by user for a period, as a stacked bar chart per
// day, or per hour for a period of one or two days (inline SVG), with the
// numbers in a table and a CSV download. Data:
// GET /usage?start=&end=&group_by=&bucket=day|hour (docs/usage.md): what was
// used in each UTC day or hour; the API scopes it (a domain admin gets its
// domain's sessions only, never a superadmin's).
import { useEffect, useRef, useState } from 'preact/hooks';
import { get } from '../api.js';
import { AdminTabs, isSuperadmin } from '../admin.js';
import { html, ErrorBanner, Loading, Opt, fmtBytes, toast, toastError, useAction, useData } from '../ui.js';

const DAY = 86400000;
const HOUR = 3600000;
const TOP = 8; // groups drawn by name; the rest are "others"
const COLORS = ['#2457c5', '#e07b39', '#2f9e6e', '#b9457f', '#7a5cc4', '#c9a227', '#2b9fb3', '#a6513a'];
const OTHERS_COLOR = '#9aa3b2';

export const METRICS = {
  cpu: { label: 'CPU-hours', of: (x) => (Number(x.cpu_seconds) || 0) / 3600 },
  gpu: { label: 'GPU-hours', of: (x) => Number(x.gpu_hours) || 0 },
  mem: { label: 'Memory GiB-hours', of: (x) => (Number(x.mem_byte_seconds) || 0) / 2 ** 30 / 3600 },
};

const iso = (ms) => new Date(ms).toISOString().slice(0, 10);
const todayMs = () => {
  const n = Date.now();
  return n - (n % DAY);
};

// [start, end] (YYYY-MM-DD, UTC, end included) of a preset.
export function presetPeriod(preset, now = todayMs()) {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  if (preset === 'last-month') return [iso(Date.UTC(y, m - 1, 1)), iso(Date.UTC(y, m, 0))];
  if (preset === 'last-7') return [iso(now - 6 * DAY), iso(now)];
  if (preset === 'today') return [iso(now), iso(now)];
  if (preset === 'yesterday') return [iso(now - DAY), iso(now - DAY)];
  return [iso(Date.UTC(y, m, 1)), iso(now)];
}

// The chart's bucket for a period: hours for one or two days, else days.
export function bucketOf(start, end) {
  return Date.parse(end + 'T00:00:00Z') - Date.parse(start + 'T00:00:00Z') <= DAY ? 'hour' : 'day';
}

// The buckets of [start, end] (UTC days, end included) as the API names
// them: "YYYY-MM-DD", or "YYYY-MM-DDTHH:00:00Z" by hour.
export function bucketsOf(start, end, bucket) {
  const out = [];
  const a = Date.parse(start + 'T00:00:00Z');
  const b = Date.parse(end + 'T00:00:00Z') + DAY;
  const step = bucket === 'hour' ? HOUR : DAY;
  const name = (t) => (bucket === 'hour' ? new Date(t).toISOString().slice(0, 13) + ':00:00Z' : iso(t));
  for (let t = a; Number.isFinite(t) && t < b && out.length < 800; t += step) out.push(name(t));
  return out;
}

const fmtH = (v) =>
  v === 0
    ? '0'
    : v < 0.01
      ? String(Number(v.toPrecision(2)))
      : v < 10
        ? v.toFixed(2)
        : v < 1000
          ? v.toFixed(1)
          : Math.round(v).toLocaleString();

// A round step for about n ticks up to max.
function niceStep(max, n = 4) {
  const raw = max / n;
  const p = 10 ** Math.floor(Math.log10(raw));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}

// The series to draw: the TOP groups by total, the rest summed as "others";
// each maps a bucket (day or hour, as the API names it) to its figure.
export function chartSeries(items, metric, label, bucket = 'day') {
  const m = METRICS[metric];
  const sorted = [...items].sort((a, b) => m.of(b) - m.of(a));
  const named = sorted.length > TOP + 1 ? sorted.slice(0, TOP) : sorted;
  const rest = sorted.slice(named.length);
  const list = bucket === 'hour' ? 'hours' : 'days';
  const daily = (groups) => {
    const by = {};
    for (const it of groups) for (const d of it[list] || []) by[d[bucket]] = (by[d[bucket]] || 0) + m.of(d);
    return by;
  };
  const series = named.map((it, i) => ({ key: label(it), color: COLORS[i % COLORS.length], by: daily([it]) }));
  if (rest.length) series.push({ key: `${rest.length} others`, color: OTHERS_COLOR, by: daily(rest), others: true });
  return series;
}

// The width the chart has on screen, so its text keeps its size in a narrow window.
function useWidth(ref, initial) {
  const [w, setW] = useState(initial);
  useEffect(() => {
    const el = ref.current;
    if (!el) return undefined;
    const measure = () => {
      const x = Math.round(el.getBoundingClientRect().width);
      if (x > 0) setW(x);
    };
    measure();
    if (typeof ResizeObserver === 'undefined') return undefined;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref]);
  return w;
}

function Chart({ days, series, metric, bucket }) {
  const ref = useRef(null);
  const W = Math.max(300, useWidth(ref, 1100));
  const H = W < 600 ? 220 : 250;
  const L = 84;
  const R = 12;
  const T = 14;
  const B = 48;
  const totals = days.map((d) => series.reduce((s, x) => s + (x.by[d] || 0), 0));
  const max = Math.max(...totals, 0);
  const step = max > 0 ? niceStep(max) : 1;
  const top = max > 0 ? Math.ceil(max / step) * step : 1;
  const ticks = [];
  for (let v = 0; v <= top + step / 2; v += step) ticks.push(v);
  const slot = (W - L - R) / Math.max(1, days.length);
  const bw = Math.max(2, Math.min(40, slot * 0.7));
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const every = Math.max(1, Math.ceil(days.length / Math.max(1, Math.floor((W - L - R) / 48)))); // labels 48 px apart or more
  const label = METRICS[metric].label;
  // "10-03" for a day; "14h" for an hour ("10-03" at midnight when two days are shown)
  const tick = (d) =>
    bucket === 'day'
      ? d.slice(5)
      : d.slice(11, 13) === '00' && days.length > 24
        ? d.slice(5, 10)
        : `${d.slice(11, 13)}h`;
  const tip = (d) => (bucket === 'day' ? d : `${d.slice(0, 10)} ${d.slice(11, 16)} UTC`);
  return html`<figure class="chart" data-test="usage-chart" data-bucket=${bucket} ref=${ref}>
    <svg viewBox=${`0 0 ${W} ${H}`} width=${W} height=${H} role="img" aria-label=${`${label} per ${bucket}, stacked by group`} preserveAspectRatio="xMidYMid meet">
      ${ticks.map(
        (v) => html`<g key=${'t' + v}>
        <line x1=${L} x2=${W - R} y1=${y(v)} y2=${y(v)} class=${v === 0 ? 'axis' : 'grid-line'} />
        <text x=${L - 6} y=${y(v) + 4} text-anchor="end" class="tick">${fmtH(v)}</text></g>`,
      )}
      <text transform=${`translate(14 ${(T + H - B) / 2}) rotate(-90)`} text-anchor="middle" class="axis-title">${label}</text>
      ${days.map((d, i) => {
        const x = L + slot * i + (slot - bw) / 2;
        let acc = 0;
        return html`<g key=${d} data-day=${d}>
          ${series.map((s) => {
            const v = s.by[d] || 0;
            if (v <= 0) return null;
            const y0 = y(acc);
            acc += v;
            const y1 = y(acc);
            return html`<rect x=${x} y=${y1} width=${bw} height=${Math.max(1, y0 - y1)} fill=${s.color}
              data-bar-day=${d.slice(0, 10)} data-bar-hour=${bucket === 'hour' ? d : undefined}
              data-bar-group=${s.key} data-value=${v}><title>${tip(d)} · ${s.key}: ${fmtH(v)} ${label}</title></rect>`;
          })}
          ${i % every === 0 && html`<text x=${L + slot * i + slot / 2} y=${H - B + 16} text-anchor="middle" class="tick">${tick(d)}</text>`}
        </g>`;
      })}
      <text x=${(L + W - R) / 2} y=${H - 8} text-anchor="middle" class="axis-title">${bucket === 'hour' ? 'Hour (UTC)' : 'Day (UTC, month-day)'}</text>
    </svg>
    <figcaption><ul class="legend" data-test="usage-legend">${series.map(
      (s) => html`<li key=${s.key} data-legend=${s.key}>
      <span class="swatch" style=${{ background: s.color }}></span>${s.key}</li>`,
    )}</ul></figcaption>
  </figure>`;
}

const PRESETS = [
  ['this-month', 'This month'],
  ['last-month', 'Last month'],
  ['last-7', 'Last 7 days'],
  ['yesterday', 'Yesterday'],
  ['today', 'Today'],
  ['custom', 'Custom'],
];

export function AdminStatsPage({ user }) {
  const [preset, setPreset] = useState('this-month');
  const [custom, setCustom] = useState(() => presetPeriod('this-month'));
  const [groupBy, setGroupBy] = useState('project');
  const [metric, setMetric] = useState('cpu');
  const [start, end] = preset === 'custom' ? custom : presetPeriod(preset);
  const q = { start, end, group_by: groupBy };
  const bucket = bucketOf(start, end);
  const { data, error, loading, reload } = useData(() => get('/usage', { ...q, bucket }), [start, end, groupBy]);
  const users = useData(
    () =>
      get('/admin/users', { limit: 1000 }).then(
        (r) => (r && r.items) || [],
        () => [],
      ),
    [],
  );
  const [busy, run] = useAction();
  const email = (id) => {
    const u = (users.data || []).find((x) => x.id === id);
    return u && u.email;
  };
  const label = (it) => (groupBy === 'user' ? email(it.user) || it.name || it.user : it.name || it.project || '(none)');
  const items = (data && data.items) || [];
  const shown = data && data.bucket === bucket ? bucket : 'day'; // the answer in hand, while the next loads
  const days = data ? bucketsOf(data.start, data.end, shown) : [];
  const series = chartSeries(items, metric, label, shown);
  const rows = [...items].sort((a, b) => METRICS[metric].of(b) - METRICS[metric].of(a));
  const sum = (f) => items.reduce((s, x) => s + f(x), 0);

  const download = () =>
    run(
      async () => {
        const text = await get('/usage', { ...q, format: 'csv' });
        const url = URL.createObjectURL(new Blob([typeof text === 'string' ? text : ''], { type: 'text/csv' }));
        const a = document.createElement('a');
        a.href = url;
        a.download = `usage-${groupBy}-${start}-${end}.csv`;
        document.body.appendChild(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
        toast(`Downloaded ${a.download}`);
      },
      { onError: toastError },
    );

  const sel = (id, lbl, value, set, opts) => html`<label class="inline">${lbl}
    <select id=${id} value=${value} onChange=${(e) => set(e.currentTarget.value)}>
      ${opts.map(([v, l]) => html`<${Opt} value=${v}>${l}<//>`)}</select></label>`;

  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">
        ${sel(
          'stats-period',
          'Period',
          preset,
          (p) => {
            if (p === 'custom') setCustom([start, end]);
            setPreset(p);
          },
          PRESETS,
        )}
        ${
          preset === 'custom' &&
          html`<label class="inline">From <input type="date" id="stats-start" value=${custom[0]}
            onChange=${(e) => e.currentTarget.value && setCustom([e.currentTarget.value, custom[1]])} /></label>
          <label class="inline">to <input type="date" id="stats-end" value=${custom[1]}
            onChange=${(e) => e.currentTarget.value && setCustom([custom[0], e.currentTarget.value])} /></label>`
        }
        ${sel('stats-group', 'By', groupBy, setGroupBy, [
          ['project', 'Project'],
          ['user', 'User'],
        ])}
        ${sel(
          'stats-metric',
          'Chart',
          metric,
          setMetric,
          Object.entries(METRICS).map(([k, v]) => [k, v.label]),
        )}
        <button type="button" class="btn" onClick=${() => reload()}>Refresh</button>
        <button type="button" class="btn" data-test="usage-csv" disabled=${busy}
          data-href=${'/func/usage?' + new URLSearchParams({ ...q, format: 'csv' })} onClick=${download}>Download CSV</button>
      </div></div>
    <${AdminTabs} current="stats" />
    <p class="muted small" data-test="usage-period">Usage from ${start} to ${end} (UTC days, both included)${isSuperadmin(user) ? '' : `, of the sessions of domain ${user.domain || '–'}`}.
      Each session counts what it used in the period (usage is kept per hour in which it was measured)${bucket === 'hour' ? '; the chart shows each UTC hour' : ''}.</p>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading usage…" />`}
    ${data && !items.length && html`<p class="empty" data-test="usage-empty" data-group-by=${data.group_by}>No usage in this period.</p>`}
    ${
      items.length > 0 &&
      html`<div class="card stats-card">
      <${Chart} days=${days} series=${series} metric=${metric} bucket=${shown} /></div>
      <div class="table-wrap stats-table"><table class="usage" data-test="usage-table">
        <thead><tr><th scope="col">${groupBy === 'user' ? 'User' : 'Project'}</th><th scope="col" class="num">Sessions</th>
          <th scope="col" class="num">CPU-hours</th><th scope="col" class="num">GPU-hours</th>
          <th scope="col" class="num">Memory GiB-hours</th><th scope="col" class="num">Peak memory</th></tr></thead>
        <tbody>${rows.map(
          (it) => html`<tr key=${it[groupBy]} data-usage-row=${label(it)} data-usage-key=${it[groupBy]}>
          <th scope="row">${label(it)}${groupBy === 'user' && it.name && html`<div class="muted small mono">${it.name}</div>`}</th>
          <td class="num">${it.sessions}</td>
          <td class="num" data-cpu-hours=${METRICS.cpu.of(it)}>${fmtH(METRICS.cpu.of(it))}</td>
          <td class="num" data-gpu-hours=${METRICS.gpu.of(it)}>${fmtH(METRICS.gpu.of(it))}</td>
          <td class="num">${fmtH(METRICS.mem.of(it))}</td>
          <td class="num">${fmtBytes(it.mem_peak_bytes)}</td></tr>`,
        )}</tbody>
        <tfoot><tr><th scope="row">Total</th><td class="num">${sum((x) => x.sessions)}</td>
          <td class="num">${fmtH(sum(METRICS.cpu.of))}</td><td class="num">${fmtH(sum(METRICS.gpu.of))}</td>
          <td class="num">${fmtH(sum(METRICS.mem.of))}</td><td></td></tr></tfoot>
      </table></div>`
    }
  </section>`;
}
