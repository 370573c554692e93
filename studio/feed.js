// The live event feed and the paged, filterable transcript (never the whole history in the DOM,
// so a 100,000-event session stays usable).

import { h, clear, time, stamp, clip, obj, arr, rovingRows } from './dom.js';
import { get, sessionPath } from './api.js';
import { reasonLabel } from './outcome.js';

const FEED_MAX = 300;
/** Bookkeeping fields never worth a row of their own. */
const INTERNAL = new Set(['inbox_offset', 'effect_id', 'ack_for']);

function tone(kind) {
  if (kind === 'judge.score') return 'score';
  if (kind === 'qa.result') return 'qa';
  if (kind === 'error' || kind === 'audit') return 'bad';
  if (kind.startsWith('user.')) return 'user';
  if (kind === 'ack') return 'ack';
  if (kind === 'done') return 'done';
  if (kind.startsWith('agent.')) return 'agent';
  return '';
}

const fixed = (v, d) => (typeof v === 'number' && isFinite(v) ? v.toFixed(d) : '?');

/** A turn's usage as short parts: tokens in→out, cache read/write, reasoning, cost, model. */
export function usage(raw) {
  const m = obj(raw);
  const parts = [];
  if (m.tokens_in != null || m.tokens_out != null) parts.push(`${m.tokens_in ?? 0}→${m.tokens_out ?? 0} tok`);
  if (m.cache_read || m.cache_write) parts.push(`cache ${m.cache_read ?? 0}/${m.cache_write ?? 0}`);
  if (m.thinking_tokens) parts.push(`reasoning ${m.thinking_tokens}`);
  if (m.cost_usd != null) parts.push(`$${fixed(m.cost_usd, 4)}`);
  if (m.model) parts.push(String(m.model));
  return parts;
}

/** `data` without bookkeeping fields, as short JSON (nothing when only bookkeeping is left). */
function dataText(data) {
  const d = obj(data);
  const kept = Object.fromEntries(Object.entries(d).filter(([k]) => !INTERNAL.has(k)));
  return Object.keys(kept).length ? JSON.stringify(kept) : '';
}

/** One line of text for any event, whatever shape its fields have. */
export function summary(raw) {
  const e = obj(raw);
  const kind = String(e.kind ?? '');
  const body = typeof e.body === 'string' ? e.body : e.body == null ? '' : JSON.stringify(e.body);
  const scores = obj(e.scores);
  const data = obj(e.data);
  if (kind === 'judge.score' && e.scores) return `${scores.verdict || '?'} · claimed ${scores.aggregate ?? '?'}${body ? ' · ' + body : ''}`;
  if (kind === 'qa.result' && e.data) return `exit=${data.exec_exit_code ?? '?'}${body ? ' · ' + body : ''}`;
  if (kind === 'agent.stop' && e.metadata) return [body, ...usage(e.metadata)].filter(Boolean).join(' · ');
  if (kind === 'done') {
    const reason = typeof data.reason === 'string' ? data.reason : body;
    return `${data.outcome ? String(data.outcome) + ': ' : ''}${reasonLabel(reason) || body}`;
  }
  const artifacts = arr(e.artifacts).map(a => (a && typeof a === 'object' ? a.path : a)).filter(p => typeof p === 'string');
  if (artifacts.length && !body) return artifacts.join(', ');
  return body || dataText(e.data);
}

/** A large event comes as a summary (`truncated`, its `bytes`, a `full` link to the exact line):
 * the row says so and links to the whole event. */
export function fullLink(e) {
  if (e.truncated !== true || typeof e.full !== 'string' || !e.full.startsWith('/api/sessions/')) return null;
  const size = Number(e.bytes) > 0 ? ` (${(Number(e.bytes) / 1048576).toFixed(1)} MB)` : '';
  return h('a', { class: 'ev-full small', href: e.full, target: '_blank', rel: 'noopener', onclick: ev => ev.stopPropagation() }, `truncated · full event${size}`);
}

/** A feed or transcript row; never throws (a row that cannot be drawn says so). With `onFork`,
 * the row carries a "fork" button (shown by the feed's `can-fork` class). */
export function row(seq, raw, onPick, onFork, extra) {
  const e = obj(raw);
  let text;
  try { text = summary(e); } catch (err) { text = `(cannot summarise this event: ${err.message})`; }
  const kind = String(e.kind ?? '?');
  const done = kind === 'done' ? obj(e.data).reason : null;
  return h('div', { class: 'ev tone-' + tone(kind), tabindex: -1, dataset: { id: String(e.id ?? '') }, onclick: () => onPick && onPick(seq, e) },
    h('span', { class: 'ev-time', title: stamp(e.ts) }, time(e.ts)),
    h('span', { class: 'ev-from' }, String(e.from ?? '?')),
    h('span', { class: 'ev-kind', title: typeof done === 'string' ? done : '' }, kind),
    h('span', { class: 'ev-body' }, clip(text, 240)),
    fullLink(e),
    onFork ? h('button', { class: 'btn ghost small ev-fork', type: 'button', tabindex: -1, title: 'Start a new session from this point', 'aria-label': `fork from this ${kind}`,
      onclick: ev => { ev.stopPropagation(); onFork(e, ev.currentTarget); } }, 'fork') : null,
    extra ? extra(e) : null);
}

/** The live feed, newest row first (so the newest rows are what the screen shows). */
export class Feed {
  /** `onFork(event, button)`: rows from the goal on offer a fork from there. */
  constructor(el, onPick, onFork, onFiles) {
    this.el = el; this.onPick = onPick; this.onFork = onFork; this.onFiles = onFiles; this.ids = new Set(); this.pastGoal = null;
    el.setAttribute('role', 'group');
    el.setAttribute('aria-label', 'live feed, newest first: ↑/↓ to move, Enter to open');
    this.keys = rovingRows(el);
  }
  reset() { clear(this.el); this.ids.clear(); this.pastGoal = null; }
  /** Offer (or hide) the rows' fork buttons: only once the session has ended or has no coordinator. */
  canFork(yes) { this.el.classList.toggle('can-fork', !!yes); }
  add(seq, raw) {
    const e = obj(raw);
    const kind = String(e.kind ?? '');
    // Rows arrive oldest first: before the goal (when its start was seen) there is no fork point.
    if (kind === 'session.start') this.pastGoal = false;
    if (kind === 'goal') this.pastGoal = true;
    const forkable = this.onFork && kind !== 'session.start' && this.pastGoal !== false;
    // De-duplicate by event id: a reconnect can never double an event.
    const id = String(e.id ?? '');
    if (id && this.ids.has(id)) return;
    if (id) this.ids.add(id);
    // A row that recorded files offers its round's release, preview and "what changed".
    const files = this.onFiles && Array.isArray(e.artifacts) && e.artifacts.length ? this.onFiles : null;
    this.el.prepend(row(seq, e, this.onPick, forkable ? this.onFork : null, files));
    while (this.el.childElementCount > FEED_MAX) {
      this.ids.delete(this.el.lastElementChild.dataset.id);
      this.el.lastElementChild.remove();
    }
    this.keys.refresh();
  }
}

export class Transcript {
  constructor(el, id) {
    this.id = id;
    this.el = el;
    this.kind = h('input', { type: 'search', placeholder: 'kinds (a,b)', 'aria-label': 'kinds' });
    this.role = h('input', { type: 'search', placeholder: 'from (role)', 'aria-label': 'from' });
    this.q = h('input', { type: 'search', placeholder: 'text', 'aria-label': 'text' });
    this.info = h('span', { class: 'muted small' });
    this.list = h('div', { class: 'tx-list', role: 'group', 'aria-label': 'transcript page: ↑/↓ to move, Enter to open' });
    this.keys = rovingRows(this.list);
    this.detail = h('pre', { class: 'detail', hidden: true });
    const apply = () => this.load({});
    for (const input of [this.kind, this.role, this.q]) input.addEventListener('change', apply);
    el.append(h('div', { class: 'tx-bar' }, this.kind, this.role, this.q,
      h('button', { class: 'btn', onclick: apply }, 'Filter'),
      h('button', { class: 'btn ghost', onclick: () => this.load({ after: -1 }) }, '⇤ first'),
      h('button', { class: 'btn ghost', onclick: () => this.page(-1) }, '‹ older'),
      h('button', { class: 'btn ghost', onclick: () => this.page(1) }, 'newer ›'),
      h('button', { class: 'btn ghost', onclick: () => this.load({}) }, 'latest ⇥'),
      this.info), this.list, this.detail);
    this.first = null; this.last = null;
  }
  params(extra) {
    const p = new URLSearchParams({ limit: '100' });
    if (this.kind.value.trim()) p.set('kind', this.kind.value.trim());
    if (this.role.value.trim()) p.set('role', this.role.value.trim());
    if (this.q.value.trim()) p.set('q', this.q.value.trim());
    for (const [k, v] of Object.entries(extra)) if (v !== undefined && v !== null) p.set(k, String(v));
    return p;
  }
  async page(dir) {
    if (dir < 0 && this.first !== null) return this.load({ before: this.first });
    if (dir > 0 && this.last !== null) return this.load({ after: this.last });
  }
  async load(extra) {
    if (extra.after === -1) extra = { first: true };
    let page;
    try { page = await get(sessionPath(this.id, '/events?' + this.params(extra))); }
    catch (err) { this.info.textContent = String(err.message || err); return; }
    const events = arr(page.events).filter(x => x && typeof x === 'object');
    if (!events.length) { this.info.textContent = `no matching events (of ${page.total})`; return; }
    clear(this.list);
    for (const { seq, event } of events) this.list.append(row(seq, event, (s, e) => this.show(s, e)));
    this.keys.refresh();
    this.first = events[0].seq; this.last = events[events.length - 1].seq;
    this.info.textContent = `#${this.first + 1}–#${this.last + 1} of ${page.total}`;
  }
  show(seq, e) {
    this.detail.hidden = false;
    this.detail.textContent = `#${seq + 1}\n` + JSON.stringify(e, null, 2);
    const full = fullLink(e);
    if (full) this.detail.prepend(full, '\n');
    this.detail.tabIndex = -1;
    this.detail.focus({ preventScroll: true });
  }
}
