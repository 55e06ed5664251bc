// Shared pieces: formatting, loading and error states, toasts, dialogs, polling.
import { html } from 'htm/preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export { html };

// ---- formatting ------------------------------------------------------------
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
export function fmtBytes(n) {
  n = typeof n === 'string' && /[a-z]/i.test(n) ? parseBytes(n) : Number(n);
  if (!Number.isFinite(n)) return '–';
  let i = 0;
  while (Math.abs(n) >= 1024 && i < UNITS.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i ? n.toFixed(n < 10 ? 1 : 0) : n} ${UNITS[i]}`;
}

// "1g", "512m", "2048" (bytes) -> bytes; NaN when malformed.
export function parseBytes(s) {
  const m = String(s ?? '')
    .trim()
    .toLowerCase()
    .match(/^(\d+(?:\.\d+)?)\s*([kmgtp]?)i?b?$/);
  if (!m) return NaN;
  return Math.round(Number(m[1]) * 1024 ** ' kmgtp'.indexOf(m[2] || ' '));
}

export function fmtSlot(key, v) {
  if (v === undefined || v === null || v === '') return '–';
  if (v === Infinity || v === 'Infinity') return 'unlimited';
  if (key === 'mem' || key.endsWith('.mem') || key === 'shmem') return fmtBytes(v);
  const n = Number(v);
  return Number.isFinite(n) ? String(Math.round(n * 100) / 100) : String(v);
}

const SLOT_LABEL = { cpu: 'CPU', mem: 'Memory', 'cuda.device': 'GPU', 'cuda.shares': 'GPU shares' };
export const slotLabel = (k) => SLOT_LABEL[k] || k;

export function fmtSlots(slots) {
  if (!slots || typeof slots !== 'object') return '–';
  const parts = Object.entries(slots)
    .filter(([, v]) => v !== null && v !== undefined && Number(v) !== 0)
    .map(([k, v]) => `${slotLabel(k)} ${fmtSlot(k, v)}`);
  return parts.length ? parts.join(' · ') : '–';
}

export function fmtAge(ms) {
  ms = Number(ms);
  if (!Number.isFinite(ms) || ms < 0) return '–';
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

export function fmtTime(iso) {
  if (!iso) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export const errText = (e) => (e && e.message) || String(e || 'Something went wrong');

// ---- small components ------------------------------------------------------
export function Loading({ label = 'Loading…' }) {
  return html`<p class="loading" role="status" aria-live="polite"><span class="spinner" aria-hidden="true"></span>${label}</p>`;
}

export function ErrorBanner({ error, onClose, onRetry }) {
  if (!error) return null;
  return html`<div class="banner error" role="alert">
    <span class="banner-text">${errText(error)}</span>
    ${onRetry && html`<button type="button" class="btn small" onClick=${onRetry}>Retry</button>`}
    ${onClose && html`<button type="button" class="btn small ghost" aria-label="Dismiss" onClick=${onClose}>×</button>`}
  </div>`;
}

export function StatusBadge({ status }) {
  const s = String(status || 'UNKNOWN');
  return html`<span class=${'badge st-' + s.toLowerCase()}>${s}</span>`;
}

export function Meter({ used, limit, fmt = (v) => String(v), label }) {
  const u = Number(used) || 0;
  const l = Number(limit);
  const has = Number.isFinite(l) && l > 0;
  const pct = has ? Math.min(100, (u / l) * 100) : 0;
  return html`<div class="meter-row">
    <div class="meter-label"><span>${label}</span><span>${fmt(u)}${has ? ` / ${fmt(l)}` : ' (no limit)'}</span></div>
    ${
      has &&
      html`<div class=${'meter' + (pct >= 90 ? ' hot' : '')} role="progressbar" aria-label=${label}
      aria-valuemin="0" aria-valuemax="100" aria-valuenow=${Math.round(pct)}><span style=${{ width: pct + '%' }}></span></div>`
    }
  </div>`;
}

// ---- toasts ----------------------------------------------------------------
let toastSeq = 0;
let toasts = [];
const toastListeners = new Set();
export function toast(message, kind = 'info') {
  const id = ++toastSeq;
  toasts = [...toasts, { id, message: errText(message), kind }].slice(-3); // the newest three
  toastListeners.forEach((f) => f(toasts));
  setTimeout(() => dismissToast(id), kind === 'error' ? 9000 : 4000);
}
export const toastError = (e) => toast(e, 'error');
function dismissToast(id) {
  toasts = toasts.filter((t) => t.id !== id);
  toastListeners.forEach((f) => f(toasts));
}
export function Toasts() {
  const [list, setList] = useState(toasts);
  useEffect(() => {
    toastListeners.add(setList);
    return () => toastListeners.delete(setList);
  }, []);
  return html`<div class="toasts">
    ${list.map(
      (t) => html`<div key=${t.id} class=${'toast ' + t.kind} role=${t.kind === 'error' ? 'alert' : 'status'}>
      <span>${t.message}</span>
      <button type="button" class="btn small ghost" aria-label="Dismiss" onClick=${() => dismissToast(t.id)}>×</button>
    </div>`,
    )}
  </div>`;
}

// ---- dialogs ---------------------------------------------------------------
export function Modal({ title, onClose, children, wide }) {
  const ref = useRef(null);
  const titleId = useRef('dlg-' + Math.random().toString(36).slice(2)).current;
  // Escape calls the onClose of the latest render, not the first one's: the
  // key handler stays installed for the dialog's life (focus goes back once).
  const closeRef = useRef(onClose);
  closeRef.current = onClose;
  useEffect(() => {
    const prev = document.activeElement;
    const el = ref.current;
    const first = el && el.querySelector('input:not([type=hidden]), select, textarea, button:not(.dialog-close)');
    if (first) first.focus();
    const onKey = (e) => {
      if (e.key === 'Escape' && closeRef.current) {
        e.stopPropagation();
        closeRef.current();
      }
      if (e.key === 'Tab' && el) {
        // keep focus inside the dialog
        const f = [
          ...el.querySelectorAll(
            'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled])',
          ),
        ];
        if (!f.length) return;
        if (e.shiftKey && document.activeElement === f[0]) {
          e.preventDefault();
          f[f.length - 1].focus();
        } else if (!e.shiftKey && document.activeElement === f[f.length - 1]) {
          e.preventDefault();
          f[0].focus();
        }
      }
    };
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('keydown', onKey);
      if (prev && prev.focus) prev.focus();
    };
  }, []);
  return html`<div class="modal-backdrop" onMouseDown=${(e) => {
    if (e.target === e.currentTarget && onClose) onClose();
  }}>
    <div class=${'modal' + (wide ? ' wide' : '')} role="dialog" aria-modal="true" aria-labelledby=${titleId} ref=${ref}>
      <header class="modal-head">
        <h2 id=${titleId}>${title}</h2>
        ${onClose && html`<button type="button" class="btn ghost dialog-close" aria-label="Close" onClick=${onClose}>×</button>`}
      </header>
      <div class="modal-body">${children}</div>
    </div>
  </div>`;
}

// confirmAction({title, message, confirmLabel, danger}) -> Promise<boolean>;
// the dialog's buttons are [data-test=confirm] and [data-test=cancel].
let confirmState = null;
const confirmListeners = new Set();
export function confirmAction(opts) {
  return new Promise((resolve) => {
    confirmState = { ...opts, resolve };
    confirmListeners.forEach((f) => f(confirmState));
  });
}
function closeConfirm(answer) {
  if (confirmState) confirmState.resolve(answer);
  confirmState = null;
  confirmListeners.forEach((f) => f(null));
}
export function ConfirmHost() {
  const [st, setSt] = useState(confirmState);
  useEffect(() => {
    confirmListeners.add(setSt);
    return () => confirmListeners.delete(setSt);
  }, []);
  if (!st) return null;
  return html`<${Modal} title=${st.title || 'Are you sure?'} onClose=${() => closeConfirm(false)}>
    ${st.message && html`<p>${st.message}</p>`}
    <div class="form-actions">
      <button type="button" class="btn" data-test="cancel" onClick=${() => closeConfirm(false)}>Cancel</button>
      <button type="button" class=${'btn ' + (st.danger ? 'danger' : 'primary')} data-test="confirm"
        onClick=${() => closeConfirm(true)}>${st.confirmLabel || 'OK'}</button>
    </div>
  <//>`;
}

// ---- data loading ----------------------------------------------------------
// useData(fn, deps, {interval}): {data, error, loading, reload}; with an
// interval it polls (skipping while the tab is hidden) and keeps the last data.
export function useData(fn, deps = [], { interval = 0 } = {}) {
  const [state, setState] = useState({ data: undefined, error: null, loading: true });
  const alive = useRef(true);
  const seq = useRef(0);
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const reload = useCallback(async (quiet) => {
    const my = ++seq.current;
    if (!quiet) setState((s) => ({ ...s, loading: true }));
    try {
      const data = await fnRef.current();
      if (alive.current && my === seq.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (alive.current && my === seq.current) setState((s) => ({ ...s, error, loading: false }));
    }
  }, []);
  useEffect(() => {
    alive.current = true;
    setState({ data: undefined, error: null, loading: true });
    reload(true);
    let t = null;
    if (interval)
      t = setInterval(() => {
        if (!document.hidden) reload(true);
      }, interval);
    return () => {
      alive.current = false;
      // a counter, not an element: bumping it drops the answers still on the way
      // eslint-disable-next-line react-hooks/exhaustive-deps
      seq.current++;
      if (t) clearInterval(t);
    };
    // The caller's deps say when to load again (fn is read through fnRef, so it
    // is never stale); a new interval restarts the polling. reload is stable.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, interval]);
  return { ...state, reload };
}

// Runs an action with a busy flag; errors go to a toast (or onError).
export function useAction() {
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (fn, { onError = toastError } = {}) => {
    setBusy(true);
    try {
      return await fn();
    } catch (e) {
      onError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return [busy, run];
}

// Opens a tab at once (inside the click, so no popup blocker objects) and
// points it at the URL that urlPromise yields; closes it on failure.
export async function openInNewTab(urlPromise) {
  const w = window.open('about:blank', '_blank');
  try {
    const url = await urlPromise;
    if (w) {
      w.opener = null;
      w.location.href = url;
    } else window.open(url, '_blank', 'noopener');
  } catch (e) {
    if (w) w.close();
    throw e;
  }
}

// <option> with its value also as an attribute: Preact 11 leaves the
// attribute out when the value equals the text (option.value reads the text
// then), and tests select options by [value=...].
export const Opt = ({ value, children }) =>
  html`<option value=${value} ref=${(el) => {
    if (el && el.getAttribute('value') !== value) el.setAttribute('value', value);
  }}>${children}</option>`;
