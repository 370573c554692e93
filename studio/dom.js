// Tiny DOM helpers: build elements without innerHTML (no injection from transcript text).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    // Through the CSSOM: the page's CSP refuses style attributes.
    else if (k === 'style') el.style.cssText = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

/** The browser's time zone, named once in the header ("times in Europe/Paris"). */
export const zone = (() => {
  try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time'; } catch (_) { return 'local time'; }
})();

/** A local wall-clock time (HH:MM:SS); anything unparsable is shown as it is. */
export function time(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  if (isNaN(d)) return String(ts);
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
}

/** A local date and time with the zone, for hovers and "since …". */
export function stamp(ts) {
  const d = new Date(ts);
  if (isNaN(d)) return String(ts ?? '');
  return d.toLocaleString([], { hour12: false, timeZoneName: 'short' });
}

/** A duration in ms as "2 min 5 s", "1 h 3 min". */
export function duration(ms) {
  if (typeof ms !== 'number' || !isFinite(ms) || ms < 0) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function ago(ts) {
  const d = new Date(ts);
  if (isNaN(d)) return '';
  const s = Math.max(0, Math.round((Date.now() - d) / 1000));
  if (s < 60) return s + 's ago';
  if (s < 3600) return Math.floor(s / 60) + 'm ago';
  if (s < 86400) return Math.floor(s / 3600) + 'h ago';
  return Math.floor(s / 86400) + 'd ago';
}

/** A relative time that keeps moving ("14s ago"), the exact time on hover: `tickAgo` updates
 * every one on the page, so a row drawn a minute ago never still says "0s ago". */
export function agoSpan(ts, prefix = '') {
  return h('span', { class: 'ago', title: stamp(ts), dataset: { ts: String(ts ?? ''), prefix } }, prefix + ago(ts));
}

export function tickAgo() {
  for (const el of document.querySelectorAll('span.ago[data-ts]')) el.textContent = (el.dataset.prefix || '') + ago(el.dataset.ts);
}

/** One tab stop for a long list of rows (the feed, the transcript) rather than one per row and
 * per button: ↑/↓ (Home/End) move between rows, Enter or Space opens the focused row, and Tab
 * goes on to that row's own buttons (fork). Call `refresh()` after adding rows. */
export function rovingRows(list, selector = '.ev') {
  const rows = () => [...list.children].filter(r => r.matches(selector));
  const activate = row => {
    for (const r of rows()) {
      const on = r === row;
      r.tabIndex = on ? 0 : -1;
      for (const b of r.querySelectorAll('button')) b.tabIndex = on ? 0 : -1;
    }
  };
  list.addEventListener('focusin', e => {
    const row = e.target.closest(selector);
    if (row && row.parentElement === list && row.tabIndex !== 0) activate(row);
  });
  list.addEventListener('keydown', e => {
    const row = e.target.closest(selector);
    if (!row || row.parentElement !== list) return;
    if ((e.key === 'Enter' || e.key === ' ') && e.target === row) { e.preventDefault(); row.click(); return; }
    const all = rows();
    const i = all.indexOf(row);
    const next = { ArrowDown: all[i + 1], ArrowUp: all[i - 1], Home: all[0], End: all[all.length - 1] }[e.key];
    if (next) { e.preventDefault(); activate(next); next.focus(); }
  });
  return {
    refresh() {
      const all = rows();
      for (const r of all) if (r.tabIndex !== 0) { r.tabIndex = -1; for (const b of r.querySelectorAll('button')) b.tabIndex = -1; }
      if (all.length && !all.some(r => r.tabIndex === 0)) activate(all[0]);
    },
  };
}

export function clip(text, n) {
  text = text == null ? '' : String(text);
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

export function num(v, digits = 1) {
  return typeof v === 'number' && isFinite(v) ? v.toFixed(digits) : '—';
}

export function verdictPill(verdict, extra) {
  const v = typeof verdict === 'string' && verdict ? verdict : 'pending';
  return h('span', { class: 'pill verdict-' + v.toLowerCase(), title: extra || '' }, v);
}

/** A plain object, or an empty one: render code reads fields without guarding each. */
export function obj(v) { return v && typeof v === 'object' && !Array.isArray(v) ? v : {}; }

/** An array, or an empty one. */
export function arr(v) { return Array.isArray(v) ? v : []; }
