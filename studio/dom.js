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

export function time(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return isNaN(d) ? ts : d.toISOString().slice(11, 19);
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

export function clip(text, n) {
  text = text == null ? '' : String(text);
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}

export function num(v, digits = 1) {
  return typeof v === 'number' && isFinite(v) ? v.toFixed(digits) : '—';
}

export function verdictPill(verdict, extra) {
  const v = verdict || 'pending';
  return h('span', { class: 'pill verdict-' + v.toLowerCase(), title: extra || '' }, v);
}

export function statusPill(status) {
  return h('span', { class: 'pill status-' + (status || 'unknown') }, status || 'unknown');
}
