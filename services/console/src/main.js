// The console's entry: login state, hash routing and the page shell.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { get, server, setCsrf, setLoginEndedHandler } from './api.js';
import { html, ConfirmHost, Loading, Toasts, errText, toastError } from './ui.js';
import { LoginPage } from './pages/login.js';
import { SummaryPage } from './pages/summary.js';
import { SessionsPage } from './pages/sessions.js';
import { SessionPage } from './pages/session.js';
import { TerminalPage } from './pages/terminal.js';
import { DataPage } from './pages/data.js';
import { FilesPage } from './pages/files.js';
import { AccountPage } from './pages/account.js';
import { ADMIN_TABS, NotPermitted, isAdmin } from './admin.js';
import { AdminAgentsPage } from './pages/admin_agents.js';
import { AdminUsersPage } from './pages/admin_users.js';
import { AdminSessionsPage } from './pages/admin_sessions.js';
import { AdminInfoPage } from './pages/admin_info.js';
import { AdminImagesPage } from './pages/admin_images.js';
import { AdminGroupsPage } from './pages/admin_groups.js';
import { AdminDomainsPage } from './pages/admin_domains.js';
import { AdminPoliciesPage } from './pages/admin_policies.js';
import { AdminStatsPage } from './pages/admin_stats.js';
import { AdminAccessLogPage } from './pages/admin_access_log.js';

// "#/data/f1?path=a/b" -> {parts: ['data', 'f1'], query: URLSearchParams}
export function parseHash(hash = location.hash) {
  const h = hash.replace(/^#\/?/, '');
  const qi = h.indexOf('?');
  const path = qi >= 0 ? h.slice(0, qi) : h;
  const query = new URLSearchParams(qi >= 0 ? h.slice(qi + 1) : '');
  const parts = path
    .split('/')
    .filter(Boolean)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { parts, query };
}

function useRoute() {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const on = () => setRoute(parseHash());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

const NAV = [
  ['summary', 'Summary'],
  ['sessions', 'Sessions'],
  ['data', 'Data'],
  ['account', 'My account'],
];

// The administrators' announcement (GET /manager/announcement), above every
// page while it is enabled; read again when the section changes and every
// few minutes. A user may hide it until its text changes.
function Announcement({ section }) {
  const [a, setA] = useState(null);
  const [hidden, setHidden] = useState(() => sessionStorage.getItem('tessera-announcement-hidden'));
  useEffect(() => {
    let live = true;
    const load = () =>
      get('/manager/announcement').then(
        (r) => {
          if (live) setA(r);
        },
        () => {},
      );
    load();
    const t = setInterval(load, 300000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [section]);
  if (!a || !a.enabled || !a.message || hidden === a.message) return null;
  const hide = () => {
    sessionStorage.setItem('tessera-announcement-hidden', a.message);
    setHidden(a.message);
  };
  return html`<div class="banner info announcement" role="status" data-test="announcement">
    <span class="banner-text">${a.message}</span>
    <button type="button" class="btn small ghost" onClick=${hide} aria-label="Hide the announcement">Hide</button>
  </div>`;
}

function Shell({ user, route, onLogout, children }) {
  const [menuOpen, setMenuOpen] = useState(false);
  const section = route.parts[0] || 'summary';
  useEffect(() => setMenuOpen(false), [route]);
  return html`<div class="shell">
    <a class="skip-link" href="#main" onClick=${(e) => {
      e.preventDefault();
      document.getElementById('main')?.focus();
    }}>Skip to content</a>
    <header class="topbar">
      <a class="brand" href="#/summary">Tessera</a>
      <button type="button" class="btn ghost menu-toggle" aria-expanded=${menuOpen} aria-controls="main-nav"
        onClick=${() => setMenuOpen(!menuOpen)}>☰ Menu</button>
      <nav id="main-nav" class=${'nav' + (menuOpen ? ' open' : '')} aria-label="Main">
        ${NAV.map(
          ([key, label]) => html`<a href=${'#/' + key} data-nav=${key}
          aria-current=${section === key ? 'page' : undefined}>${label}</a>`,
        )}
        ${
          isAdmin(user) &&
          html`<a href="#/admin/agents" data-nav="admin" class="nav-admin"
          aria-current=${section === 'admin' ? 'page' : undefined}>Admin</a>`
        }
      </nav>
      <div class="who">
        <span class="who-name" title=${user.access_key || ''}>${user.username || user.user_id}${user.role && user.role !== 'user' ? ` (${user.role})` : ''}</span>
        <button type="button" class="btn small" data-test="logout" onClick=${onLogout}>Sign out</button>
      </div>
    </header>
    <main id="main" tabindex="-1"><${Announcement} section=${section} />${children}</main>
  </div>`;
}

function Page({ route, user }) {
  const [p0, p1] = route.parts;
  switch (p0 || 'summary') {
    case 'summary':
      return html`<${SummaryPage} user=${user} />`;
    case 'sessions':
      return p1
        ? html`<${SessionPage} key=${p1} name=${p1} user=${user} />`
        : html`<${SessionsPage} user=${user} query=${route.query} />`;
    case 'data':
      return p1
        ? html`<${FilesPage} key=${p1} folder=${p1} path=${route.query.get('path') || ''} user=${user} />`
        : html`<${DataPage} user=${user} query=${route.query} />`;
    case 'account':
      return html`<${AccountPage} user=${user} />`;
    case 'admin':
      return html`<${AdminPage} tab=${p1 || 'agents'} route=${route} user=${user} />`;
    default:
      return html`<section class="page"><h1>Not found</h1><p>No page at <code>${location.hash}</code>. <a href="#/summary">Go to the summary</a>.</p></section>`;
  }
}

// The Admin section (#/admin/<tab>): administrators only; anyone else gets
// a "not permitted" page, never a blank one.
function AdminPage({ tab, route, user }) {
  if (!isAdmin(user)) return html`<${NotPermitted} user=${user} />`;
  switch (tab) {
    case 'agents':
      return html`<${AdminAgentsPage} user=${user} />`;
    case 'users':
      return html`<${AdminUsersPage} user=${user} query=${route.query} />`;
    case 'domains':
      return html`<${AdminDomainsPage} user=${user} />`;
    case 'policies':
      return html`<${AdminPoliciesPage} user=${user} query=${route.query} />`;
    case 'sessions':
      return html`<${AdminSessionsPage} user=${user} />`;
    case 'images':
      return html`<${AdminImagesPage} user=${user} />`;
    case 'groups':
      return html`<${AdminGroupsPage} user=${user} />`;
    case 'stats':
      return html`<${AdminStatsPage} user=${user} />`;
    case 'access-log':
      return html`<${AdminAccessLogPage} user=${user} />`;
    case 'info':
      return html`<${AdminInfoPage} user=${user} />`;
    default:
      return html`<section class="page"><h1>Not found</h1><p>No admin page <code>${tab}</code>. <a href="#/admin/agents">Go to the agents</a>.</p></section>`;
  }
}

// The sToken an identity provider put in the URL (?sToken=...), taken out of
// the address bar so that it is neither kept in the history nor shared.
function takeSsoToken() {
  const q = new URLSearchParams(location.search);
  const token = q.get('sToken');
  if (token) {
    q.delete('sToken');
    const rest = q.toString();
    history.replaceState(null, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
  }
  return token;
}

function App() {
  const route = useRoute();
  const [auth, setAuth] = useState({ state: 'checking', user: null, message: null });

  useEffect(() => {
    setLoginEndedHandler((msg) => {
      setCsrf(null);
      setAuth((a) =>
        a.state === 'in'
          ? { state: 'out', user: null, message: `Your login has ended (${msg}). Please sign in again.` }
          : a,
      );
    });
    const signedIn = (r) => {
      setCsrf(r.csrf_token);
      setAuth({ state: 'in', user: r.data || {}, message: null });
    };
    server
      .check()
      .then(async (r) => {
        if (r && r.authenticated) {
          signedIn(r);
          return;
        }
        // single sign-on (docs/console.md): a token in the URL or the sToken cookie
        const token = takeSsoToken();
        if (!token && !document.cookie.split(';').some((k) => k.trim().startsWith('sToken='))) {
          setAuth({ state: 'out', user: null, message: null });
          return;
        }
        const t = await server.tokenLogin(token);
        if (t && t.authenticated) signedIn(t);
        else
          setAuth({
            state: 'out',
            user: null,
            message: `Single sign-on failed: ${(t && t.data && t.data.details) || 'the token was refused'}. Sign in with your password.`,
          });
      })
      .catch((e) => setAuth({ state: 'out', user: null, message: errText(e) }));
  }, []);

  useEffect(() => {
    const sec = route.parts[0];
    if (sec === 'admin') {
      const tab = ADMIN_TABS.find(([k]) => k === (route.parts[1] || 'agents'));
      document.title = (tab ? tab[1] : 'Admin') + ' · Admin · Tessera';
      return;
    }
    const label = (NAV.find(([k]) => k === sec) || [null, sec === 'terminal' ? 'Terminal' : 'Summary'])[1];
    document.title = (route.parts[1] ? route.parts[1] + ' · ' : '') + label + ' · Tessera';
  }, [route]);

  const loggedIn = (r) => {
    setCsrf(r.csrf_token);
    setAuth({ state: 'in', user: r.data || {}, message: null });
    if (!location.hash || location.hash === '#/' || location.hash === '#') location.hash = '#/summary';
  };
  const logout = async (everywhere = false) => {
    try {
      await server.logout(everywhere);
    } catch (e) {
      if (e.status !== 401) {
        toastError(e);
        return;
      }
    }
    setCsrf(null);
    setAuth({ state: 'out', user: null, message: everywhere ? 'Signed out on every device.' : 'Signed out.' });
  };

  let body;
  if (auth.state === 'checking')
    body = html`<div class="center-page"><${Loading} label="Checking your login…" /></div>`;
  else if (auth.state === 'out') body = html`<${LoginPage} message=${auth.message} onLoggedIn=${loggedIn} />`;
  else if (route.parts[0] === 'terminal') body = html`<${TerminalPage} key=${route.parts[1]} name=${route.parts[1]} />`;
  else
    body = html`<${Shell} user=${auth.user} route=${route} onLogout=${() => logout(false)}>
      <${Page} route=${route} user=${{ ...auth.user, logout }} />
    <//>`;
  return html`${body}<${Toasts} /><${ConfirmHost} />`;
}

const root = document.getElementById('app');
root.textContent = ''; // the boot message: Preact 11 does not replace what it did not render
render(html`<${App} />`, root);
