// Scorecard, budgets, artifacts and per-role files.

import { h, clear, num, verdictPill } from './dom.js';
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

export function drawScorecard(el, card) {
  clear(el);
  el.append(h('h3', {}, 'Scorecard'));
  if (!card) { el.append(h('p', { class: 'muted' }, 'No verdict yet.')); return; }
  const prev = card.previous_aggregate;
  const delta = typeof prev === 'number' ? card.aggregate - prev : null;
  el.append(h('div', { class: 'score-head' },
    verdictPill(card.verdict, 'corrected by the engine'),
    h('span', { class: 'agg', id: 'aggregate' }, num(card.aggregate), h('small', {}, ' / 30')),
    delta !== null ? h('span', { class: 'delta ' + (delta >= 0 ? 'up' : 'down') }, (delta >= 0 ? '▲ ' : '▼ ') + num(Math.abs(delta))) : null,
    h('span', { class: 'muted small' }, `round ${card.round} · severity ${card.severity}`)));
  if (card.raw_verdict || card.raw_aggregate != null) {
    const differs = card.raw_verdict !== card.verdict || Math.abs((card.raw_aggregate ?? card.aggregate) - card.aggregate) > 1e-6;
    el.append(h('div', { class: 'claim' + (differs ? ' differs' : '') },
      'verifier claimed ', h('b', {}, card.raw_verdict || '—'), ' at ', h('b', {}, num(card.raw_aggregate)),
      differs ? ' — the engine corrected it' : ' — the engine agrees'));
  }
  const rows = card.dimensions.map(d => {
    const [label, tip] = SOURCE[d.source] || ['—', 'No source recorded'];
    return h('tr', { class: d.corrected_by_engine ? 'changed' : '' },
      h('td', { class: 'dim' }, d.key),
      h('td', {}, d.label),
      h('td', { class: 'num raw' }, num(d.raw)),
      h('td', { class: 'num' }, h('div', { class: 'bar' }, h('span', { style: `width:${Math.max(0, Math.min(100, d.corrected / 5 * 100))}%` })), h('span', { class: 'val' }, num(d.corrected))),
      h('td', {}, h('span', { class: 'chip src-' + (d.source || 'none'), title: tip }, label), d.corrected_by_engine ? h('span', { class: 'chip src-engine', title: 'Changed by the engine' }, 'corrected') : null));
  });
  el.append(h('table', { class: 'scores' },
    h('thead', {}, h('tr', {}, h('th', {}, ''), h('th', {}, ''), h('th', { class: 'num' }, 'raw'), h('th', { class: 'num' }, 'corrected'), h('th', {}, 'source'))),
    h('tbody', {}, rows)));
  if (card.corrections && card.corrections.length) {
    el.append(h('div', { class: 'audit' }, h('b', {}, 'Audit: '),
      card.corrections.map(c => h('span', { class: 'chip warn', title: c }, CORRECTIONS[c] || c.replaceAll('_', ' ')))));
  }
  if (card.feedback) el.append(h('p', { class: 'feedback' }, h('b', {}, 'Feedback: '), card.feedback));
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

export function drawBudgets(el, data) {
  clear(el);
  el.append(h('h3', {}, 'Budgets'));
  const limits = data.pipeline && data.pipeline.limits;
  if (!limits) { el.append(h('p', { class: 'muted' }, 'No limits: ' + (data.table_error || 'pipeline unavailable'))); return; }
  const s = data.state;
  const clock = s.clock || {};
  const wallMs = clock.started_ms != null && clock.latest_ms != null ? Math.max(0, clock.latest_ms - clock.started_ms) : 0;
  el.append(
    bar('respec', s.budgets.respecs, limits.max_respec),
    bar('verify', s.verification.count, limits.max_verify),
    bar('tokens', s.budgets.tokens, limits.tokens_hard, '', limits.tokens_warn),
    bar('wall clock', Math.round(wallMs / 60000 * 10) / 10, Math.round(limits.wall_clock_hard_ms / 60000 * 10) / 10, ' min', limits.wall_clock_warn_ms / 60000));
}

export async function drawArtifacts(el, id, data) {
  clear(el);
  const [{ files }, qaEvent] = await Promise.all([
    get(sessionPath(id, '/artifacts')),
    data.state.qa ? get(sessionPath(id, '/events/' + data.state.qa.event_id)).catch(() => null) : null,
  ]);
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
    const checks = qaEvent && qaEvent.event.data && Array.isArray(qaEvent.event.data.checks) ? qaEvent.event.data.checks : [];
    if (checks.length) {
      left.append(h('table', { class: 'checks' }, h('tbody', {}, checks.map(c => h('tr', {},
        h('td', {}, h('span', { class: 'chip check-' + (c.status || 'none') }, c.status || '?')),
        h('td', {}, h('b', {}, c.id || '?'), ' ', h('span', { class: 'muted small' }, c.kind || '')),
        h('td', { class: 'small' }, (c.findings || []).map(f => h('div', {}, f.message || f.code || ''))))))));
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
  // Game preview
  right.append(h('h3', {}, 'Game'));
  if (!entry) right.append(h('p', { class: 'muted' }, 'No HTML artifact yet.'));
  else {
    const rel = entry.path.slice('artifacts/'.length).split('/').map(encodeURIComponent).join('/');
    const src = `${previewOrigin}/s/${encodeURIComponent(id)}/${rel}`;
    right.append(h('iframe', { class: 'game', src, sandbox: 'allow-scripts allow-pointer-lock', referrerpolicy: 'no-referrer', title: 'game preview' }));
    right.append(h('div', { class: 'muted small' }, 'Runs on a separate origin with no access to Studio. ',
      h('a', { href: src, target: '_blank', rel: 'noopener noreferrer' }, 'open ↗')));
  }
}

export async function drawRoles(el, id) {
  clear(el);
  const { roles } = await get(sessionPath(id, '/roles'));
  const viewer = h('pre', { class: 'viewer' }, 'Pick a prompt or a log.');
  const list = h('div', { class: 'role-list' }, roles.map(r => h('div', { class: 'role' },
    h('b', {}, r.role),
    h('div', { class: 'small' }, 'prompts: ', r.prompts.length ? r.prompts.map(n => h('a', { href: '#', onclick: e => { e.preventDefault(); show('prompts', r.role, n); } }, `#${n} `)) : h('span', { class: 'muted' }, 'none')),
    h('div', { class: 'small' }, 'logs: ', r.logs.length ? r.logs.map(n => h('a', { href: '#', onclick: e => { e.preventDefault(); show('logs', r.role, n); } }, `#${n} `)) : h('span', { class: 'muted' }, 'none')))));
  async function show(kind, role, n) {
    viewer.textContent = 'Loading…';
    try { viewer.textContent = await getText(sessionPath(id, `/${kind}/${encodeURIComponent(role)}/${n}`)); }
    catch (err) { viewer.textContent = String(err.message || err); }
  }
  el.append(h('div', { class: 'roles' }, list, viewer));
}
