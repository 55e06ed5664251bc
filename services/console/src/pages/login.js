// Login: POST /server/login (session mode).
import { useState } from 'preact/hooks';
import { server } from '../api.js';
import { html, errText } from '../ui.js';

export function LoginPage({ message, onLoggedIn }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  // a user of another domain than "default" names it (kept for next time)
  const [domain, setDomain] = useState(() => localStorage.getItem('tessera-login-domain') || '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);

  const submit = async (e) => {
    e.preventDefault();
    if (!username || !password) {
      setError('Enter your user name or e-mail and your password.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const r = await server.login(username.trim(), password, domain.trim());
      if (r && r.authenticated) {
        setPassword('');
        if (domain.trim()) localStorage.setItem('tessera-login-domain', domain.trim());
        else localStorage.removeItem('tessera-login-domain');
        onLoggedIn(r);
        return;
      }
      setError((r && (r.msg || r.title)) || 'Login failed.');
    } catch (err) {
      if (err.status === 429) {
        const s = Number(err.retryAfter);
        setError(
          `${errText(err)}${Number.isFinite(s) && s > 0 ? ` Try again in ${s >= 120 ? Math.ceil(s / 60) + ' minutes' : s + ' seconds'}.` : ''}`,
        );
      } else if (err.status === 401) {
        setError(errText(err) || 'Wrong user name or password.');
      } else setError(errText(err));
    } finally {
      setBusy(false);
    }
  };

  return html`<div class="center-page login-page">
    <form class="card login-card" onSubmit=${submit} aria-labelledby="login-title" novalidate>
      <h1 id="login-title"><span class="brand">Tessera</span> Sign in</h1>
      ${message && !error && html`<p class="banner info" role="status">${message}</p>`}
      ${error && html`<p class="banner error" role="alert" id="login-error">${error}</p>`}
      <label for="login-username">User name or e-mail</label>
      <input id="login-username" name="username" autocomplete="username" autocapitalize="off" spellcheck="false"
        value=${username} onInput=${(e) => setUsername(e.currentTarget.value)} required autofocus />
      <label for="login-password">Password</label>
      <input id="login-password" name="password" type="password" autocomplete="current-password"
        value=${password} onInput=${(e) => setPassword(e.currentTarget.value)} required />
      <details class="login-domain" open=${!!domain}>
        <summary>Another domain</summary>
        <label for="login-domain">Domain</label>
        <input id="login-domain" name="domain" autocapitalize="off" spellcheck="false" placeholder="default"
          value=${domain} onInput=${(e) => setDomain(e.currentTarget.value)} />
      </details>
      <button id="login-submit" type="submit" class="btn primary block" disabled=${busy}>
        ${busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  </div>`;
}
