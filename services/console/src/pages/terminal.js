// A session's terminal: start-service "ttyd", then xterm.js over the
// wsproxy WebSocket (frames: services/wsproxy/term/term.c).
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, post } from '../api.js';
import { html, errText } from '../ui.js';

export function wsUrl(wsproxyAddr, token) {
  const base = String(wsproxyAddr)
    .replace(/\/+$/, '')
    .replace(/^http(s?):/i, (_, s) => 'ws' + s + ':');
  return base + '/ws?token=' + encodeURIComponent(token);
}

export function TerminalPage({ name }) {
  const box = useRef(null);
  const [state, setState] = useState({ phase: 'starting', msg: 'Opening the terminal…' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const term = new Terminal({
      cursorBlink: true,
      convertEol: false,
      scrollback: 5000,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace',
      fontSize: 14,
      theme: { background: '#111318', foreground: '#e6e6e6' },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(box.current);
    window.__tesseraTerm = term;
    try {
      fit.fit();
    } catch {
      /* not laid out yet */
    }
    let ws = null,
      closed = false;
    const sendSize = () => {
      if (ws && ws.readyState === 1) ws.send('\x01' + term.cols + ',' + term.rows);
    };
    const onResize = () => {
      try {
        fit.fit();
      } catch {
        /* hidden */
      }
    };
    window.addEventListener('resize', onResize);
    const resizeSub = term.onResize(sendSize);
    const dataSub = term.onData((d) => {
      if (ws && ws.readyState === 1) ws.send(d);
    });

    (async () => {
      try {
        const r = await post('/session/' + enc(name) + '/start-service', { app: 'ttyd' });
        if (closed) return;
        ws = new WebSocket(wsUrl(r.wsproxy_addr, r.token));
        ws.binaryType = 'arraybuffer';
        ws.onopen = () => {
          setState({ phase: 'open', msg: 'Connected' });
          onResize();
          sendSize();
          term.focus();
        };
        ws.onmessage = (ev) => {
          if (typeof ev.data === 'string') term.write(ev.data);
          else term.write(new Uint8Array(ev.data));
        };
        ws.onerror = () => {
          if (!closed) setState({ phase: 'closed', msg: 'The connection failed.' });
        };
        ws.onclose = (ev) => {
          if (closed) return;
          setState({
            phase: 'closed',
            msg:
              ev.code === 1000
                ? 'The shell exited.'
                : `Disconnected (code ${ev.code}${ev.reason ? ': ' + ev.reason : ''}).`,
          });
          term.write('\r\n\x1b[2m[connection closed]\x1b[0m\r\n');
        };
      } catch (e) {
        if (!closed) setState({ phase: 'error', msg: errText(e) });
      }
    })();

    return () => {
      closed = true;
      window.removeEventListener('resize', onResize);
      resizeSub.dispose();
      dataSub.dispose();
      if (ws) ws.close(1000);
      term.dispose();
      if (window.__tesseraTerm === term) window.__tesseraTerm = null;
    };
  }, [name, attempt]);

  return html`<div class="terminal-page">
    <header class="term-bar">
      <a class="brand" href="#/sessions">Tessera</a>
      <span>Terminal · <a href=${'#/sessions/' + enc(name)}>${name}</a></span>
      <span class=${'term-state ' + state.phase} role=${state.phase === 'error' ? 'alert' : 'status'} data-test="terminal-state" data-phase=${state.phase}>${state.msg}</span>
      ${
        (state.phase === 'closed' || state.phase === 'error') &&
        html`<button type="button" class="btn small" data-test="reconnect"
        onClick=${() => {
          setState({ phase: 'starting', msg: 'Opening the terminal…' });
          setAttempt(attempt + 1);
        }}>Reconnect</button>`
      }
    </header>
    <div class="term-box" ref=${box} data-test="terminal"></div>
  </div>`;
}
