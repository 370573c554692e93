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

let adapters = [];

/** An adapter's readiness in a few words, as `crumb doctor` found it. */
function readiness(a) {
  if (a.ready) return a.version ? `${a.adapter}: ready (${a.version})` : `${a.adapter}: ready`;
  return `${a.adapter}: ${a.installed ? 'not logged in' : 'not installed'}${a.fix ? ' — ' + a.fix : ''}`;
}

function adapterOptions(select, blank) {
  clear(select).append(h('option', { value: '' }, blank));
  for (const a of adapters) select.append(h('option', { value: a.adapter }, `${a.adapter}${a.ready ? '' : ' (not ready)'}`));
}

/** The declared inputs as form fields (types, enums, defaults, required) and a binding per role. */
let formFor = null;
async function loadPipelineForm() {
  const inputs = $('#new-inputs');
  const bindings = $('#new-bindings');
  const path = $('#new-pipeline').value;
  // Drawn once per pipeline: what the person typed is never redrawn away.
  if (!path || formFor === path) return;
  formFor = path;
  let form;
  try { form = obj(await get(`/api/pipelines/form?path=${encodeURIComponent(path)}`)); }
  catch (err) { $('#new-status').textContent = err.message; formFor = null; return; }
  if (formFor !== path) return; // another pipeline was picked meanwhile
  for (const box of [inputs, bindings]) { while (box.children.length > 1) box.lastChild.remove(); box.hidden = true; }
  for (const spec of arr(form.inputs).map(obj)) {
    const name = String(spec.name ?? '');
    const id = `new-input-${name}`;
    const values = arr(spec.values).map(String);
    let field;
    if (spec.type === 'enum') field = h('select', { id, dataset: { input: name, type: 'enum' } }, values.map(v => h('option', { value: v, selected: spec.default === v }, v)));
    else if (spec.type === 'boolean') field = h('input', { id, type: 'checkbox', checked: spec.default === true, dataset: { input: name, type: 'boolean' } });
    else if (spec.type === 'integer' || spec.type === 'number') field = h('input', { id, type: 'number', step: spec.type === 'integer' ? '1' : 'any', value: spec.default ?? '', required: !!spec.required, dataset: { input: name, type: spec.type } });
    else field = h('input', { id, type: 'text', value: spec.default ?? '', required: !!spec.required, dataset: { input: name, type: 'string' } });
    inputs.append(h('label', { for: id }, `${name}${spec.required ? ' *' : ''}${spec.description ? ' — ' + spec.description : ''}`, field));
  }
  inputs.hidden = !arr(form.inputs).length;
  for (const role of arr(form.roles).map(String)) {
    const select = h('select', { id: `new-bind-${role}`, dataset: { role } });
    adapterOptions(select, '(as above)');
    bindings.append(h('label', { for: select.id }, role, select));
  }
  bindings.hidden = !arr(form.roles).length;
  const scenario = $('#new-scenario');
  if (scenario.options.length <= 1) for (const sc of arr(form.scenarios).map(String)) scenario.append(h('option', { value: sc }, sc));
}

/** The form's values as `POST /api/sessions` takes them. */
function formRequest() {
  const inputs = {};
  for (const field of document.querySelectorAll('#new-inputs [data-input]')) {
    const type = field.dataset.type;
    if (type === 'boolean') inputs[field.dataset.input] = field.checked;
    else if (field.value === '') continue;
    else inputs[field.dataset.input] = type === 'integer' || type === 'number' ? Number(field.value) : field.value;
  }
  const bindings = {};
  for (const select of document.querySelectorAll('#new-bindings [data-role]')) if (select.value) bindings[select.dataset.role] = select.value;
  return {
    pipeline: $('#new-pipeline').value, pitch: $('#new-pitch').value, preset: $('#new-preset').value || null,
    adapter: $('#new-adapter').value || null, mock_scenario: $('#new-scenario').value || null, inputs, bindings,
  };
}

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
      try { adapters = arr(obj(await get('/api/adapters')).adapters).map(obj); } catch (_) { adapters = []; }
      adapterOptions($('#new-adapter'), '(the default binding)');
      for (const select of document.querySelectorAll('#new-bindings select')) adapterOptions(select, '(as above)');
      $('#new-readiness').textContent = adapters.filter(a => 'version' in a).map(readiness).join(' · ');
      await loadPipelineForm();
    }
  });
  $('#new-pipeline').addEventListener('change', () => loadPipelineForm());
  $('#new-pitch-file').addEventListener('change', async e => {
    const file = e.target.files && e.target.files[0];
    if (file) $('#new-pitch').value = (await file.text()).trim().split('\n')[0].slice(0, 4096);
  });
  $('#new-pitch').addEventListener('keydown', e => { if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) form.requestSubmit(); });
  form.addEventListener('submit', async e => {
    e.preventDefault();
    $('#new-status').textContent = 'starting…';
    const { ok, body } = await post('/api/sessions', formRequest());
    // A run `crumb run` refuses is refused here, with its reason.
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
