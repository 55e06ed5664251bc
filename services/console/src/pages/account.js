// My account: password, keypairs, sign out (here or everywhere).
import { useState } from 'preact/hooks';
import { api, enc, get, post } from '../api.js';
import {
  html,
  ErrorBanner,
  Loading,
  Modal,
  confirmAction,
  errText,
  fmtTime,
  toast,
  toastError,
  useData,
} from '../ui.js';

function PasswordCard() {
  const [f, setF] = useState({ old: '', new1: '', new2: '' });
  const [msg, setMsg] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    setMsg(null);
    if (!f.old || !f.new1) {
      setMsg({ error: 'Fill in your current and your new password.' });
      return;
    }
    if (f.new1 !== f.new2) {
      setMsg({ error: 'The new passwords differ.' });
      return;
    }
    setBusy(true);
    try {
      await post('/auth/update-password', { old_password: f.old, new_password: f.new1, new_password2: f.new2 });
      setF({ old: '', new1: '', new2: '' });
      setMsg({ ok: 'Your password has been changed.' });
    } catch (err) {
      setMsg({ error: errText(err) });
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card" aria-labelledby="acc-pw"><h2 id="acc-pw">Change password</h2>
    <form class="form" onSubmit=${submit} noValidate>
      <div class="field"><label for="pw-old">Current password</label>
        <input id="pw-old" type="password" autocomplete="current-password" value=${f.old} onInput=${set('old')} /></div>
      <div class="field"><label for="pw-new">New password</label>
        <input id="pw-new" type="password" autocomplete="new-password" value=${f.new1} onInput=${set('new1')} /></div>
      <div class="field"><label for="pw-new2">New password again</label>
        <input id="pw-new2" type="password" autocomplete="new-password" value=${f.new2} onInput=${set('new2')} /></div>
      ${msg && msg.error && html`<p class="banner error" role="alert">${msg.error}</p>`}
      ${msg && msg.ok && html`<p class="banner success" role="status">${msg.ok}</p>`}
      <div class="form-actions"><button type="submit" class="btn primary" data-test="password-submit" disabled=${busy}>${busy ? 'Saving…' : 'Change password'}</button></div>
    </form>
  </section>`;
}

function KeypairsCard({ user }) {
  const { data, error, loading, reload } = useData(
    () => get('/admin/keypairs', { user: user.user_id, limit: 100 }),
    [user.user_id],
  );
  const [issued, setIssued] = useState(null);
  const [busy, setBusy] = useState(false);
  const items = (data && data.items) || [];
  const issue = async () => {
    setBusy(true);
    try {
      const r = await post('/admin/keypairs', { user_id: user.user_id });
      setIssued(r);
      reload(true);
    } catch (e) {
      toastError(e);
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (kp) => {
    const mine = kp.access_key === user.access_key;
    if (
      !(await confirmAction({
        title: `Revoke ${kp.access_key}?`,
        message: mine
          ? 'This is the keypair of this login: revoking it signs you out.'
          : 'Programs that use this keypair can no longer call the API.',
        confirmLabel: 'Revoke',
        danger: true,
      }))
    )
      return;
    try {
      await api('DELETE', '/admin/keypairs/' + enc(kp.access_key));
      toast(`${kp.access_key} revoked`);
      reload(true);
    } catch (e) {
      toastError(e);
    }
  };
  return html`<section class="card span-all" aria-labelledby="acc-kp"><h2 id="acc-kp">API keypairs</h2>
    <p class="muted small">For the <code>tessera</code> CLI and Backend.AI clients. A secret key is shown only once, when it is issued.</p>
    <${ErrorBanner} error=${error} onRetry=${() => reload()} />
    ${loading && !data && html`<${Loading} />`}
    ${
      data &&
      html`<div class="table-wrap"><table><thead><tr><th scope="col">Access key</th><th scope="col">State</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${items.map(
        (kp) => html`<tr key=${kp.access_key} data-keypair=${kp.access_key}>
        <th scope="row" class="mono small">${kp.access_key}${kp.access_key === user.access_key && html` <span class="badge">this login</span>`}</th>
        <td>${kp.is_active ? 'active' : kp.revoked_at ? 'revoked' : 'inactive'}${kp.is_admin ? ' · admin' : ''}</td>
        <td class="small">${fmtTime(kp.created_at)}</td><td class="small">${fmtTime(kp.last_used)}</td>
        <td class="actions">${kp.is_active && html`<button type="button" class="btn small danger" data-test="revoke-keypair" onClick=${() => revoke(kp)}>Revoke</button>`}</td></tr>`,
      )}</tbody></table></div>`
    }
    ${
      user.role && user.role !== 'user'
        ? html`<div class="form-actions"><button type="button" class="btn" data-test="issue-keypair" disabled=${busy} onClick=${issue}>${busy ? 'Issuing…' : 'Issue a new keypair'}</button></div>`
        : html`<p class="muted small">New keypairs are issued by an administrator (<code>tessera admin keypair issue</code>).</p>`
    }
    ${
      issued &&
      html`<${Modal} title="New keypair" onClose=${() => setIssued(null)}>
      <p>Copy the secret key now: it is not shown again.</p>
      <dl class="info"><dt>Access key</dt><dd class="mono" data-test="new-access-key">${issued.access_key}</dd>
        <dt>Secret key</dt><dd class="mono secret" data-test="new-secret-key">${issued.secret_key}</dd></dl>
      <div class="form-actions">
        <button type="button" class="btn" onClick=${() => navigator.clipboard && navigator.clipboard.writeText(issued.secret_key).then(() => toast('Secret key copied'), toastError)}>Copy secret</button>
        <button type="button" class="btn primary" onClick=${() => setIssued(null)}>Done</button></div>
    <//>`
    }
  </section>`;
}

export function AccountPage({ user }) {
  return html`<section class="page">
    <div class="page-head"><h1>My account</h1></div>
    <div class="grid">
      <section class="card" aria-labelledby="acc-me"><h2 id="acc-me">You</h2>
        <dl class="info"><dt>User</dt><dd>${user.username}</dd><dt>Role</dt><dd>${user.role}</dd>
          <dt>Domain</dt><dd>${user.domain}</dd><dt>Access key</dt><dd class="mono small">${user.access_key}</dd></dl>
        <div class="form-actions">
          <button type="button" class="btn" data-test="logout-here" onClick=${() => user.logout(false)}>Sign out</button>
          <button type="button" class="btn danger" data-test="logout-everywhere" onClick=${async () => {
            if (
              await confirmAction({
                title: 'Sign out everywhere?',
                message: 'Every browser signed in as you is signed out.',
                confirmLabel: 'Sign out everywhere',
                danger: true,
              })
            )
              user.logout(true);
          }}>Sign out everywhere</button>
        </div>
      </section>
      <${PasswordCard} />
      <${KeypairsCard} user=${user} />
    </div>
  </section>`;
}
