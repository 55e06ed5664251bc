// Admin · Environments: the registered images with their minimum and maximum
// resources and apps; register one by reference from its OCI registry, scan
// the registries; delete (superadmins: others only read).
import { useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import { AdminTabs, isSuperadmin } from '../admin.js';
import {
  html,
  ErrorBanner,
  Loading,
  confirmAction,
  errText,
  fmtSlot,
  fmtTime,
  slotLabel,
  toast,
  toastError,
  useData,
} from '../ui.js';

// {slot: amount} as "CPU 2 · Memory 1.0 GiB"; null when nothing is set.
function slotsText(slots) {
  const parts = Object.entries(slots || {})
    .filter(([, v]) => v !== null && v !== undefined && v !== '' && Number(v) !== 0)
    .map(([k, v]) => `${slotLabel(k)} ${fmtSlot(k, v)}`);
  return parts.length ? parts.join(' · ') : null;
}

// What a registry's answer means for the reference typed.
function registerError(e, ref) {
  if (e && e.status === 404) return `Not found (404): ${errText(e)}. Check the registry, the repository and the tag.`;
  if (e && e.status === 502) return `The registry of ${ref} did not answer (502): ${errText(e)}.`;
  return errText(e);
}

function RegisterForm({ onDone }) {
  const [ref, setRef] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    const r = ref.trim();
    setErr(null);
    if (!r) {
      setErr('Type an image reference, e.g. registry.example.com/team/python:3.12.');
      return;
    }
    setBusy(true);
    try {
      const img = await post('/admin/images', { reference: r });
      toast(`${img.reference || r} registered`);
      setRef('');
      onDone(img);
    } catch (x) {
      setErr(registerError(x, r));
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="register-image" onSubmit=${submit} noValidate data-test="register-form">
    <div class="field"><label for="image-reference">Register an image from its registry</label>
      <div class="register-row">
        <input id="image-reference" class="mono" autocomplete="off" spellcheck="false" placeholder="registry[:port]/repository:tag"
          value=${ref} onInput=${(e) => setRef(e.currentTarget.value)} aria-describedby="image-reference-hint" />
        <button type="submit" class="btn primary" data-test="register-image" disabled=${busy}>${busy ? 'Reading…' : 'Register'}</button>
      </div>
      <p class="hint" id="image-reference-hint">Tessera reads the image's manifest and labels (minimum resources, apps) from its OCI registry. Without a registry host, the built-in registry.</p>
    </div>
    ${err && html`<p class="banner error" role="alert" data-test="register-error">${err}</p>`}
  </form>`;
}

function Apps({ ports }) {
  if (!ports || !ports.length) return html`<span class="muted">–</span>`;
  return html`<ul class="access-list">${ports.map(
    (p) => html`<li key=${p.name} data-app=${p.name}>
    <strong>${p.name}</strong> <span class="muted">${p.protocol || ''}${p.container_port ? ' ' + p.container_port : ''}</span></li>`,
  )}</ul>`;
}

export function AdminImagesPage({ user }) {
  const { data, error, loading, reload } = useData(() => get('/admin/images', { limit: 1000 }), []);
  const [scan, setScan] = useState(null); // {busy} or the answer
  const [q, setQ] = useState('');
  const su = isSuperadmin(user);
  const list = ((data && data.items) || []).filter((i) => !q || i.reference.toLowerCase().includes(q.toLowerCase()));

  const doScan = async () => {
    setScan({ busy: true });
    try {
      const r = await post('/admin/images/scan', {});
      setScan(r);
      reload(true);
    } catch (e) {
      setScan(null);
      toastError(e);
    }
  };
  const remove = async (img) => {
    if (
      !(await confirmAction({
        title: `Delete ${img.reference}?`,
        message: 'It is no longer offered in the launcher. Running sessions keep it; the registry keeps its layers.',
        confirmLabel: 'Delete',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', '/admin/images/' + enc(img.reference));
      toast(`${img.reference} deleted`);
      reload(true);
    } catch (e) {
      toastError(e);
    }
  };

  return html`<section class="page">
    <div class="page-head"><h1>Admin</h1>
      <div class="toolbar">
        <label class="inline" for="image-search">Search</label>
        <input id="image-search" type="search" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} style="width: 14rem" />
        ${su && html`<button type="button" class="btn" data-test="scan-images" disabled=${scan && scan.busy} onClick=${doScan}>${scan && scan.busy ? 'Scanning…' : 'Scan registries'}</button>`}
      </div></div>
    <${AdminTabs} current="images" />
    ${
      su
        ? html`<${RegisterForm} onDone=${() => reload(true)} />`
        : html`<p class="muted small">Only superadmins register, scan and delete images; you see what is registered.</p>`
    }
    ${
      scan &&
      !scan.busy &&
      html`<div class=${'banner ' + ((scan.failed || []).length ? 'error' : 'success')} role="status" data-test="scan-result">
      <span class="banner-text">Scan: ${(scan.registered || []).length} registered${(scan.failed || []).length ? `, ${scan.failed.length} failed: ` + scan.failed.map((f) => `${f.reference} (${f.error})`).join('; ') : ''}.</span>
      <button type="button" class="btn small ghost" aria-label="Dismiss" onClick=${() => setScan(null)}>×</button></div>`
    }
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading images…" />`}
    ${data && !list.length && html`<p class="empty">No images${q ? ' match' : ' are registered'}.</p>`}
    ${
      list.length > 0 &&
      html`<div class="table-wrap"><table class="images">
      <thead><tr><th scope="col">Image</th><th scope="col">Resources</th><th scope="col">Apps</th><th scope="col">Registered</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${list.map((i) => {
        const min = slotsText(i.min_slots);
        const max = slotsText(i.max_slots);
        return html`<tr key=${i.reference} data-image=${i.reference}>
        <th scope="row" class="mono small image-ref">${i.reference}<div class="muted">${i.architecture || ''}${i.source ? ' · ' + i.source : ''}${i.digest ? ' · ' + String(i.digest).slice(0, 19) : ''}</div></th>
        <td class="small"><dl class="limits">
          <dt>Minimum</dt><dd data-test="image-min">${min || html`<span class="muted">none</span>`}</dd>
          <dt>Maximum</dt><dd data-test="image-max">${max || html`<span class="muted">no limit</span>`}</dd></dl></td>
        <td class="small" data-test="image-apps"><${Apps} ports=${i.service_ports} /></td>
        <td class="small">${fmtTime(i.registered_at)}</td>
        <td class="actions">${su && html`<button type="button" class="btn small danger" data-test="delete-image" onClick=${() => remove(i)}>Delete</button>`}</td>
      </tr>`;
      })}</tbody></table></div>`
    }
  </section>`;
}
