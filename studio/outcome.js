// A session's outcome, drawn the same way everywhere: the list, the header, the banner, the
// page title and the favicon. The server decides it (src/studio/outcome.rs); this only draws it,
// and tolerates anything (an older server, a missing field) by falling back to "unknown".

import { h, agoSpan } from './dom.js';

const TONES = new Set(['good', 'bad', 'warn', 'live', 'idle']);

/** The outcome object, or a neutral stand-in when the server sent none (or nonsense). */
export function normalise(o) {
  if (!o || typeof o !== 'object') return { kind: 'unknown', tone: 'idle', title: 'Unknown', detail: '', code: null, action: null, marks: [], resumable: false, why: null };
  return {
    kind: typeof o.kind === 'string' ? o.kind : 'unknown',
    tone: TONES.has(o.tone) ? o.tone : 'idle',
    title: typeof o.title === 'string' ? o.title : 'Unknown',
    detail: typeof o.detail === 'string' ? o.detail : '',
    code: typeof o.code === 'string' ? o.code : null,
    action: typeof o.action === 'string' ? o.action : null,
    marks: Array.isArray(o.marks) ? o.marks.filter(m => m && typeof m.text === 'string') : [],
    resumable: o.resumable === true,
    since: typeof o.since === 'string' ? o.since : null,
    why: typeof o.why === 'string' ? o.why : null,
  };
}

/** A small pill: the outcome's title in its colour, the reason code on hover. */
export function outcomePill(raw) {
  const o = normalise(raw);
  return h('span', { class: `pill outcome tone-${o.tone} outcome-${o.kind}`, title: [o.detail, o.code && `(${o.code})`].filter(Boolean).join(' ') }, o.title);
}

/** Marks of a degraded run: a red "degraded" pill per swap, an amber "mock" pill. */
export function markPills(raw) {
  const o = normalise(raw);
  const swaps = o.marks.filter(m => m.kind === 'degraded');
  const mock = o.marks.filter(m => m.kind === 'mock');
  return [
    swaps.length ? h('span', { class: 'pill degraded', title: swaps.map(m => m.text).join('\n') }, 'degraded') : null,
    mock.length ? h('span', { class: 'pill mock', title: mock.map(m => m.text).join('\n') }, 'mock') : null,
  ];
}

/** The banner under the session's title: outcome in words, what to do, and the buttons. */
export function outcomeBanner(raw, buttons = []) {
  const o = normalise(raw);
  return h('div', { class: `banner outcome-banner tone-${o.tone} outcome-${o.kind}`, id: 'outcome' },
    h('div', { class: 'row' },
      h('b', { class: 'outcome-title' }, o.title),
      h('span', { class: 'outcome-detail', title: o.code || '' }, o.detail ? ' — ' + o.detail : '', o.since ? agoSpan(o.since, ' since ') : null),
      h('span', { class: 'spacer' }),
      buttons),
    o.action ? h('div', { class: 'outcome-action small' }, o.action) : null,
    o.why ? h('div', { class: 'outcome-why small muted', id: 'outcome-why' }, 'Why: ', o.why) : null,
    o.marks.map(m => h('div', { class: `mark mark-${m.kind === 'mock' ? 'mock' : 'degraded'} small` }, m.kind === 'mock' ? 'Mock: ' : 'Degraded: ', m.text)));
}

const FAVICON = { good: '#3fb68b', bad: '#f47067', warn: '#e7b23d', live: '#5b9cf0', idle: '#8a93a5' };

/** The tab's title and favicon follow the open session's outcome. */
export function titleAndFavicon(raw, goal) {
  const o = normalise(raw);
  document.title = `${o.title} · ${String(goal || '').slice(0, 40)} · crumb studio`;
  const colour = FAVICON[o.tone] || FAVICON.idle;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="${colour}"/></svg>`;
  let link = document.querySelector('link[rel=icon]');
  if (!link) { link = document.createElement('link'); link.rel = 'icon'; document.head.append(link); }
  link.href = 'data:image/svg+xml,' + encodeURIComponent(svg);
  link.dataset.tone = o.tone;
}

const REASONS = {
  verdict_pass: 'the verdict passed it',
  approved: 'approved by a person',
  rejected: 'rejected',
  too_many_verify: 'too many verifications without a pass',
  too_many_respec: 'too many re-plans',
  token_exhausted: 'out of tokens',
  wall_clock_exhausted: 'out of time',
  pass_without_qa: 'a pass without a successful QA run',
  idle: 'nothing happened for too long',
};

/** A reason code in words for feed rows (the banner's words come from the server). */
export function reasonLabel(code) {
  if (typeof code !== 'string') return '';
  if (REASONS[code]) return REASONS[code];
  const [head, rest] = code.split(':');
  if (head === 'circuit_open') return `circuit opened: ${rest} kept failing`;
  if (head === 'degraded_to_mock') return `${rest} ran on the mock adapter`;
  if (head === 'route_budget') return `route ${rest} hit its max`;
  return code.replaceAll('_', ' ');
}
