// What the user runs, may still run, and where: shared by the summary and
// the launcher. Admin-only routes answer 403 to users; callers show that.
import { enc, get, post } from './api.js';

export const LIVE_STATUSES = ['PENDING', 'SCHEDULED', 'PREPARING', 'PULLING', 'RUNNING', 'RESTARTING', 'TERMINATING'];
export const ALL_STATUSES = [...LIVE_STATUSES, 'TERMINATED', 'CANCELLED', 'ERROR'];
export const isLive = (s) => LIVE_STATUSES.includes(s);

export async function liveSessions() {
  const r = await get('/session', { status: LIVE_STATUSES.join(','), limit: 100 });
  return (r && r.items) || [];
}

export function sumSlots(sessions, key = 'occupiedSlots') {
  const total = {};
  for (const s of sessions) {
    for (const [k, v] of Object.entries(s[key] || {})) {
      const n = Number(v);
      if (Number.isFinite(n)) total[k] = (total[k] || 0) + n;
    }
  }
  return total;
}

// The caller's keypair policy: {policy} or {error} (users may read their
// keypair but not the policy: 403).
export async function keypairPolicy(user) {
  try {
    const kp = await get('/admin/keypairs/' + enc(user.access_key));
    const name = kp && (kp.resource_policy || (kp.data && kp.data.resource_policy));
    if (!name) return { error: new Error('the keypair names no resource policy') };
    try {
      return { name, policy: await get('/admin/keypair-resource-policies/' + enc(name)) };
    } catch (error) {
      return { name, error };
    }
  } catch (error) {
    return { error };
  }
}

// Resource groups with their free capacity (admins), from the ALIVE agents.
export async function resourceGroups() {
  const [groups, agents] = await Promise.all([
    get('/admin/resource-groups', { limit: 1000 }),
    get('/admin/agents', { status: 'ALIVE', limit: 1000 }).catch(() => ({ items: [] })),
  ]);
  return ((groups && groups.items) || []).map((g) => {
    const capacity = {},
      occupied = {};
    let n = 0;
    for (const a of (agents && agents.items) || []) {
      if (a.resource_group !== g.name) continue;
      n++;
      for (const [k, v] of Object.entries(a.slots || {})) capacity[k] = (capacity[k] || 0) + (Number(v) || 0);
      for (const [k, v] of Object.entries(a.occupied_slots || {})) occupied[k] = (occupied[k] || 0) + (Number(v) || 0);
    }
    const free = {};
    for (const k of Object.keys(capacity)) free[k] = Math.max(0, capacity[k] - (occupied[k] || 0));
    return { ...g, agentCount: n, capacity, occupied, free };
  });
}

export async function slotTypes() {
  try {
    return (await get('/config/resource-slots')) || {};
  } catch {
    return { cpu: 'count', mem: 'bytes' };
  }
}

// Remaining = policy limit - occupied, per slot with a limit.
export function remaining(policy, used) {
  const out = {};
  const lim = (policy && policy.total_resource_slots) || {};
  for (const [k, v] of Object.entries(lim)) {
    const n = Number(v);
    if (v === null || !Number.isFinite(n)) continue;
    out[k] = Math.max(0, n - (used[k] || 0));
  }
  return out;
}

// ---- the resource API (docs/api.md "Resources") ------------------------------
// Slot amounts there are decimal text, "Infinity" where nothing limits.
export const slotsToNumbers = (slots) => {
  const out = {};
  for (const [k, v] of Object.entries(slots || {})) {
    const n = Number(v);
    if (!Number.isNaN(n)) out[k] = n;
  }
  return out;
};

// POST /resource/check-presets: limits, use, what remains, presets.
export async function checkPresets(group, scalingGroup) {
  const body = {};
  if (group) body.group = group;
  if (scalingGroup) body.scaling_group = scalingGroup;
  return post('/resource/check-presets', body);
}

// GET /scaling-groups: the active resource groups the caller may use.
export async function allowedGroups(project) {
  const r = await get('/scaling-groups', project ? { group: project } : undefined);
  return ((r && r.scaling_groups) || []).map((g) => g.name);
}

// "1073741824" -> "1g" for an input field.
export function bytesForInput(v) {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) return v == null ? '' : String(v);
  for (const [u, m] of [
    ['t', 2 ** 40],
    ['g', 2 ** 30],
    ['m', 2 ** 20],
    ['k', 2 ** 10],
  ])
    if (n % m === 0) return n / m + u;
  return String(n);
}
