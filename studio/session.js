// The session view: outcome first (banner, actions), then graph, scorecard and budgets, the
// command bar, and the tabs (feed with the live turn's log, transcript, artifacts, roles). Every
// draw tolerates any JSON the server can send: a part that cannot be drawn says so and the rest
// of the view goes on.

import { h, clear, agoSpan, zone, obj, arr } from './dom.js';
import { get, getText, post, sessionPath } from './api.js';
import { drawGraph } from './graph.js';
import { drawScorecard, drawBudgets, drawArtifacts, drawRoles, drawWaterfall } from './panels.js';
import { Feed, Transcript } from './feed.js';
import { commandBar, loadThread, noteAck, queuedVerdict, sendLine, setRoles } from './command.js';
import { normalise, outcomePill, markPills, outcomeBanner, titleAndFavicon } from './outcome.js';
import { report, watchConnection } from './alerts.js';
import { roundButtons, versionsPane } from './versions.js';

const $ = sel => document.querySelector(sel);
/** While a session can still move, its view is refreshed this often even without events. */
const IDLE_REFRESH_MS = 4000;
const LOG_POLL_MS = 1500;

let current = null; // { id, source, data, feed, timer, ticker, ... }
export const currentId = () => (current ? current.id : null);

export function closeSession() {
  if (!current) return;
  if (current.source) current.source.close();
  clearTimeout(current.timer);
  clearInterval(current.ticker);
  clearTimeout(current.logTimer);
  current = null;
}

/** Draw one part; a part that throws shows why instead of taking the view down. */
function safely(what, el, draw) {
  try { draw(); } catch (err) {
    report(`${what}: ${err.message}`);
    if (el) clear(el).append(h('p', { class: 'muted' }, `${what} could not be drawn: ${err.message}`));
  }
}

export async function openSession(id, onChange) {
  closeSession();
  const main = clear($('#main'));
  const me = { id, source: null, data: null, timer: null, acks: new Map(), userByOffset: new Map(), ackFor: new Map(), answers: new Map(), history: [], pendingLines: [], onChange };
  current = me;
  onChange();
  main.append(h('div', { class: 'empty' }, 'Loading session ', h('code', {}, id), '…'));
  let data;
  try { data = await get(sessionPath(id)); }
  catch (err) { clear(main).append(h('div', { class: 'empty' }, `Session ${id}: ${err.message}`)); return; }
  if (current !== me) return;
  clear(main);
  me.data = obj(data);
  const tabs = ['Feed', 'Transcript', 'Artifacts', 'Roles', 'Time', 'Versions'];
  // The WAI-ARIA tabs pattern: one tab stop, ←/→ (Home/End) move between tabs.
  const tabBar = h('nav', { class: 'tabs', role: 'tablist', 'aria-label': 'session views' }, tabs.map(t => h('button', {
    class: 'tab', id: `tab-${t}`, role: 'tab', 'aria-controls': `pane-${t}`, 'aria-selected': 'false', tabindex: -1,
    dataset: { tab: t }, onclick: () => showTab(t),
  }, t)));
  tabBar.addEventListener('keydown', e => {
    const i = tabs.indexOf(obj(e.target.dataset).tab);
    if (i < 0) return;
    const next = { ArrowRight: (i + 1) % tabs.length, ArrowLeft: (i + tabs.length - 1) % tabs.length, Home: 0, End: tabs.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    showTab(tabs[next]);
    tabBar.children[next].focus();
  });
  const panes = Object.fromEntries(tabs.map(t => [t, h('section', { class: 'pane', id: `pane-${t}`, role: 'tabpanel', 'aria-labelledby': `tab-${t}`, dataset: { pane: t }, hidden: true })]));
  main.append(
    h('section', { class: 'session-head', id: 'session-head' }),
    h('div', { id: 'outcome-slot' }),
    h('section', { class: 'story', id: 'story', 'aria-label': 'rounds' }),
    h('div', { class: 'grid' },
      h('section', { class: 'card graph-card' }, h('h3', {}, 'Pipeline'), h('div', { id: 'graph' })),
      h('section', { class: 'card', id: 'scorecard' }),
      h('section', { class: 'card budgets', id: 'budgets' })),
    commandBar(me),
    h('div', { class: 'card tabs-card' }, tabBar, Object.values(panes)));
  me.liveLog = h('div', { class: 'live-log', id: 'live-log', hidden: true });
  me.feed = new Feed(h('div', { class: 'feed', id: 'feed' }), (seq, e) => { showTab('Transcript'); me.transcript.show(seq, e); },
    (e, button) => forkAt(me, e, button), e => roundButtons(me, e, me.versions));
  panes.Feed.append(me.liveLog, me.feed.el);
  me.transcript = new Transcript(panes.Transcript, id);
  me.versions = versionsPane(panes.Versions, id);
  me.versions.open = () => showTab('Versions');
  const loaded = {};
  function showTab(t) {
    for (const b of tabBar.children) {
      const on = b.dataset.tab === t;
      b.classList.toggle('active', on);
      b.setAttribute('aria-selected', String(on));
      b.tabIndex = on ? 0 : -1;
    }
    for (const [name, pane] of Object.entries(panes)) pane.hidden = name !== t;
    if (loaded[t]) return;
    loaded[t] = true;
    if (t === 'Transcript') me.transcript.load({});
    if (t === 'Artifacts') drawArtifacts(panes.Artifacts, id, me.data).catch(err => panes.Artifacts.append(String(err)));
    if (t === 'Roles') loaded.RolesDone = drawRoles(panes.Roles, id, me.data).catch(err => panes.Roles.append(String(err)));
    if (t === 'Time') drawWaterfall(panes.Time, id).catch(err => panes.Time.append(String(err)));
    if (t === 'Versions') me.versions.reload();
  }
  // A node of the graph opens what it did: a role's turns (prompt, log, usage, outcome of each),
  // QA's runs.
  me.pickNode = async node => {
    if (node.shape === 'qa') { showTab('Artifacts'); return; }
    showTab('Roles');
    await loaded.RolesDone;
    const card = panes.Roles.querySelector(`.role[data-role="${CSS.escape(node.role)}"]`);
    for (const c of panes.Roles.querySelectorAll('.role.picked')) c.classList.remove('picked');
    if (card) { card.classList.add('picked'); card.scrollIntoView({ block: 'nearest' }); const first = card.querySelector('a, button'); if (first) first.focus(); }
  };
  me.reloadArtifacts = () => { if (loaded.Artifacts) drawArtifacts(panes.Artifacts, id, me.data).catch(() => {}); };
  showTab('Feed');
  me.redraw = () => { if (current === me) drawSession(me); };
  drawSession(me);
  loadThread(me);
  // Recent history, then the live stream from the last event shown, then a fresh state: whatever
  // happened between the first read and the stream's start is folded in at once.
  let recent = { events: [] };
  try { recent = obj(await get(sessionPath(id, '/events?limit=100'))); } catch (err) { report(`events: ${err.message}`); }
  if (current !== me) return;
  const events = arr(recent.events).filter(x => x && typeof x === 'object');
  for (const { seq, event } of events) safely('a feed row', null, () => me.feed.add(seq, event));
  const last = events.length ? obj(events[events.length - 1].event).id : null;
  connect(me, last);
  refresh(me);
  me.ticker = setInterval(() => { if (current === me && !obj(me.data.state).done) refresh(me); }, IDLE_REFRESH_MS);
}

function connect(me, lastId) {
  const url = sessionPath(me.id, '/stream') + (lastId ? `?after=${encodeURIComponent(lastId)}` : '?from=start');
  const source = new EventSource(url);
  me.source = source;
  watchConnection(source);
  source.addEventListener('append', ev => {
    if (current !== me) return;
    let e;
    try { e = JSON.parse(ev.data); } catch (err) { report(`a streamed event is not JSON: ${err.message}`); return; }
    safely('a feed row', null, () => { me.feed.add(null, e); noteAck(me, e); });
    scheduleRefresh(me);
  });
  source.addEventListener('reset', () => { me.feed.reset(); scheduleRefresh(me); });
}

function scheduleRefresh(me) {
  clearTimeout(me.timer);
  me.timer = setTimeout(() => refresh(me), 150);
}

async function refresh(me) {
  if (current !== me) return;
  let data;
  try { data = obj(await get(sessionPath(me.id))); } catch (_) { return; /* the next event or tick retries */ }
  if (current !== me) return;
  const qaOf = d => obj(obj(d.state).qa).event_id;
  const qaChanged = qaOf(data) !== qaOf(me.data);
  me.data = data;
  drawSession(me);
  refreshGraph(me);
  if (qaChanged) me.reloadArtifacts();
}

async function refreshGraph(me) {
  const el = $('#graph');
  try {
    const graph = await get(sessionPath(me.id, '/graph'));
    if (current === me) safely('the graph', el, () => drawGraph(el, graph, node => me.pickNode(node)));
  } catch (err) { if (el) clear(el).append(h('p', { class: 'muted' }, err.message)); }
}

/** The buttons the outcome offers: approve/veto a waiting verdict, Resume, Stop. */
function actions(me, o, d) {
  const s = obj(d.state);
  const out = [];
  const awaiting = obj(s.awaiting);
  // An approve or veto already queued: offering the other would queue a contradiction.
  if (!s.done && awaiting.on === 'verdict' && !queuedVerdict(me)) {
    out.push(h('button', { class: 'btn good', id: 'approve', onclick: () => sendLine(me, '/approve') }, 'Approve'));
    out.push(h('button', { class: 'btn bad', id: 'veto', onclick: () => { const i = $('#command'); i.value = '/veto '; i.focus(); } }, 'Veto…'));
  }
  if (o.resumable) out.push(h('button', { class: 'btn primary', id: 'resume', onclick: e => control(me, 'resume', e.target) }, 'Resume'));
  if (d.live && !s.done) out.push(h('button', { class: 'btn ghost', id: 'stop', title: 'stop the coordinator as Ctrl-C would; Resume continues', onclick: e => control(me, 'stop', e.target) }, 'Stop'));
  return out;
}

async function control(me, what, button) {
  button.disabled = true;
  button.textContent = what === 'resume' ? 'Resuming…' : 'Stopping…';
  const { ok, body } = await post(sessionPath(me.id, '/' + what), {});
  if (!ok) report(`${what}: ${body.error || 'refused'}`, 'warn');
  refresh(me);
}

/** Start a fork from event `e` and open it once the server has created it. */
async function forkAt(me, e, button) {
  const at = String(obj(e).id ?? '');
  if (!at) { report('fork: this event has no id'); return; }
  button.disabled = true;
  const { ok, body } = await post(sessionPath(me.id, '/fork'), { at });
  button.disabled = false;
  if (!ok || typeof body.session_id !== 'string') { report(`fork: ${body.error || 'refused'}`); return; }
  const url = typeof body.url === 'string' && body.url.includes('#') ? body.url.slice(body.url.indexOf('#')) : `#/session/${encodeURIComponent(body.session_id)}`;
  location.hash = url;
}

/** "forked from <parent> at <event>", the parent a link, when the session is a fork. */
function forkLine(d) {
  const fork = obj(d.fork);
  if (typeof fork.parent !== 'string' || !fork.parent) return null;
  return h('div', { class: 'muted small', id: 'fork-of' }, 'forked from ',
    h('a', { href: `#/session/${encodeURIComponent(fork.parent)}` }, fork.parent),
    ' at ', h('code', {}, String(fork.at ?? '?')));
}

/** "inputs: audience = "kids" · rounds = 3": the values the run recorded, when it has any. */
function inputsLine(d) {
  const inputs = Object.entries(obj(d.inputs));
  if (!inputs.length) return null;
  return h('div', { class: 'muted small', id: 'session-inputs' }, 'inputs: ',
    ...inputs.map(([name, value], i) => h('span', {}, i ? ' · ' : '', h('code', {}, `${name} = ${JSON.stringify(value)}`))));
}

function drawSession(me) {
  const d = obj(me.data);
  const s = obj(d.state);
  const meta = obj(d.meta);
  const o = normalise(d.outcome);
  safely('the header', $('#session-head'), () => {
    const head = clear($('#session-head'));
    head.append(
      h('div', { class: 'row' },
        h('h2', { id: 'session-goal' }, String(meta.goal ?? d.id ?? '')),
        h('span', { class: 'spacer' }),
        outcomePill(o), markPills(o),
        h('span', { class: 'muted small' }, `${d.events ?? 0} events`)),
      h('div', { class: 'muted small' }, h('code', {}, String(d.id ?? '')), meta.pipeline ? ` · ${meta.pipeline} · started ` : '',
        meta.created ? agoSpan(meta.created) : '',
        d.live ? h('span', { class: 'live' }, ' ● coordinator live') : ' · no coordinator running',
        ` · times in ${zone}`,
        d.unreadable_lines ? h('span', { class: 'warn' }, ` · ${d.unreadable_lines} unreadable lines skipped`) : ''),
      // `append` would write a missing line as the text "null".
      ...[forkLine(d), inputsLine(d)].filter(Boolean));
  });
  if (me.feed) me.feed.canFork(!!s.done || !d.live);
  safely('the outcome', $('#outcome-slot'), () => {
    const slot = clear($('#outcome-slot'));
    slot.append(outcomeBanner(o, actions(me, o, d)));
    if (s.paused && !s.done) slot.append(h('div', { class: 'banner await' }, 'Paused. ', h('code', {}, '/resume'), ' to continue.'));
    const queued = queuedVerdict(me);
    if (queued && !s.done) {
      slot.append(h('div', { class: 'banner await', id: 'queued' }, h('code', {}, queued),
        d.live ? ' is sent; the coordinator has not read it yet.' : ' is queued: it is applied when the session is resumed.'));
    }
    if (d.table_error) slot.append(h('div', { class: 'banner bad' }, String(d.table_error)));
  });
  titleAndFavicon(o, meta.goal);
  // Said once per change (the banner itself is redrawn on every refresh).
  const said = `${o.title}${o.detail ? ': ' + o.detail : ''}`;
  if (me.announced !== said) { me.announced = said; const a = $('#announce'); if (a) a.textContent = said; }
  safely('the story', $('#story'), () => drawStory($('#story'), obj(d.story)));
  safely('the scorecard', $('#scorecard'), () => drawScorecard($('#scorecard'), d.scorecard, d.rubric, !!s.done));
  safely('the budgets', $('#budgets'), () => drawBudgets($('#budgets'), d));
  setRoles(d.pipeline ? obj(d.pipeline).roles : meta.roles);
  if (me.setCommandsEnabled) {
    if (s.done) me.setCommandsEnabled(false, `The session has ended (${o.title.toLowerCase()}): a line would change nothing.`);
    else me.setCommandsEnabled(true);
  }
  tailLiveLog(me, obj(d.live_turn));
}

/** The story line: one row per round, in the engine's words (`crumb status` prints the same), so
 * a run that recovered from a crash reads differently from a clean one. */
/** Unfold (or fold) a round's line; remembered on the story's element across redraws. */
function toggleRound(el, li) {
  const n = Number(li.dataset.round);
  if (li.classList.toggle('open')) el.openRounds.add(n); else el.openRounds.delete(n);
}

function drawStory(el, story) {
  clear(el);
  el.openRounds = el.openRounds || new Set();
  const rounds = arr(story.rounds).map(obj);
  if (!rounds.length) return;
  const list = h('ol', { class: 'rounds' });
  rounds.forEach((r, i) => {
    if (i === 1 && story.rounds_left_out > 0) list.append(h('li', { class: 'muted small' }, `… ${story.rounds_left_out} rounds left out …`));
    const words = [`R${r.number ?? '?'}`, ...arr(r.steps).map(st => String(obj(st).text ?? '')), typeof r.then === 'string' ? r.then : ''].filter(Boolean).join(' · ');
    // The text is all there for assistive technology; only the eye sees it clipped to one line.
    list.append(h('li', { class: 'round' + (el.openRounds.has(r.number) ? ' open' : ''), title: words, tabindex: 0, dataset: { round: String(r.number ?? '') },
      onclick: e => toggleRound(el, e.currentTarget), onkeydown: e => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggleRound(el, e.currentTarget); } } },
      h('b', { class: 'round-no' }, `R${r.number ?? '?'}`),
      arr(r.steps).map(obj).map(st => h('span', { class: `step step-${String(st.tone ?? '')}` }, String(st.text ?? ''))),
      typeof r.then === 'string' ? h('span', { class: 'step step-then' }, r.then) : null));
  });
  if (typeof story.ended === 'string') list.append(h('li', { class: 'round ended small' }, story.ended));
  el.append(list);
}

/** The live turn's log, tailed while the turn runs. */
async function tailLiveLog(me, turn) {
  clearTimeout(me.logTimer);
  const box = me.liveLog;
  if (!box) return;
  // Only while a coordinator drives the turn: an interrupted session's last turn is not "working".
  if (!turn.role || obj(me.data.state).done || !me.data.live) { box.hidden = true; return; }
  box.hidden = false;
  try {
    const roles = arr(obj(await get(sessionPath(me.id, '/roles'))).roles);
    const logs = arr(obj(roles.find(r => obj(r).role === turn.role)).logs).filter(n => typeof n === 'number');
    const text = logs.length ? await getText(sessionPath(me.id, `/logs/${encodeURIComponent(turn.role)}/${Math.max(...logs)}`)) : '(no output yet)';
    if (current !== me) return;
    clear(box).append(h('div', { class: 'small muted' }, `${turn.role} is working since `, agoSpan(turn.since), ' — its log:'),
      h('pre', { class: 'viewer' }, text.split('\n').slice(-12).join('\n')));
  } catch (err) { clear(box).append(h('div', { class: 'small muted' }, `log: ${err.message}`)); }
  me.logTimer = setTimeout(() => { if (current === me) tailLiveLog(me, obj(me.data.live_turn)); }, LOG_POLL_MS);
}
