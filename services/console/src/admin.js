// What the admin pages share: who is an administrator, the Admin section's
// tabs, and the page a user gets on an admin route.
import { useEffect, useRef } from 'preact/hooks';
import { html } from './ui.js';

// superadmin, or a domain admin (role "admin"): the login's data.role.
export const isAdmin = (user) => !!user && (user.role === 'superadmin' || user.role === 'admin');
export const isSuperadmin = (user) => !!user && user.role === 'superadmin';

export const ADMIN_TABS = [
  ['agents', 'Agents'],
  ['users', 'Users'],
  ['domains', 'Domains & projects'],
  ['policies', 'Resource policies'],
  ['sessions', 'All sessions'],
  ['images', 'Environments'],
  ['groups', 'Resource groups'],
  ['stats', 'Statistics'],
  ['access-log', 'Access log'],
  ['info', 'Information'],
];

export function AdminTabs({ current }) {
  // a narrow window scrolls the strip sideways: keep the current tab in view
  const ref = useRef(null);
  useEffect(() => {
    const a = ref.current && ref.current.querySelector('[aria-current=page]');
    if (a && a.scrollIntoView) a.scrollIntoView({ inline: 'nearest', block: 'nearest' });
  }, [current]);
  return html`<nav class="tabs" aria-label="Admin" data-test="admin-tabs" ref=${ref}>
    ${ADMIN_TABS.map(
      ([k, l]) => html`<a href=${'#/admin/' + k} data-admin-tab=${k}
      aria-current=${current === k ? 'page' : undefined}>${l}</a>`,
    )}
  </nav>`;
}

export function NotPermitted({ user }) {
  return html`<section class="page" data-test="not-permitted">
    <div class="page-head"><h1>Not permitted</h1></div>
    <div class="banner error" role="alert"><span class="banner-text">This page is for administrators only.
      Your account (role <code>${(user && user.role) || 'user'}</code>) may not see it.</span></div>
    <p><a href="#/summary">Go to the summary</a></p>
  </section>`;
}

// A bar of used / capacity: label, numbers, and the bar itself.
export function Bar({ label, used, cap, fmt = (v) => String(Math.round(v * 100) / 100), test }) {
  const u = Number(used) || 0;
  const c = Number(cap) || 0;
  const pct = c > 0 ? Math.min(100, (u / c) * 100) : 0;
  return html`<div class="bar-row" data-bar=${test || label} data-used=${u} data-cap=${c}>
    <div class="meter-label"><span>${label}</span><span class="mono small">${fmt(u)} / ${fmt(c)}</span></div>
    <div class=${'meter' + (pct >= 90 ? ' hot' : '')} role="progressbar" aria-label=${typeof label === 'string' ? label : test}
      aria-valuemin="0" aria-valuemax="100" aria-valuenow=${Math.round(pct)}
      aria-valuetext=${`${fmt(u)} of ${fmt(c)}`}><span style=${{ width: pct + '%' }}></span></div>
  </div>`;
}
