// The pipeline graph: a layered drawing of the compiled routes (the same nodes and edges as
// `crumb graph`), with how often each edge was taken and the session's current node.

import { svg, clear } from './dom.js';

const W = 132, H = 34, GAP_Y = 62, GAP_X = 28;

function ranks(graph) {
  const rank = new Map();
  const out = new Map();
  for (const e of graph.edges) {
    if (!out.has(e.from)) out.set(e.from, []);
    out.get(e.from).push(e.to);
  }
  const start = graph.nodes.find(n => n.shape === 'goal') || graph.nodes[0];
  if (!start) return rank;
  rank.set(start.id, 0);
  const queue = [start.id];
  while (queue.length) {
    const id = queue.shift();
    for (const to of out.get(id) || []) {
      if (!rank.has(to)) { rank.set(to, rank.get(id) + 1); queue.push(to); }
    }
  }
  let max = Math.max(0, ...rank.values());
  for (const n of graph.nodes) if (!rank.has(n.id)) rank.set(n.id, ++max);
  return rank;
}

function shortLabel(label) {
  return label.replace(/^#\d+\s*/, '').replace(/^verdict /, '');
}

/** The graph as the server sent it, made safe to draw, with the engine's stop as a node. */
function normalise(raw) {
  const g = raw && typeof raw === 'object' ? raw : {};
  const nodes = (Array.isArray(g.nodes) ? g.nodes : [])
    .filter(n => n && typeof n.id === 'string')
    .map(n => ({ id: n.id, label: typeof n.label === 'string' ? n.label : n.id, shape: typeof n.shape === 'string' ? n.shape : 'event' }));
  const ids = new Set(nodes.map(n => n.id));
  const edges = (Array.isArray(g.edges) ? g.edges : [])
    .filter(e => e && ids.has(e.from) && ids.has(e.to))
    .map(e => ({ from: e.from, to: e.to, label: String(e.label ?? ''), count: typeof e.count === 'number' ? e.count : 0 }));
  const stop = g.stop && typeof g.stop === 'object' && typeof g.stop.id === 'string' ? g.stop : null;
  if (stop && !ids.has(stop.id)) {
    // An end the pipeline does not draw (a budget, the circuit breaker): the engine stopped here.
    nodes.push({ id: stop.id, label: `stopped: ${String(stop.label ?? stop.code ?? '')}`, shape: 'stop', code: String(stop.code ?? '') });
    if (typeof stop.from === 'string' && ids.has(stop.from)) edges.push({ from: stop.from, to: stop.id, label: String(stop.code ?? ''), count: 1 });
  }
  return { nodes, edges, current: typeof g.current === 'string' ? g.current : null };
}

/** Draw the graph at its natural size (labels 12 px, never scaled down) in a scrolling frame — pan
 * by scrolling, zoom with + and − — and make every role and QA node open what it did:
 * `onPick(node)` with `{ id, shape, role }`. */
export function drawGraph(container, raw, onPick) {
  const frame = container.querySelector('.graph-frame');
  const keep = frame ? { left: frame.scrollLeft, top: frame.scrollTop } : null;
  clear(container);
  const graph = normalise(raw);
  if (!graph.nodes.length) {
    container.append(document.createTextNode('No graph.'));
    return;
  }
  const rank = ranks(graph);
  const rows = [];
  for (const n of graph.nodes) {
    const r = rank.get(n.id);
    (rows[r] = rows[r] || []).push(n);
  }
  const widest = Math.max(...rows.filter(Boolean).map(r => r.length));
  const width = Math.max(420, widest * (W + GAP_X) + GAP_X);
  const pos = new Map();
  let y = 16;
  for (const row of rows) {
    if (!row) continue;
    const total = row.length * W + (row.length - 1) * GAP_X;
    let x = (width - total) / 2;
    for (const n of row) { pos.set(n.id, { x, y }); x += W + GAP_X; }
    y += H + GAP_Y;
  }
  const height = y - GAP_Y + 24;
  const zoom = Math.max(1, Number(container.dataset.zoom) || 1);
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, width: width * zoom, height: height * zoom, class: 'graph', role: 'group', 'aria-label': 'pipeline graph: roles and QA open their turns' });
  root.append(svg('defs', {},
    svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' })),
    svg('marker', { id: 'arrow-hot', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead hot' }))));
  // Several edges between the same two nodes are merged into one drawn edge.
  const merged = new Map();
  for (const e of graph.edges) {
    const key = e.from + '→' + e.to;
    const m = merged.get(key) || { from: e.from, to: e.to, count: 0, labels: [] };
    m.count += e.count; m.labels.push(e.label + (e.count ? `  ×${e.count}` : ''));
    merged.set(key, m);
  }
  let side = 0;
  for (const e of merged.values()) {
    const a = pos.get(e.from), b = pos.get(e.to);
    if (!a || !b) continue;
    const hot = e.count > 0;
    let d, lx, ly;
    if (rank.get(e.to) > rank.get(e.from)) {
      const x1 = a.x + W / 2, y1 = a.y + H, x2 = b.x + W / 2, y2 = b.y;
      d = `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
      lx = (x1 + x2) / 2; ly = (y1 + y2) / 2;
    } else {
      // A loop back up: route it around the right or left side.
      const right = (side++ % 2) === 0;
      const x1 = right ? a.x + W : a.x, y1 = a.y + H / 2;
      const x2 = right ? b.x + W : b.x, y2 = b.y + H / 2;
      const bulge = (right ? 1 : -1) * (40 + 14 * (side % 4));
      d = `M${x1},${y1} C${x1 + bulge},${y1} ${x2 + bulge},${y2} ${x2},${y2}`;
      lx = Math.max(x1, x2) * (right ? 1 : 0) + Math.min(x1, x2) * (right ? 0 : 1) + bulge * 0.75; ly = (y1 + y2) / 2;
    }
    const g = svg('g', { class: 'edge' + (hot ? ' hot' : '') },
      svg('title', {}, e.labels.join('\n')),
      svg('path', { d, 'marker-end': hot ? 'url(#arrow-hot)' : 'url(#arrow)' }));
    if (hot) {
      g.append(svg('rect', { x: lx - 13, y: ly - 9, width: 26, height: 18, rx: 9, class: 'count-bg' }));
      g.append(svg('text', { x: lx, y: ly + 4, class: 'count', 'text-anchor': 'middle' }, '×' + e.count));
    }
    root.append(g);
  }
  for (const n of graph.nodes) {
    const p = pos.get(n.id);
    const current = graph.current === n.id;
    const pickable = onPick && (n.shape === 'role' || n.shape === 'qa');
    const g = svg('g', { class: `node shape-${n.shape}` + (current ? ' current' : '') + (pickable ? ' pickable' : ''), transform: `translate(${p.x},${p.y})`, 'data-node': n.id,
      tabindex: pickable ? 0 : undefined, role: pickable ? 'button' : undefined, 'aria-label': pickable ? `${n.label}: open its turns` : undefined });
    if (pickable) {
      const pick = () => onPick({ id: n.id, shape: n.shape, role: n.label });
      g.addEventListener('click', pick);
      g.addEventListener('keydown', e => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pick(); } });
    }
    const rx = n.shape === 'role' ? 6 : n.shape === 'done' || n.shape === 'goal' || n.shape === 'event' ? 17 : 2;
    g.append(svg('title', {}, n.code ? `${n.label} (${n.code})` : n.label));
    g.append(svg('rect', { width: W, height: H, rx }));
    g.append(svg('text', { x: W / 2, y: H / 2 + 4, 'text-anchor': 'middle' }, n.label.length > 20 ? n.label.slice(0, 19) + '…' : n.label));
    if (current) g.append(svg('circle', { cx: W - 8, cy: 8, r: 4, class: 'pulse' }));
    root.append(g);
  }
  const box = document.createElement('div');
  box.className = 'graph-frame';
  box.append(root);
  const controls = document.createElement('div');
  controls.className = 'graph-zoom';
  for (const [label, factor, name] of [['−', 1 / 1.25, 'zoom out'], ['+', 1.25, 'zoom in']]) {
    const b = document.createElement('button');
    b.type = 'button'; b.className = 'btn ghost small'; b.textContent = label; b.setAttribute('aria-label', name);
    b.addEventListener('click', () => { container.dataset.zoom = String(Math.max(1, Math.min(3, zoom * factor))); drawGraph(container, raw, onPick); });
    controls.append(b);
  }
  container.append(controls, box);
  if (keep) { box.scrollLeft = keep.left; box.scrollTop = keep.top; }
  else if (graph.current && pos.has(graph.current)) {
    // First drawn: the live position in view.
    const p = pos.get(graph.current);
    box.scrollLeft = Math.max(0, (p.x + W / 2) * zoom - box.clientWidth / 2);
    box.scrollTop = Math.max(0, (p.y + H / 2) * zoom - box.clientHeight / 2);
  }
  const legend = document.createElement('div');
  legend.className = 'legend muted small';
  const at = graph.nodes.find(n => n.id === graph.current);
  legend.textContent = !graph.current ? '' : at && (at.shape === 'done' || at.shape === 'stop') ? `ended: ${at.label}` : `now at: ${at ? at.label : graph.current}`;
  container.append(legend);
}

export { shortLabel };
