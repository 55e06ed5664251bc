// Admin · Environments: the registered images with their minimum resources
// and apps; scan the registries; delete (superadmins: others only read).
import { useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { AdminTabs, isSuperadmin } from '../admin.js';
import { html, ErrorBanner, Loading, confirmAction, fmtSlots, fmtTime, toast, toastError, useData } from '../ui.js';

export function AdminImagesPage({ user }) {
  const { data, error, loading, reload } = useData(() => get('/admin/images', { limit: 1000 }), []);
  const [scan, setScan] = useState(null); // {busy} or the answer
  const [q, setQ] = useState('');
  const su = isSuperadmin(user);
  const list = ((data && data.items) || []).filter((i) => !q || i.reference.toLowerCase().includes(q.toLowerCase()));

  const doScan = async () => {
    setScan({ busy: true });
    try { const r = await post('/admin/images/scan', {}); setScan(r); reload(true); }
    catch (e) { setScan(null); toastError(e); }
  };
  const remove = async (img) => {
    if (!(await confirmAction({ title: `Delete ${img.reference}?`, message: 'It is no longer offered in the launcher. Running sessions keep it; the registry keeps its layers.', confirmLabel: 'Delete', danger: true }))) return;
    try { await api('DELETE', '/admin/images/' + enc(img.reference)); toast(`${img.reference} deleted`); reload(true); } catch (e) { toastError(e); }
  };

  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">
        <label class="inline" for="image-search">Search</label>
        <input id="image-search" type="search" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} style="width: 14rem" />
        ${su && html`<button type="button" class="btn primary" data-test="scan-images" disabled=${scan && scan.busy} onClick=${doScan}>${scan && scan.busy ? 'Scanning…' : 'Scan registries'}</button>`}
      </div></div>
    <${AdminTabs} current="images" />
    ${scan && !scan.busy && html`<div class=${'banner ' + ((scan.failed || []).length ? 'error' : 'success')} role="status" data-test="scan-result">
      <span class="banner-text">Scan: ${(scan.registered || []).length} registered${(scan.failed || []).length ? `, ${scan.failed.length} failed: ` + scan.failed.map((f) => `${f.reference} (${f.error})`).join('; ') : ''}.</span>
      <button type="button" class="btn small ghost" aria-label="Dismiss" onClick=${() => setScan(null)}>×</button></div>`}
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading images…" />`}
    ${data && !list.length && html`<p class="empty">No images${q ? ' match' : ' are registered'}.</p>`}
    ${list.length > 0 && html`<div class="table-wrap"><table class="images">
      <thead><tr><th scope="col">Image</th><th scope="col">Minimum resources</th><th scope="col">Apps</th><th scope="col">Registered</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map((i) => html`<tr key=${i.reference} data-image=${i.reference}>
        <th scope="row" class="mono small">${i.reference}<div class="muted">${i.architecture || ''}${i.source ? ' · ' + i.source : ''}${i.digest ? ' · ' + String(i.digest).slice(0, 19) : ''}</div></th>
        <td class="small">${fmtSlots(i.min_slots)}</td>
        <td class="small">${(i.service_ports || []).map((p) => p.name).join(', ') || '–'}</td>
        <td class="small">${fmtTime(i.registered_at)}</td>
        <td class="actions">${su && html`<button type="button" class="btn small danger" data-test="delete-image" onClick=${() => remove(i)}>Delete</button>`}</td>
      </tr>`)}</tbody></table></div>`}
  </section>`;
}
