// Studio's client: the session list, the new-session form and routing (`#/` and
// `#/session/<id>`, the deep link `crumb run` prints). The session view is in session.js.

import { h, clear, agoSpan, tickAgo, clip, num, obj, arr } from './dom.js';
import { get, post } from './api.js';
import { openSession, closeSession, currentId } from './session.js';
import { outcomePill, markPills, normalise } from './outcome.js';
import { installAlerts, report, watchConnection } from './alerts.js';

const $ = sel => document.querySelector(sel);

let sessions = [];
let sessionTotal = 0;

// ---------------------------------------------------------------- sessions list

async function loadSessions(more = false) {
  const q = $('#session-filter').value.trim();
  const offset = more ? sessions.length : 0;
  const page = obj(await get(`/api/sessions?limit=50&offset=${offset}${q ? '&q=' + encodeURIComponent(q) : ''}`));
  const rows = arr(page.sessions).filter(s => s && typeof s.id === 'string');
  sessions = more ? sessions.concat(rows) : rows;
  sessionTotal = typeof page.total === 'number' ? page.total : sessions.length;
  drawSessions();
  // A long session is folded in the background: ask again until its outcome is known.
  if (!more && rows.some(r => !r.outcome) && pendingRetries-- > 0) setTimeout(() => loadSessions().catch(() => {}), 2000);
}
let pendingRetries = 30;

function sessionRow(s) {
  const o = normalise(s.outcome);
  // The engine's corrected score only: a verifier's claim is never shown as the score.
  const score = s.verdict_source === 'engine' && typeof s.aggregate === 'number' ? ` · ${num(s.aggregate)}` : '';
  return h('li', { class: 'session' + (currentId() === s.id ? ' active' : ''), dataset: { id: s.id, outcome: o.kind } },
    h('a', { href: `#/session/${s.id}` },
      h('div', { class: 'row' }, h('span', { class: `dot tone-${o.tone}` }), h('code', {}, s.id.slice(-8)), outcomePill(o),
        h('span', { class: 'spacer' }), markPills(o)),
      h('div', { class: 'goal' }, clip(s.goal, 90)),
      h('div', { class: 'muted small' }, `${s.pipeline ?? ''} · `, agoSpan(s.created), score)));
}

function drawSessions() {
  const list = clear($('#sessions'));
  $('#session-count').textContent = `${sessionTotal} session${sessionTotal === 1 ? '' : 's'}`;
  for (const s of sessions) {
    try { list.append(sessionRow(s)); } catch (err) { report(`a session row: ${err.message}`); }
  }
  const q = $('#session-filter').value.trim();
  if (!sessions.length) list.append(h('li', { class: 'muted empty-list' }, q ? `No session matches “${q}”.` : 'No sessions yet.'));
  $('#more-sessions').hidden = sessions.length >= sessionTotal;
}

function watchSessions() {
  const source = new EventSource('/api/stream');
  watchConnection(source);
  source.addEventListener('session', ev => {
    let row;
    try { row = JSON.parse(ev.data); } catch (_) { return; }
    if (!row || typeof row.id !== 'string') return;
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
    $('#new-toggle').setAttribute('aria-expanded', String(!form.hidden));
    // Focus goes where the person will type next: into the form, and back to the toggle after.
    if (!form.hidden) $('#new-pipeline').focus(); else $('#new-toggle').focus();
    if (!form.hidden && !$('#new-pipeline').options.length) {
      let answer;
      try { answer = obj(await get('/api/pipelines')); } catch (err) { $('#new-status').textContent = err.message; return; }
      const pipelines = arr(answer.pipelines).filter(p => typeof p === 'string');
      for (const p of pipelines) $('#new-pipeline').append(h('option', { value: p }, p));
      for (const p of arr(answer.presets).filter(p => typeof p === 'string')) $('#new-preset').append(h('option', { value: p }, p));
      // Say why the list is empty rather than offering nothing.
      if (!pipelines.length) $('#new-status').textContent = answer.why || 'no pipelines found';
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
    loadSessions().catch(err => report(err.message));
  });
}

// ---------------------------------------------------------------- routing

function route() {
  const m = location.hash.match(/^#\/session\/([0-9A-HJKMNP-TV-Z]{26})/i);
  if (m) openSession(m[1].toUpperCase(), drawSessions).catch(err => report(err.message));
  else {
    closeSession();
    document.title = 'crumb studio';
    clear($('#main')).append(h('div', { class: 'empty' }, 'Pick a session on the left, or start a new one.'));
    drawSessions();
  }
}

installAlerts();
// Relative times ("14s ago") keep moving while the page is open.
setInterval(tickAgo, 5000);
window.addEventListener('hashchange', route);
$('#session-filter').addEventListener('input', () => loadSessions().catch(err => report(err.message)));
$('#more-sessions').addEventListener('click', () => loadSessions(true).catch(err => report(err.message)));
setupNewForm();
loadSessions().then(route).catch(err => { report(String(err.message || err)); route(); });
watchSessions();
