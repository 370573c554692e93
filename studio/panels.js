// Scorecard, budgets, artifacts and per-role files.

import { h, clear, num, verdictPill, obj, arr, duration } from './dom.js';
import { get, getText, sessionPath, previewOrigin } from './api.js';

const SOURCE = { model: ['model', 'The verifier model scored this'], qa: ['QA', 'Taken from execution QA'], engine: ['engine', 'Computed or corrected by the engine'] };
const CORRECTIONS = {
  scores_missing: 'the verdict carried no scores',
  score_out_of_range: 'a score was outside 0–5 and was clamped',
  exec_from_qa: 'D2 was replaced by the QA result',
  ac_failure_caps_spec_fit: 'a failed acceptance check caps D1',
  same_provider_discount: 'builder and verifier share a provider: discounted',
  aggregate_recomputed: 'the claimed aggregate did not add up: recomputed',
};

/** The scorecard, drawn from the pipeline's declared dimensions (`rubric`), raw beside corrected. */
export function drawScorecard(el, rawCard, rubric, ended) {
  clear(el);
  el.append(h('h3', {}, 'Scorecard'));
  const dims = arr(rubric).filter(d => d && typeof d.id === 'string');
  const card = rawCard && typeof rawCard === 'object' ? rawCard : null;
  const scale = dims.reduce((sum, d) => sum + (typeof d.scale === 'number' ? d.scale * (typeof d.weight === 'number' ? d.weight : 1) : 5), 0) || 30;
  if (!card) {
    el.append(h('p', { class: 'muted', id: 'no-verdict' }, ended ? 'No verdict: the run ended before the verifier scored it.' : 'No verdict yet.'));
  } else {
    const prev = card.previous_aggregate;
    const delta = typeof prev === 'number' && typeof card.aggregate === 'number' ? card.aggregate - prev : null;
    el.append(h('div', { class: 'score-head' },
      verdictPill(card.verdict, 'corrected by the engine'),
      h('span', { class: 'agg', id: 'aggregate' }, num(card.aggregate), h('small', {}, ` / ${num(scale, 0)}`)),
      delta !== null ? h('span', { class: 'delta ' + (delta >= 0 ? 'up' : 'down') }, (delta >= 0 ? '▲ ' : '▼ ') + num(Math.abs(delta))) : null,
      h('span', { class: 'muted small' }, `round ${card.round ?? '?'} · severity ${card.severity ?? '?'}`)));
    if (card.raw_verdict || card.raw_aggregate != null) {
      const differs = card.raw_verdict !== card.verdict || Math.abs((card.raw_aggregate ?? card.aggregate) - card.aggregate) > 1e-6;
      el.append(h('div', { class: 'claim' + (differs ? ' differs' : '') },
        `${typeof card.judge === 'string' && card.judge ? card.judge : 'the judge'} claimed `, h('b', {}, card.raw_verdict || '—'), ' ', h('b', {}, num(card.raw_aggregate)),
        differs ? ' · the engine corrected it' : ' · the engine agrees'));
    }
  }
  const scored = arr(card && card.dimensions).map(obj);
  const rows = dims.map(d => {
    const s = scored.find(x => String(x.key).toUpperCase() === d.id.toUpperCase()) || {};
    const [label, tip] = SOURCE[s.source || d.source] || ['—', 'No source recorded'];
    const max = typeof d.scale === 'number' && d.scale > 0 ? d.scale : 5;
    const value = typeof s.corrected === 'number' ? s.corrected : null;
    return h('tr', { class: s.corrected_by_engine ? 'changed' : '' },
      h('td', { class: 'dim' }, d.id),
      h('td', {}, String(d.label ?? d.id)),
      h('td', { class: 'num raw' }, num(s.raw)),
      h('td', { class: 'num' }, h('div', { class: 'bar' }, h('span', { style: `width:${value === null ? 0 : Math.max(0, Math.min(100, value / max * 100))}%` })), h('span', { class: 'val' }, num(value))),
      h('td', {}, h('span', { class: 'chip src-' + (s.source || d.source || 'none'), title: tip }, label), s.corrected_by_engine ? h('span', { class: 'chip src-engine', title: 'Changed by the engine' }, 'corrected') : null));
  });
  el.append(h('table', { class: 'scores' },
    h('thead', {}, h('tr', {}, h('th', {}, h('span', { class: 'visually-hidden' }, 'dimension')), h('th', {}, h('span', { class: 'visually-hidden' }, 'name')), h('th', { class: 'num' }, 'raw'), h('th', { class: 'num' }, 'corrected'), h('th', {}, 'source'))),
    h('tbody', {}, rows)));
  const corrections = arr(card && card.corrections).filter(c => typeof c === 'string');
  if (corrections.length) {
    el.append(h('div', { class: 'audit' }, h('b', {}, 'Audit: '),
      corrections.map(c => h('span', { class: 'chip warn', title: c }, CORRECTIONS[c] || c.replaceAll('_', ' ')))));
  }
  if (card && card.feedback) el.append(h('p', { class: 'feedback', title: String(card.feedback) }, h('b', {}, 'Feedback: '), String(card.feedback)));
  const join = obj(card && card.join);
  const branches = arr(join.branches).map(obj);
  if (branches.length) {
    // Parallel judges side by side, then the join: its declared rule and what it decided.
    el.append(h('div', { class: 'judges', id: 'judges' },
      h('table', { class: 'scores' },
        h('caption', { class: 'small muted' }, `${branches.length} judges · combined by ${String(join.combine ?? '?')}`),
        h('thead', {}, h('tr', {}, h('th', {}, 'judge'), h('th', {}, 'verdict'), h('th', { class: 'num' }, 'score'), h('th', {}, 'feedback'))),
        h('tbody', {},
          branches.map(b => h('tr', { class: 'judge-row', dataset: { role: String(b.role ?? '') } },
            h('td', {}, h('b', {}, String(b.role ?? '?'))), h('td', {}, verdictPill(b.verdict)), h('td', { class: 'num' }, num(b.aggregate)),
            h('td', { class: 'small', title: String(b.feedback ?? '') }, String(b.feedback ?? '').slice(0, 80)))),
          h('tr', { class: 'join-row' }, h('td', {}, h('b', {}, 'join')), h('td', {}, verdictPill(join.verdict)), h('td', { class: 'num' }, num(join.aggregate)),
            h('td', { class: 'small muted' }, `${String(join.combine ?? '')} · severity ${String(join.severity ?? '?')}`))))));
  }
}

function bar(label, used, max, unit = '', warnAt = null) {
  const ratio = max > 0 ? used / max : 0;
  const level = ratio >= 0.85 ? 'red' : ratio >= 0.6 || (warnAt && used >= warnAt) ? 'amber' : 'ok';
  return h('div', { class: 'budget ' + level, title: `${used}${unit} of ${max}${unit}` },
    h('div', { class: 'budget-label' }, h('span', {}, label), h('span', { class: 'muted' }, `${fmt(used)}${unit} / ${fmt(max)}${unit}`)),
    h('div', { class: 'track' }, h('span', { style: `width:${Math.min(100, ratio * 100).toFixed(1)}%` })));
}

function fmt(n) {
  if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M';
  if (n >= 1e4) return Math.round(n / 1e3) + 'k';
  return String(Math.round(n * 10) / 10);
}

/** The agents' working time: the server's count up to the last event, plus — while a coordinator
 * runs a turn and nobody is waited for — the time since that event (the server counts no further
 * until the next one arrives). */
function workingMs(data) {
  const time = obj(data.time);
  const s = obj(data.state);
  const base = typeof time.working_ms === 'number' ? time.working_ms : 0;
  const turnRuns = data.live && !s.done && obj(data.live_turn).role && typeof time.waiting_since_ms !== 'number';
  return turnRuns && typeof time.latest_ms === 'number' ? base + Math.max(0, Date.now() - time.latest_ms) : base;
}

/** Budgets, with the session's time split into work and waiting for a person, and its cost. */
export function drawBudgets(el, raw) {
  clear(el);
  const data = obj(raw);
  el.append(h('h3', {}, 'Budgets'));
  const limits = obj(obj(data.pipeline).limits);
  const s = obj(data.state);
  const budgets = obj(s.budgets);
  const time = obj(data.time);
  if (!Object.keys(limits).length) el.append(h('p', { class: 'muted' }, 'No limits: ' + (data.table_error || 'pipeline unavailable')));
  else {
    const working = workingMs(data);
    el.append(
      bar('respec', budgets.respecs ?? 0, limits.max_respec ?? 0),
      bar('verify', obj(s.verification).count ?? 0, limits.max_verify ?? 0),
      bar('tokens', budgets.tokens ?? 0, limits.tokens_hard ?? 0, '', limits.tokens_warn),
      bar('working time', Math.round(working / 60000 * 10) / 10, Math.round((limits.wall_clock_hard_ms ?? 0) / 60000 * 10) / 10, ' min', (limits.wall_clock_warn_ms ?? 0) / 60000));
  }
  const waitingSince = typeof time.waiting_since_ms === 'number' ? time.waiting_since_ms : null;
  const waiting = (typeof time.waiting_ms === 'number' ? time.waiting_ms : 0) + (waitingSince !== null && !s.done ? Math.max(0, Date.now() - Math.max(waitingSince, obj(s.clock).latest_ms ?? waitingSince)) : 0);
  const cost = obj(data.cost);
  el.append(h('div', { class: 'spend small', id: 'spend' },
    h('span', { title: 'the agents\' time, without the time the session waited for a person' }, `working ${duration(workingMs(data))}`),
    h('span', { class: waiting > 0 ? 'waiting' : 'muted', title: 'time the session waited for a person' }, ` · waiting for you ${duration(waiting)}`),
    h('span', {}, ` · ${budgets.tokens ?? 0} tokens`),
    cost.turns ? h('span', { title: `reported by the adapter for ${cost.turns} turn(s)` }, ` · $${num(cost.usd, 4)}`) : h('span', { class: 'muted', title: 'no adapter reported a cost' }, ' · cost not reported')));
}

/** A file of a session's preview: its own origin, `http://<session>.localhost:<port>`. */
export function previewUrl(id, rel, key) {
  const origin = previewOrigin.replace('{session}', String(id).toLowerCase());
  return `${origin}/${rel}${key ? '?k=' + encodeURIComponent(key) : ''}`;
}

export async function drawArtifacts(el, id, data) {
  clear(el);
  data = obj(data);
  data.state = obj(data.state);
  const [listing, qaEvent] = await Promise.all([
    get(sessionPath(id, '/artifacts')),
    data.state.qa ? get(sessionPath(id, '/events/' + data.state.qa.event_id)).catch(() => null) : null,
  ]);
  const files = arr(obj(listing).files).filter(f => f && typeof f.path === 'string');
  const shots = files.filter(f => /\.(png|jpe?g|webp)$/i.test(f.path) && (f.path.startsWith('qa/') || /screenshot/i.test(f.path)));
  const html = files.filter(f => f.path.startsWith('artifacts/') && /\.html?$/i.test(f.path));
  const entry = html.find(f => f.path === 'artifacts/game/index.html') || html.find(f => f.path.endsWith('/index.html') || f.path === 'artifacts/index.html') || html[0];
  const left = h('div', { class: 'art-left' });
  const right = h('div', { class: 'art-right' });
  el.append(h('div', { class: 'artifacts' }, left, right));
  // QA
  const qa = data.state.qa;
  left.append(h('h3', {}, 'Execution QA'));
  if (!qa) left.append(h('p', { class: 'muted' }, 'QA has not run yet.'));
  else {
    left.append(h('div', { class: 'qa-head' },
      h('span', { class: 'pill ' + (qa.exec_exit_code === 0 ? 'verdict-pass' : 'verdict-fail') }, qa.exec_exit_code === 0 ? 'QA passed' : `QA failed (exit ${qa.exec_exit_code})`),
      h('span', { class: 'muted small' }, ` AC ${qa.ac_passed} passed · ${qa.ac_failed} failed · ${qa.ac_skipped} skipped`)));
    const checks = arr(obj(obj(qaEvent).data).checks).map(obj);
    if (checks.length) {
      left.append(h('table', { class: 'checks' }, h('tbody', {}, checks.map(c => h('tr', {},
        h('td', {}, h('span', { class: 'chip check-' + (c.status || 'none') }, c.status || '?')),
        h('td', {}, h('b', {}, c.id || '?'), ' ', h('span', { class: 'muted small' }, c.kind || '')),
        h('td', { class: 'small' }, arr(c.findings).map(f => h('div', {}, String(obj(f).message || obj(f).code || '')))))))));
    }
  }
  for (const shot of shots) {
    left.append(h('figure', { class: 'shot' },
      h('img', { src: sessionPath(id, '/files/' + shot.path.split('/').map(encodeURIComponent).join('/')), alt: 'QA screenshot', loading: 'lazy' }),
      h('figcaption', { class: 'muted small' }, shot.path)));
  }
  left.append(h('h3', {}, 'Files'));
  left.append(h('ul', { class: 'files' }, files.map(f => h('li', {},
    h('a', { href: sessionPath(id, '/files/' + f.path.split('/').map(encodeURIComponent).join('/')), target: '_blank', rel: 'noopener' }, f.path),
    h('span', { class: 'muted small' }, ` ${f.size} B`)))));
  // The output's preview (a game, a page: whatever HTML the session made).
  right.append(h('h3', {}, 'Preview'));
  if (!entry) right.append(h('p', { class: 'muted' }, 'No HTML output to preview.'));
  else {
    const rel = entry.path.slice('artifacts/'.length).split('/').map(encodeURIComponent).join('/');
    const src = previewUrl(id, rel, data.preview_key);
    // The session's own origin (never Studio's), so the game may keep storage and fetch its files.
    right.append(h('iframe', { class: 'game', src, sandbox: 'allow-scripts allow-same-origin allow-pointer-lock', referrerpolicy: 'no-referrer', title: 'game preview' }));
    right.append(h('div', { class: 'muted small' }, 'Runs on this session\'s own origin, with no access to Studio or other sessions. ',
      h('a', { href: src, target: '_blank', rel: 'noopener noreferrer' }, 'open ↗')));
  }
}

/** Each role and its turns: for every turn its outcome, time, tokens and model (the waterfall's
 * spans), and its prompt and log. */
export async function drawRoles(el, id) {
  clear(el);
  const [{ roles }, timing] = await Promise.all([
    get(sessionPath(id, '/roles')),
    get(sessionPath(id, '/spans')).catch(() => ({ spans: [] })),
  ]);
  const spans = arr(obj(timing).spans).map(obj).filter(s => s.kind === 'turn');
  const viewer = h('pre', { class: 'viewer', tabindex: -1 }, 'Pick a prompt or a log.');
  const link = (kind, role, n, label) => h('a', { href: '#', onclick: e => { e.preventDefault(); show(kind, role, n); } }, label);
  const list = h('div', { class: 'role-list' }, arr(roles).map(obj).map(r => {
    const prompts = arr(r.prompts), logs = arr(r.logs);
    const turns = spans.filter(s => s.track === r.role);
    const count = Math.max(prompts.length, logs.length, turns.length);
    const rows = [];
    for (let i = 0; i < count; i++) {
      const turn = turns[i];
      const n = i + 1;
      rows.push(h('li', { class: 'turn small' + (turn && turn.status !== 'ok' ? ' turn-failed' : '') },
        h('b', {}, `#${n}`),
        turn ? ` ${turn.status} · ${duration(Math.max(0, turn.end_ms - turn.start_ms))}` : '',
        turn && turn.tokens_in != null ? ` · ${turn.tokens_in}→${turn.tokens_out ?? 0} tok` : '',
        turn && typeof turn.cost_usd === 'number' ? ` · $${num(turn.cost_usd, 4)}` : '',
        turn && turn.model ? ` · ${turn.model}` : '',
        ' · ', prompts.includes(n) ? link('prompts', r.role, n, 'prompt') : h('span', { class: 'muted' }, 'no prompt'),
        ' · ', logs.includes(n) ? link('logs', r.role, n, 'log') : h('span', { class: 'muted' }, 'no log')));
    }
    return h('div', { class: 'role', dataset: { role: String(r.role) } },
      h('b', {}, r.role),
      rows.length ? h('ol', { class: 'turns' }, rows) : h('div', { class: 'small muted' }, 'no turns'));
  }));
  async function show(kind, role, n) {
    viewer.textContent = 'Loading…';
    try { viewer.textContent = await getText(sessionPath(id, `/${kind}/${encodeURIComponent(role)}/${n}`)); }
    catch (err) { viewer.textContent = String(err.message || err); }
  }
  el.append(h('div', { class: 'roles' }, list, viewer));
}

/** Where the time and tokens went: one lane per role (and QA, and the person), a bar per turn, QA
 * run or wait, tool calls inside turns; failed and timed-out turns marked. Then turns, tokens, cost
 * and wall time per role. The spans are the server's, the same as `crumb export --format
 * chrome-trace`. */
export async function drawWaterfall(el, id) {
  clear(el);
  const data = obj(await get(sessionPath(id, '/spans')));
  const spans = arr(data.spans).map(obj);
  if (!spans.length) { el.append(h('p', { class: 'muted' }, 'No turns yet.')); return; }
  const total = Math.max(1, typeof data.duration_ms === 'number' ? data.duration_ms : 1);
  const tracks = [...new Set(spans.map(s => String(s.track ?? '?')))];
  const pct = ms => `${Math.max(0, Math.min(100, (ms / total) * 100)).toFixed(3)}%`;
  const lanes = tracks.map(track => h('div', { class: 'lane', dataset: { track } },
    h('span', { class: 'lane-name' }, track),
    h('div', { class: 'lane-bars' }, spans.filter(s => s.track === track).map(s => {
      const ms = Math.max(0, (s.end_ms ?? 0) - (s.start_ms ?? 0));
      const tip = [`${s.name} · ${duration(ms)} · ${s.status}`, s.tokens_in != null ? `${s.tokens_in}→${s.tokens_out ?? 0} tokens` : '', s.model || ''].filter(Boolean).join('\n');
      return h('span', { class: `span span-${s.kind} status-${String(s.status ?? '').replace(/[^a-z_]/gi, '')}`, title: tip, dataset: { event: String(s.event_id ?? '') },
        style: `left:${pct(s.start_ms ?? 0)};width:${pct(ms)}` },
        arr(s.tools).map(obj).map(t => h('span', { class: 'tool', title: `${t.name} · ${duration(Math.max(0, t.end_ms - t.start_ms))}`,
          style: `left:${(((t.start_ms - s.start_ms) / Math.max(1, ms)) * 100).toFixed(2)}%;width:${((Math.max(0, t.end_ms - t.start_ms) / Math.max(1, ms)) * 100).toFixed(2)}%` })));
    }))));
  el.append(h('h3', {}, `Time · ${duration(total)}`), h('div', { class: 'waterfall', id: 'waterfall' }, lanes));
  const roles = arr(data.roles).map(obj);
  el.append(h('table', { class: 'checks role-costs', id: 'role-costs' },
    h('thead', {}, h('tr', {}, ['role', 'turns', 'failed', 'tokens in', 'tokens out', 'cache read/write', 'reasoning', 'cost', 'wall time'].map(c => h('th', {}, c)))),
    h('tbody', {}, roles.map(r => h('tr', { dataset: { role: String(r.role ?? '') } },
      h('td', {}, h('b', {}, String(r.role ?? '?'))), h('td', { class: 'num' }, String(r.turns ?? 0)), h('td', { class: 'num' }, String(r.failed ?? 0)),
      h('td', { class: 'num' }, String(r.tokens_in ?? 0)), h('td', { class: 'num' }, String(r.tokens_out ?? 0)),
      h('td', { class: 'num' }, `${r.cache_read ?? 0}/${r.cache_write ?? 0}`), h('td', { class: 'num' }, String(r.reasoning ?? 0)),
      h('td', { class: 'num' }, typeof r.cost_usd === 'number' ? `$${num(r.cost_usd, 4)}` : 'not reported'),
      h('td', { class: 'num' }, duration(r.wall_ms)))))));
}
