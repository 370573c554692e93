// The live event feed and the paged, filterable transcript (never the whole history in the DOM,
// so a 100,000-event session stays usable).

import { h, clear, time, clip } from './dom.js';
import { get, sessionPath } from './api.js';

const FEED_MAX = 300;

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

/** A turn's usage as short parts: tokens in→out, cache read/write, reasoning, cost, model. */
export function usage(m) {
  const parts = [];
  if (m.tokens_in != null || m.tokens_out != null) parts.push(`${m.tokens_in ?? 0}→${m.tokens_out ?? 0} tok`);
  if (m.cache_read || m.cache_write) parts.push(`cache ${m.cache_read ?? 0}/${m.cache_write ?? 0}`);
  if (m.thinking_tokens) parts.push(`reasoning ${m.thinking_tokens}`);
  if (m.cost_usd != null) parts.push(`$${m.cost_usd.toFixed(4)}`);
  if (m.model) parts.push(m.model);
  return parts;
}

export function summary(e) {
  if (e.kind === 'judge.score' && e.scores) return `${e.scores.verdict || '?'} · claimed ${e.scores.aggregate ?? '?'}/30${e.body ? ' · ' + e.body : ''}`;
  if (e.kind === 'qa.result' && e.data) return `exit=${e.data.exec_exit_code ?? '?'}${e.body ? ' · ' + e.body : ''}`;
  if (e.kind === 'agent.stop' && e.metadata) return [e.body || '', ...usage(e.metadata)].join(' · ');
  if (e.artifacts && e.artifacts.length && !e.body) return e.artifacts.map(a => a.path).join(', ');
  return e.body || (e.data ? JSON.stringify(e.data) : '');
}

function row(seq, e, onPick) {
  return h('div', { class: 'ev tone-' + tone(e.kind), dataset: { id: e.id }, onclick: () => onPick && onPick(seq, e) },
    h('span', { class: 'ev-time' }, time(e.ts)),
    h('span', { class: 'ev-from' }, e.from),
    h('span', { class: 'ev-kind' }, e.kind),
    h('span', { class: 'ev-body' }, clip(summary(e), 240)));
}

export class Feed {
  constructor(el, onPick) { this.el = el; this.onPick = onPick; this.ids = new Set(); }
  reset() { clear(this.el); this.ids.clear(); }
  add(seq, e) {
    // De-duplicate by event id: a reconnect can never double an event.
    if (this.ids.has(e.id)) return;
    this.ids.add(e.id);
    const stick = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - 24;
    this.el.append(row(seq, e, this.onPick));
    while (this.el.childElementCount > FEED_MAX) {
      this.ids.delete(this.el.firstElementChild.dataset.id);
      this.el.firstElementChild.remove();
    }
    if (stick) this.el.scrollTop = this.el.scrollHeight;
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
    this.list = h('div', { class: 'tx-list' });
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
    const events = page.events;
    if (!events.length) { this.info.textContent = `no matching events (of ${page.total})`; return; }
    clear(this.list);
    for (const { seq, event } of events) this.list.append(row(seq, event, (s, e) => this.show(s, e)));
    this.first = events[0].seq; this.last = events[events.length - 1].seq;
    this.info.textContent = `#${this.first + 1}–#${this.last + 1} of ${page.total}`;
  }
  show(seq, e) {
    this.detail.hidden = false;
    this.detail.textContent = `#${seq + 1}\n` + JSON.stringify(e, null, 2);
  }
}
