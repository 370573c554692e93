// Page-wide alerts: a banner for anything unexpected (uncaught errors, rejected promises, parts
// that could not be drawn), and a clear "Studio restarted — reload" when the server behind the
// page is another process now (its token and preview port changed) or is gone.

import { h, clear } from './dom.js';
import { instance, onTokenRefused } from './api.js';

const box = () => document.getElementById('alerts');
const seen = new Set();

/** Show one alert (the same text once). */
export function report(message, level = 'bad') {
  const el = box();
  const text = String(message);
  if (!el || seen.has(text)) return;
  seen.add(text);
  el.append(h('div', { class: `banner ${level} alert`, role: 'alert' }, h('b', {}, 'Studio: '), text,
    h('button', { class: 'btn ghost small', onclick: e => { seen.delete(text); e.target.parentElement.remove(); } }, 'dismiss')));
}

let restartShown = false;
/** The server is another process (or none): say so, once, with a Reload button. */
export function restarted(why) {
  if (restartShown) return;
  restartShown = true;
  const el = box();
  if (!el) return;
  el.prepend(h('div', { class: 'banner bad alert', id: 'restarted', role: 'alert' },
    h('b', {}, 'Studio restarted — reload. '), why, ' ',
    h('button', { class: 'btn primary', onclick: () => location.reload() }, 'Reload')));
}

/** Ask the server who it is; a different instance means the page is stale. */
export async function checkInstance() {
  try {
    const res = await fetch('/api/health', { headers: { accept: 'application/json' } });
    // A remote Studio that no longer knows this page's token answers 401: it restarted.
    if (res.status === 401) { restarted('Its token is no longer valid: open the address `crumb studio` printed.'); return true; }
    const body = await res.json();
    if (body.instance && body.instance !== instance) restarted('This page came from an earlier Studio process: its token and preview address are no longer valid.');
    return true;
  } catch (_) {
    return false;
  }
}

/** Watch an EventSource: after an error, and when it reconnects, find out whether the server
 * restarted (a restarted server accepts the reconnect, so the error alone would not tell). */
export function watchConnection(source) {
  let broken = false;
  source.addEventListener('open', () => {
    const c = document.getElementById('conn'); if (c) c.className = 'conn on';
    if (broken) { broken = false; checkInstance(); }
  });
  source.addEventListener('error', () => {
    broken = true;
    const c = document.getElementById('conn'); if (c) c.className = 'conn off';
    checkInstance();
  });
}

export function installAlerts() {
  window.addEventListener('error', e => report(e.message || 'an error'));
  window.addEventListener('unhandledrejection', e => report((e.reason && e.reason.message) || String(e.reason)));
  onTokenRefused(() => checkInstance().then(() => restarted('Its write token was refused.')));
  const el = box();
  if (el) clear(el);
}
