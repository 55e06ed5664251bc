// Form pieces the admin pages share for the limits the API stores on domains,
// projects and keypair policies (docs/api.md "Admin REST"):
// total_resource_slots ({slot: amount}) and allowed_vfolder_hosts
// ({host: [permission, ...]}), with what each means beside the field.
import { bytesForInput, slotsToNumbers } from './resources.js';
import { html, fmtSlots } from './ui.js';

// The slots offered as fields, and any other slot a record already has.
export const SLOT_FIELDS = [
  ['cpu', 'CPU cores', 'cores, decimal: 8, 0.5'],
  ['mem', 'Memory', 'bytes with k/m/g/t: 32g, 512m'],
  ['cuda.device', 'Whole GPUs', 'cuda.device: whole devices: 2'],
  ['cuda.shares', 'GPU shares', 'cuda.shares: fractions of a GPU: 2.5'],
];

export const VFOLDER_PERMS = [
  'create-vfolder',
  'modify-vfolder',
  'delete-vfolder',
  'mount-in-session',
  'upload-file',
  'download-file',
  'invite-others',
  'set-user-specific-permission',
];

// {slot: stored amount} -> {slot: input text} ("34359738368" -> "32g").
export function slotsToForm(slots) {
  const out = {};
  for (const [k, v] of Object.entries(slots || {})) {
    if (v === null || v === undefined) continue;
    out[k] = k === 'mem' ? bytesForInput(v) : String(v);
  }
  return out;
}

// {slot: input text} -> the API's object: empty fields are left out (no
// limit). The server checks the amounts ("32g", "0.5") and says what is wrong.
export function slotsFromForm(form) {
  const out = {};
  for (const [k, v] of Object.entries(form || {})) {
    const t = String(v ?? '').trim();
    if (t) out[k] = t;
  }
  return out;
}

// An idle timeout field (seconds; docs/sessions.md "Idle reclamation"): ""
// is 0. A domain's, a project's and a resource group's take 0 (none) and up;
// a keypair policy's also -1 (undefined: the resource group's default).
export function idleTimeoutFromForm(text, { allowUndefined = false } = {}) {
  const t = String(text ?? '').trim();
  const v = t ? Number(t) : 0;
  if (!Number.isInteger(v) || v < (allowUndefined ? -1 : 0) || v > 31536000)
    throw new Error(
      `Idle timeout: “${t}” is not a whole number of seconds from ${allowUndefined ? '-1' : '0'} to 31536000`,
    );
  return v;
}

// Slot amounts for a table cell: "CPU 8 · Memory 32 GiB", or none.
export const fmtLimits = (slots) => {
  const s = fmtSlots(slotsToNumbers(slots));
  return s === '–' ? 'no limit' : s;
};

// One text field per slot, with its unit; empty = no limit on that slot.
export function SlotsFields({ idPrefix, value, onChange, disabled, legend = 'Total resource slots', help }) {
  const keys = [
    ...SLOT_FIELDS.map(([k]) => k),
    ...Object.keys(value || {}).filter((k) => !SLOT_FIELDS.some(([s]) => s === k)),
  ];
  const label = (k) => (SLOT_FIELDS.find(([s]) => s === k) || [k, k])[1];
  const unit = (k) => (SLOT_FIELDS.find(([s]) => s === k) || [k, k, 'amount'])[2];
  return html`<fieldset class="slots-fields"><legend>${legend}</legend>
    ${help && html`<p class="hint">${help}</p>`}
    <div class="slot-grid">${keys.map(
      (k) => html`<div class="field" key=${k}>
      <label for=${`${idPrefix}-slot-${k}`}>${label(k)}</label>
      <input id=${`${idPrefix}-slot-${k}`} data-slot=${k} value=${(value && value[k]) || ''} placeholder="no limit" disabled=${disabled}
        onInput=${(e) => onChange({ ...value, [k]: e.currentTarget.value })} />
      <p class="hint">${unit(k)}</p></div>`,
    )}</div>
  </fieldset>`;
}

// allowed_vfolder_hosts as lines "host: perm, perm" (an empty text: {}).
export function hostsToText(hosts) {
  return Object.entries(hosts || {})
    .map(([h, p]) => `${h}: ${(p || []).join(', ')}`)
    .join('\n');
}

export function hostsFromText(text) {
  const out = {};
  for (const raw of String(text || '').split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`Storage hosts: “${line}” is not “host: permission, ...”`);
    const host = line.slice(0, i).trim();
    const perms = line
      .slice(i + 1)
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const bad = perms.find((p) => !VFOLDER_PERMS.includes(p));
    if (bad) throw new Error(`Storage hosts: “${bad}” is not a permission (${VFOLDER_PERMS.join(', ')})`);
    out[host] = perms;
  }
  return out;
}

export function HostsField({ id, value, onChange, disabled, help }) {
  return html`<div class="field"><label for=${id}>Allowed storage hosts</label>
    <textarea id=${id} rows="3" value=${value} disabled=${disabled} placeholder="local: create-vfolder, mount-in-session, upload-file, download-file"
      onInput=${(e) => onChange(e.currentTarget.value)}></textarea>
    <p class="hint">${help || 'Which storage hosts (volumes) folders may live on, and what may be done there: one line per host, “host: permission, ...”. Empty: none named here.'}
      Permissions: ${VFOLDER_PERMS.join(', ')}.</p></div>`;
}

export const fmtHosts = (hosts) => {
  const k = Object.keys(hosts || {});
  return k.length ? k.join(', ') : '–';
};
