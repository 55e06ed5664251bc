// A folder's files: browse, mkdir, rename, delete, download (file or zip),
// upload files and directories (tus, resumable) by input or drag and drop.
import { useEffect, useRef, useState } from 'preact/hooks';
import { Upload } from 'tus-js-client';
import { api, enc, get, post } from '../api.js';
import { InviteDialog } from './data.js';
import {
  html,
  ErrorBanner,
  Loading,
  Modal,
  confirmAction,
  errText,
  fmtBytes,
  fmtTime,
  toast,
  toastError,
  useData,
} from '../ui.js';

const join = (dir, name) => (dir ? dir.replace(/\/+$/, '') + '/' + name : name);
const withToken = (url, token) =>
  /[?&]token=/.test(url) ? url : url + (url.includes('?') ? '&' : '?') + 'token=' + encodeURIComponent(token);
const ICON = {
  DIRECTORY: 'M1.5 3.5h5l1.5 1.5h6.5v8.5h-13z',
  FILE: 'M3.5 1.5h6l3 3v10h-9z M9.5 1.5v3h3',
  SYMLINK: 'M3.5 1.5h6l3 3v10h-9z M5.5 11l4-4 M6.5 7h3v3',
};
const Icon = ({ type }) => html`<svg class="ficon" viewBox="0 0 16 16" width="16" height="16" aria-hidden="true"
  fill="none" stroke="currentColor" stroke-width="1.2" stroke-linejoin="round"><path d=${ICON[type] || ICON.FILE} /></svg>`;
const hrefFor = (folder, path) => '#/data/' + enc(folder) + (path ? '?path=' + enc(path) : '');

// ---- uploads ---------------------------------------------------------------
// A transfer token lasts hours: keep it so that the same file, picked again
// after a failure or a reload, resumes from the server's offset.
const resumeKey = (folder, path, file) => `tessera.upload.${folder}\n${path}\n${file.size}\n${file.lastModified}`;
function savedUpload(key) {
  try {
    const v = JSON.parse(localStorage.getItem(key) || 'null');
    return v && v.expires_at && Date.parse(v.expires_at) > Date.now() + 60000 ? v : null;
  } catch {
    return null;
  }
}
const saveUpload = (key, v) => {
  try {
    localStorage.setItem(key, JSON.stringify(v));
  } catch {
    /* ignore */
  }
};
const forgetUpload = (key) => {
  try {
    localStorage.removeItem(key);
  } catch {
    /* ignore */
  }
};

async function startTransfer(folder, item, update) {
  const key = resumeKey(folder, item.path, item.file);
  let t = savedUpload(key);
  if (!t) {
    const r = await post('/folders/' + enc(folder) + '/request-upload', { path: item.path, size: item.file.size });
    t = { url: r.url, token: r.token, expires_at: r.expires_at || new Date(Date.now() + 3600e3).toISOString() };
    saveUpload(key, t);
  }
  const url = withToken(t.url, t.token);
  if (item.file.size === 0) {
    // nothing to stream: one empty PATCH finishes it
    const res = await fetch(url, {
      method: 'PATCH',
      headers: { 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream' },
      body: new Blob([]),
    });
    if (!res.ok && res.status !== 409) throw new Error(`upload failed (HTTP ${res.status})`);
    forgetUpload(key);
    return;
  }
  await new Promise((resolve, reject) => {
    const up = new Upload(item.file, {
      uploadUrl: url,
      chunkSize: 32 * 1024 * 1024,
      retryDelays: [0, 1000, 3000, 5000, 10000],
      storeFingerprintForResuming: false,
      removeFingerprintOnSuccess: true,
      onProgress: (sent, total) => update({ sent, total }),
      onSuccess: () => {
        forgetUpload(key);
        resolve();
      },
      onError: (err) => {
        const st = err && err.originalResponse && err.originalResponse.getStatus && err.originalResponse.getStatus();
        if (st === 401 || st === 403 || st === 404 || st === 410) forgetUpload(key); // token or upload gone: start over next time
        let msg = errText(err);
        if (!st)
          msg = `Could not reach the storage server (${new URL(url, location.href).origin}): a network error, or it refused this page's cross-origin request.`;
        try {
          const body = JSON.parse(err.originalResponse.getBody());
          msg = body.msg || body.title || msg;
        } catch {
          /* not JSON */
        }
        reject(new Error(msg.length > 300 ? msg.slice(0, 300) + '…' : msg));
      },
    });
    item.abort = () => up.abort();
    up.start();
  });
}

// Files (and empty directories) of a drop, with their relative paths.
async function filesOfDrop(dt) {
  const out = [],
    dirs = [];
  const entries = [...(dt.items || [])].map((i) => (i.webkitGetAsEntry ? i.webkitGetAsEntry() : null)).filter(Boolean);
  if (!entries.length) return { files: [...(dt.files || [])].map((f) => ({ file: f, rel: f.name })), dirs };
  const walk = async (entry, prefix) => {
    if (entry.isFile) {
      const file = await new Promise((res, rej) => entry.file(res, rej));
      out.push({ file, rel: prefix + entry.name });
    } else if (entry.isDirectory) {
      dirs.push(prefix + entry.name);
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const e of batch) await walk(e, prefix + entry.name + '/');
      }
    }
  };
  for (const e of entries) await walk(e, '');
  return { files: out, dirs };
}

function Uploads({ items, onRetry, onClear }) {
  if (!items.length) return null;
  const active = items.filter((i) => i.status === 'uploading' || i.status === 'waiting').length;
  return html`<section class="card uploads" aria-labelledby="up-title">
    <div class="toolbar spread"><h2 id="up-title">Uploads ${active ? html`<span class="count">${active} running</span>` : ''}</h2>
      ${!active && html`<button type="button" class="btn small" onClick=${onClear}>Clear</button>`}</div>
    <ul class="plain-list">${items.map(
      (i) => html`<li key=${i.id} data-upload=${i.path} data-upload-status=${i.status}>
      <div class="up-line"><span class="mono small">${i.path}</span>
        <span class="small muted">${i.status === 'done' ? 'done' : i.status === 'error' ? '' : `${fmtBytes(i.sent)} / ${fmtBytes(i.file.size)}`}</span></div>
      <progress max=${i.file.size || 1} value=${i.status === 'done' ? i.file.size || 1 : i.sent} aria-label=${'Upload of ' + i.path}></progress>
      ${
        i.status === 'error' &&
        html`<div class="up-error" role="alert"><span class="small">${i.error}</span>
        <button type="button" class="btn small" onClick=${() => onRetry(i)}>Resume</button></div>`
      }
    </li>`,
    )}</ul>
  </section>`;
}

export function FilesPage({ folder, path }) {
  const { data, error, loading, reload } = useData(
    () => get('/folders/' + enc(folder) + '/files', { path }),
    [folder, path],
  );
  const info = useData(() => get('/folders/' + enc(folder)), [folder]);
  const [uploads, setUploads] = useState([]);
  const [dialog, setDialog] = useState(null);
  const [dragging, setDragging] = useState(false);
  const queue = useRef([]);
  const running = useRef(0);
  const items = (data && data.items) || [];
  const dirs = path ? path.split('/').filter(Boolean) : [];

  const patch = (id, p) => setUploads((list) => list.map((u) => (u.id === id ? { ...u, ...p } : u)));
  const pump = () => {
    while (running.current < 3 && queue.current.length) {
      const it = queue.current.shift();
      running.current++;
      patch(it.id, { status: 'uploading' });
      let last = 0;
      startTransfer(folder, it, ({ sent }) => {
        const now = Date.now();
        if (now - last > 150 || sent === it.file.size) {
          last = now;
          patch(it.id, { sent });
        }
      })
        .then(
          () => patch(it.id, { status: 'done', sent: it.file.size }),
          (e) => patch(it.id, { status: 'error', error: errText(e) }),
        )
        .finally(() => {
          running.current--;
          if (!queue.current.length && running.current === 0) {
            reload(true);
            info.reload(true);
          }
          pump();
        });
    }
  };
  const enqueue = (list, emptyDirs = []) => {
    const fresh = list.map(({ file, rel }) => ({
      id: Math.random().toString(36).slice(2),
      file,
      path: join(path, rel),
      sent: 0,
      status: 'waiting',
    }));
    if (!fresh.length && !emptyDirs.length) return;
    setUploads((u) => [...fresh, ...u.filter((x) => x.status !== 'done')]);
    queue.current.push(...fresh);
    pump();
    const filled = new Set(fresh.map((f) => f.path));
    const bare = emptyDirs.map((d) => join(path, d)).filter((d) => ![...filled].some((p) => p.startsWith(d + '/')));
    if (bare.length)
      Promise.all(
        bare.map((d) => post('/folders/' + enc(folder) + '/mkdir', { path: d, parents: true, exist_ok: true })),
      ).then(() => reload(true), toastError);
  };
  const retry = (it) => {
    patch(it.id, { status: 'waiting', error: null });
    queue.current.push(it);
    pump();
  };
  const onPick = (e) => {
    const files = [...e.currentTarget.files].map((f) => ({ file: f, rel: f.webkitRelativePath || f.name }));
    e.currentTarget.value = '';
    enqueue(files);
  };
  const onDrop = async (e) => {
    e.preventDefault();
    setDragging(false);
    try {
      const { files, dirs: ds } = await filesOfDrop(e.dataTransfer);
      enqueue(files, ds);
    } catch (err) {
      toastError(err);
    }
  };
  useEffect(() => () => queue.current.splice(0), []);

  const download = async (it) => {
    const p = it.self ? path || '.' : join(path, it.name);
    try {
      const r = await post('/folders/' + enc(folder) + '/request-download', {
        file: p,
        archive: it.type === 'DIRECTORY',
      });
      const a = document.createElement('a');
      a.href = withToken(r.url, r.token);
      a.download = it.type === 'DIRECTORY' ? it.name + '.zip' : it.name;
      a.rel = 'noopener';
      document.body.appendChild(a);
      a.click();
      a.remove();
    } catch (e) {
      toastError(e);
    }
  };
  const remove = async (it) => {
    const dir = it.type === 'DIRECTORY';
    if (
      !(await confirmAction({
        title: `Delete ${it.name}?`,
        message: dir ? 'The directory and everything in it are deleted.' : 'The file is deleted.',
        confirmLabel: 'Delete',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', '/folders/' + enc(folder) + '/delete_files', {
        body: { files: [join(path, it.name)], recursive: dir },
      });
      toast(`${it.name} deleted`);
      reload(true);
      info.reload(true);
    } catch (e) {
      toastError(e);
    }
  };

  const fi = info.data;
  return html`<section class="page" onDragOver=${(e) => {
    e.preventDefault();
    setDragging(true);
  }}
      onDragLeave=${(e) => {
        if (e.currentTarget === e.target) setDragging(false);
      }} onDrop=${onDrop}>
    <nav class="crumbs" aria-label="Breadcrumb"><a href="#/data">Data</a> / <a href=${hrefFor(folder, '')}>${folder}</a>
      ${dirs.map((d, i) => html` / <a href=${hrefFor(folder, dirs.slice(0, i + 1).join('/'))}>${d}</a>`)}</nav>
    <div class="page-head">
      <h1>${dirs.length ? dirs[dirs.length - 1] : folder}</h1>
      <div class="toolbar">
        <button type="button" class="btn" data-test="mkdir" onClick=${() => setDialog({ kind: 'mkdir' })}>New directory</button>
        <label class="btn" for="upload-input">Upload files</label>
        <input type="file" id="upload-input" class="visually-hidden" multiple onChange=${onPick} />
        <label class="btn" for="upload-dir-input">Upload a directory</label>
        <input type="file" id="upload-dir-input" class="visually-hidden" webkitdirectory="" directory="" multiple onChange=${onPick} />
        ${
          (!info.data || info.data.is_owner !== false) &&
          (!info.data || info.data.ownership_type !== 'group') &&
          html`<button type="button" class="btn"
          data-test="share" onClick=${() => setDialog({ kind: 'share' })}>Share</button>`
        }
        <button type="button" class="btn" data-test="download-folder" onClick=${() => download({ name: dirs.length ? dirs[dirs.length - 1] : folder, type: 'DIRECTORY', self: true })}
          title="Download this directory as a zip">Download as zip</button>
      </div>
    </div>
    ${fi && html`<p class="muted small">${fi.host} · ${fmtBytes(fi.used_bytes || 0)} used${fi.max_size ? ' of ' + fmtBytes(fi.max_size) : ''}${fi.quota_scope && fi.quota_scope.limit_bytes ? ` · your quota: ${fmtBytes(fi.quota_scope.used_bytes)} of ${fmtBytes(fi.quota_scope.limit_bytes)}` : ''} · ${fi.permission}</p>`}
    <div class=${'dropzone' + (dragging ? ' active' : '')} data-test="dropzone">Drop files or directories here to upload them to /${path}</div>
    <${Uploads} items=${uploads} onRetry=${retry} onClear=${() => setUploads((u) => u.filter((x) => x.status === 'uploading' || x.status === 'waiting'))} />
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} label="Loading files…" />`}
    ${
      data &&
      html`<div class="table-wrap"><table class="files">
      <thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Modified</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>
        ${path && html`<tr><th scope="row"><a href=${hrefFor(folder, dirs.slice(0, -1).join('/'))}>↑ ..</a></th><td></td><td></td><td></td></tr>`}
        ${!items.length && html`<tr><td colspan="4" class="empty">This directory is empty.</td></tr>`}
        ${items.map(
          (it) => html`<tr key=${it.name} data-file=${it.name} data-type=${it.type}>
          <th scope="row">${
            it.type === 'DIRECTORY'
              ? html`<a href=${hrefFor(folder, join(path, it.name))}><${Icon} type="DIRECTORY" /> ${it.name}</a>`
              : html`<span><${Icon} type=${it.type} /> ${it.name}${it.type === 'SYMLINK' ? html` <span class="muted small">(link)</span>` : ''}</span>`
          }</th>
          <td>${it.type === 'DIRECTORY' ? '–' : fmtBytes(it.size)}</td>
          <td class="small">${fmtTime(it.modified)}</td>
          <td class="actions">
            ${
              it.type !== 'SYMLINK' &&
              html`<button type="button" class="btn small" data-test="download" onClick=${() => download(it)}
              aria-label=${'Download ' + it.name}>${it.type === 'DIRECTORY' ? 'Zip' : 'Download'}</button>`
            }
            <button type="button" class="btn small" data-test="rename" aria-label=${'Rename ' + it.name} onClick=${() => setDialog({ kind: 'rename', it })}>Rename</button>
            <button type="button" class="btn small danger" data-test="delete" aria-label=${'Delete ' + it.name} onClick=${() => remove(it)}>Delete</button>
          </td></tr>`,
        )}
      </tbody></table></div>`
    }
    ${dialog && dialog.kind === 'share' && html`<${InviteDialog} folder=${{ name: folder }} onClose=${() => setDialog(null)} />`}
    ${
      dialog &&
      dialog.kind !== 'share' &&
      html`<${NameDialog} dialog=${dialog} folder=${folder} path=${path} onClose=${() => setDialog(null)} onDone=${() => {
        setDialog(null);
        reload(true);
      }} />`
    }
  </section>`;
}

function NameDialog({ dialog, folder, path, onClose, onDone }) {
  const rename = dialog.kind === 'rename';
  const [name, setName] = useState(rename ? dialog.it.name : '');
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    const n = name.trim();
    if (!n || (n.includes('/') && rename)) {
      setError(rename ? 'A name without “/”.' : 'Enter a name.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      if (rename)
        await post('/folders/' + enc(folder) + '/rename_file', {
          target_path: join(path, dialog.it.name),
          new_name: n,
        });
      else await post('/folders/' + enc(folder) + '/mkdir', { path: join(path, n), parents: true });
      toast(rename ? `Renamed to ${n}` : `Directory ${n} created`);
      onDone();
    } catch (err) {
      setError(errText(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<${Modal} title=${rename ? 'Rename ' + dialog.it.name : 'New directory'} onClose=${onClose}>
    <form class="form" onSubmit=${submit} noValidate>
      <div class="field"><label for="file-name-input">${rename ? 'New name' : 'Directory name'}</label>
        <input id="file-name-input" value=${name} onInput=${(e) => setName(e.currentTarget.value)} autocapitalize="off" spellcheck="false" /></div>
      ${error && html`<p class="banner error" role="alert">${error}</p>`}
      <div class="form-actions"><button type="button" class="btn" onClick=${onClose}>Cancel</button>
        <button type="submit" class="btn primary" data-test="name-submit" disabled=${busy}>${busy ? 'Working…' : rename ? 'Rename' : 'Create'}</button></div>
    </form>
  <//>`;
}
