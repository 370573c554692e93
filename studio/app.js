// Studio's client: session list, session view, live stream, command bar. Routes: `#/` and
// `#/session/<id>` (the deep link `crumb run` prints).

import { h, clear, ago, clip, num, verdictPill, statusPill } from './dom.js';
import { get, post, sessionPath } from './api.js';
import { drawGraph } from './graph.js';
import { drawScorecard, drawBudgets, drawArtifacts, drawRoles } from './panels.js';
import { Feed, Transcript } from './feed.js';

const $ = sel => document.querySelector(sel);
const COMMANDS = ['/approve', '/veto ', '/pause ', '/resume ', '/goto ', '/swap ', '/append ', '/cancel ', '/reset-circuit ', '/ask status', '/ask cost', '/ask next', '/ask stuck', '/ask scorecard', '/note ', '/redo '];

let sessions = [];
let sessionTotal = 0;
let current = null; // { id, source, data, feed, timer }

// ---------------------------------------------------------------- sessions list

async function loadSessions(more = false) {
  const q = $('#session-filter').value.trim();
  const offset = more ? sessions.length : 0;
  const page = await get(`/api/sessions?limit=50&offset=${offset}${q ? '&q=' + encodeURIComponent(q) : ''}`);
  sessions = more ? sessions.concat(page.sessions) : page.sessions;
  sessionTotal = page.total;
  drawSessions();
}

/** A small red badge: a degraded run must never look like a normal one. */
function degradedPill(title) {
  return h('span', { class: 'pill degraded', title }, 'degraded');
}

function drawSessions() {
  const list = clear($('#sessions'));
  $('#session-count').textContent = `${sessionTotal} session${sessionTotal === 1 ? '' : 's'}`;
  for (const s of sessions) {
    list.append(h('li', { class: 'session' + (current && current.id === s.id ? ' active' : ''), dataset: { id: s.id } },
      h('a', { href: `#/session/${s.id}` },
        h('div', { class: 'row' }, h('span', { class: 'dot status-' + s.status }), h('code', {}, s.id.slice(-8)), statusPill(s.status),
          h('span', { class: 'spacer' }), s.degraded ? degradedPill('an agent was swapped to another adapter') : null,
          s.verdict ? verdictPill(s.verdict, s.verdict_source === 'engine' ? 'corrected by the engine' : 'as claimed by the verifier') : null),
        h('div', { class: 'goal' }, clip(s.goal, 90)),
        h('div', { class: 'muted small' }, `${s.pipeline} · ${ago(s.created)}${s.aggregate != null ? ' · ' + num(s.aggregate) + '/30' : ''}`))));
  }
  if (!sessions.length) list.append(h('li', { class: 'muted empty-list' }, 'No sessions yet.'));
  $('#more-sessions').hidden = sessions.length >= sessionTotal;
}

function watchSessions() {
  const source = new EventSource('/api/stream');
  source.addEventListener('session', ev => {
    const row = JSON.parse(ev.data);
    const i = sessions.findIndex(s => s.id === row.id);
    if (i >= 0) sessions[i] = row; else { sessions.unshift(row); sessionTotal += 1; }
    drawSessions();
  });
  source.addEventListener('removed', ev => {
    sessions = sessions.filter(s => s.id !== ev.data);
    drawSessions();
  });
}

// ---------------------------------------------------------------- new session

async function setupNewForm() {
  const form = $('#new-form');
  $('#new-toggle').addEventListener('click', async () => {
    form.hidden = !form.hidden;
    if (!form.hidden && !$('#new-pipeline').options.length) {
      const { pipelines, presets } = await get('/api/pipelines');
      for (const p of pipelines) $('#new-pipeline').append(h('option', { value: p }, p));
      for (const p of presets) $('#new-preset').append(h('option', { value: p }, p));
    }
  });
  $('#new-pitch').addEventListener('keydown', e => { if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) form.requestSubmit(); });
  form.addEventListener('submit', async e => {
    e.preventDefault();
    $('#new-status').textContent = 'starting…';
    const { ok, body } = await post('/api/sessions', { pipeline: $('#new-pipeline').value, pitch: $('#new-pitch').value, preset: $('#new-preset').value || null });
    if (!ok) { $('#new-status').textContent = body.error || 'failed'; return; }
    $('#new-status').textContent = '';
    form.hidden = true;
    location.hash = `#/session/${body.session_id}`;
    loadSessions();
  });
}

// ---------------------------------------------------------------- session view

function closeSession() {
  if (!current) return;
  current.source && current.source.close();
  clearTimeout(current.timer);
  current = null;
}

async function openSession(id) {
  closeSession();
  const main = clear($('#main'));
  const me = { id, source: null, data: null, timer: null, acks: new Map(), userByOffset: new Map(), ackFor: new Map() };
  current = me;
  drawSessions();
  main.append(h('div', { class: 'empty' }, 'Loading session ', h('code', {}, id), '…'));
  let data;
  try { data = await get(sessionPath(id)); }
  catch (err) { main.append(h('div', { class: 'empty' }, `Session ${id}: ${err.message}`)); return; }
  if (current !== me) return;
  clear(main);
  me.data = data;
  const tabs = ['Feed', 'Transcript', 'Artifacts', 'Roles'];
  const tabBar = h('nav', { class: 'tabs' }, tabs.map(t => h('button', { class: 'tab', dataset: { tab: t }, onclick: () => showTab(t) }, t)));
  const panes = Object.fromEntries(tabs.map(t => [t, h('section', { class: 'pane', dataset: { pane: t }, hidden: true })]));
  main.append(
    h('section', { class: 'session-head', id: 'session-head' }),
    h('div', { class: 'grid' },
      h('section', { class: 'card graph-card' }, h('h3', {}, 'Pipeline'), h('div', { id: 'graph' })),
      h('section', { class: 'card', id: 'scorecard' }),
      h('section', { class: 'card budgets', id: 'budgets' })),
    h('div', { class: 'card tabs-card' }, tabBar, Object.values(panes)),
    commandBar(me));
  me.feed = new Feed(h('div', { class: 'feed' }), (seq, e) => { showTab('Transcript'); me.transcript.show(seq, e); });
  panes.Feed.append(me.feed.el);
  me.transcript = new Transcript(panes.Transcript, id);
  let loaded = {};
  function showTab(t) {
    for (const b of tabBar.children) b.classList.toggle('active', b.dataset.tab === t);
    for (const [name, pane] of Object.entries(panes)) pane.hidden = name !== t;
    if (loaded[t]) return;
    loaded[t] = true;
    if (t === 'Transcript') me.transcript.load({});
    if (t === 'Artifacts') drawArtifacts(panes.Artifacts, id, me.data).catch(err => panes.Artifacts.append(String(err)));
    if (t === 'Roles') drawRoles(panes.Roles, id).catch(err => panes.Roles.append(String(err)));
  }
  me.reloadArtifacts = () => { if (loaded.Artifacts) drawArtifacts(panes.Artifacts, id, me.data).catch(() => {}); };
  showTab('Feed');
  drawSession(me);
  // Recent history, then the live stream from the last event shown.
  const recent = await get(sessionPath(id, '/events?limit=100'));
  if (current !== me) return;
  for (const { seq, event } of recent.events) me.feed.add(seq, event);
  const last = recent.events.length ? recent.events[recent.events.length - 1].event.id : null;
  connect(me, last);
  refreshGraph(me);
}

function connect(me, lastId) {
  const url = sessionPath(me.id, '/stream') + (lastId ? `?after=${lastId}` : '?from=start');
  const source = new EventSource(url);
  me.source = source;
  source.onopen = () => $('#conn').className = 'conn on';
  source.onerror = () => $('#conn').className = 'conn off';
  source.addEventListener('append', ev => {
    if (current !== me) return;
    const e = JSON.parse(ev.data);
    me.feed.add(null, e);
    noteAck(me, e);
    scheduleRefresh(me);
  });
  source.addEventListener('reset', () => { me.feed.reset(); scheduleRefresh(me); });
}

function scheduleRefresh(me) {
  clearTimeout(me.timer);
  me.timer = setTimeout(async () => {
    if (current !== me) return;
    try {
      const data = await get(sessionPath(me.id));
      const qaChanged = (data.state.qa && data.state.qa.event_id) !== (me.data.state.qa && me.data.state.qa.event_id);
      me.data = data;
      drawSession(me);
      refreshGraph(me);
      if (qaChanged) me.reloadArtifacts();
    } catch (_) { /* the next event retries */ }
  }, 250);
}

async function refreshGraph(me) {
  try { drawGraph($('#graph'), await get(sessionPath(me.id, '/graph'))); }
  catch (err) { clear($('#graph')).append(h('p', { class: 'muted' }, err.message)); }
}

function drawSession(me) {
  const d = me.data;
  const s = d.state;
  const card = d.scorecard;
  const status = s.done ? 'done' : s.awaiting ? 'awaiting' : d.row ? d.row.status : (d.meta ? d.meta.status : 'unknown');
  const head = clear($('#session-head'));
  head.append(
    h('div', { class: 'row' },
      h('h2', { id: 'session-goal' }, d.meta ? d.meta.goal : d.id),
      h('span', { class: 'spacer' }),
      statusPill(status),
      d.degraded ? degradedPill((d.swaps || []).map(w => `${w.role}: ${w.from || '?'} → ${w.to} (${w.cause})`).join('; ')) : null,
      card ? verdictPill(card.verdict, 'corrected by the engine') : verdictPill(null),
      h('span', { class: 'muted small' }, `${d.events} events`)),
    h('div', { class: 'muted small' }, h('code', {}, d.id), d.meta ? ` · ${d.meta.pipeline} · started ${ago(d.meta.created)}` : '',
      d.live ? h('span', { class: 'live' }, ' ● coordinator live') : ' · no coordinator running',
      d.unreadable_lines ? h('span', { class: 'warn' }, ` · ${d.unreadable_lines} unreadable lines skipped`) : ''));
  const attention = [];
  if (s.awaiting) attention.push(h('div', { class: 'banner await' }, h('b', {}, 'Waiting for you. '), 'The verdict asks a person to decide: send ', h('code', {}, '/approve'), ' or ', h('code', {}, '/veto <reason>'), ' below.'));
  if (s.done) attention.push(h('div', { class: 'banner done' }, h('b', {}, 'Finished: '), `${s.done.outcome || 'unknown outcome'} (${s.done.reason})`));
  if (d.degraded) attention.push(h('div', { class: 'banner bad degraded' }, h('b', {}, 'Degraded: '), (d.swaps || []).map(w => `${w.role} ran on ${w.to} instead of ${w.from || '?'} (${w.cause})`).join('; ')));
  if (s.paused) attention.push(h('div', { class: 'banner await' }, 'Paused. ', h('code', {}, '/resume'), ' to continue.'));
  if (d.table_error) attention.push(h('div', { class: 'banner bad' }, d.table_error));
  head.append(...attention);
  drawScorecard($('#scorecard'), card);
  drawBudgets($('#budgets'), d);
  roleNames = d.pipeline ? d.pipeline.roles : (d.meta ? d.meta.roles : []);
}

// ---------------------------------------------------------------- command bar

let roleNames = [];

function completions(text) {
  const at = text.lastIndexOf('@');
  if (at >= 0 && !text.slice(at).includes(' ')) {
    const part = text.slice(at + 1);
    return roleNames.filter(r => r.startsWith(part)).map(r => text.slice(0, at + 1) + r + ' ');
  }
  if (text.startsWith('/')) {
    const words = text.split(' ');
    if (words.length === 2 && ['/goto', '/pause', '/cancel', '/reset-circuit', '/swap'].includes(words[0])) {
      return roleNames.filter(r => r.startsWith(words[1])).map(r => `${words[0]} ${r}${words[0] === '/swap' ? '=' : ' '}`);
    }
    return COMMANDS.filter(c => c.startsWith(text) && c !== text);
  }
  return [];
}

function commandBar(me) {
  const thread = h('div', { class: 'thread', id: 'thread' });
  const hints = h('div', { class: 'hints' });
  const input = h('input', { id: 'command', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: '/approve · /veto <reason> · @role <message> · /ask status · plain text for every role', 'aria-label': 'command' });
  const showHints = () => {
    clear(hints);
    for (const c of completions(input.value).slice(0, 8)) {
      hints.append(h('button', { class: 'hint', type: 'button', onclick: () => { input.value = c; input.focus(); showHints(); } }, c));
    }
  };
  input.addEventListener('input', showHints);
  input.addEventListener('keydown', e => {
    if (e.key === 'Tab') {
      const c = completions(input.value);
      if (c.length) { e.preventDefault(); input.value = c[0]; showHints(); }
    }
  });
  const form = h('form', { class: 'command', onsubmit: async e => {
    // Enter always sends what is typed, even when it equals a bare command.
    e.preventDefault();
    const line = input.value.trim();
    if (!line) return;
    const card = h('div', { class: 'sent' }, h('code', {}, line), h('div', { class: 'ack muted small' }, 'sending…'));
    thread.append(card);
    thread.scrollTop = thread.scrollHeight;
    const { ok, body } = await post(sessionPath(me.id, '/inbox'), { line });
    const ack = card.querySelector('.ack');
    if (!ok) { ack.className = 'ack error small'; ack.textContent = '✗ ' + (body.error || 'refused'); return; }
    input.value = ''; showHints();
    ack.textContent = `→ ${body.command}${body.note ? ' · ' + body.note : ' · waiting for the coordinator…'}`;
    me.acks.set(body.inbox_offset, card);
    showAck(me, body.inbox_offset, card);
  } }, h('span', { class: 'prompt' }, '›'), input, h('button', { class: 'btn primary', type: 'submit' }, 'Send'));
  return h('section', { class: 'card commandbar' }, thread, hints, form);
}

// A user event carries the inbox offset of its line; its ack names the user event. Either may
// arrive on the stream before the POST's answer does, so both are remembered and matched from
// whichever side comes last.
function noteAck(me, e) {
  if (e.from === 'user' && e.data && typeof e.data.inbox_offset === 'number') {
    me.userByOffset.set(e.data.inbox_offset, e.id);
  }
  if (e.kind === 'ack' && e.metadata && e.metadata.ack_for) me.ackFor.set(e.metadata.ack_for, e);
  for (const [offset, card] of me.acks) showAck(me, offset, card);
}

function showAck(me, offset, card) {
  const userId = me.userByOffset.get(offset);
  if (!userId) return;
  const ack = card.querySelector('.ack');
  const reply = me.ackFor.get(userId);
  if (!reply) { ack.textContent = `→ recorded as ${userId.slice(-6)}, waiting for the ack…`; return; }
  const ok = !reply.data || reply.data.ok !== false;
  ack.className = 'ack small ' + (ok ? 'good' : 'error');
  ack.textContent = (ok ? '✓ ' : '✗ ') + (reply.body || 'acknowledged');
  me.acks.delete(offset);
}

// ---------------------------------------------------------------- routing

function route() {
  const m = location.hash.match(/^#\/session\/([0-9A-HJKMNP-TV-Z]{26})/i);
  if (m) openSession(m[1].toUpperCase());
  else { closeSession(); clear($('#main')).append(h('div', { class: 'empty' }, 'Pick a session on the left, or start a new one.')); drawSessions(); }
}

window.addEventListener('hashchange', route);
window.addEventListener('error', e => {
  // Never a blank page: show what broke.
  const main = $('#main');
  if (main && !main.querySelector('.crash')) main.prepend(h('div', { class: 'banner bad crash' }, 'Studio hit an error: ' + e.message));
});
$('#session-filter').addEventListener('input', () => loadSessions());
$('#more-sessions').addEventListener('click', () => loadSessions(true));
setupNewForm();
loadSessions().then(route).catch(err => clear($('#main')).append(h('div', { class: 'empty' }, String(err))));
watchSessions();
