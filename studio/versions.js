// The artifact store in Studio: a session's Versions (release from a feed row, download a zip),
// a round's "what changed" and the preview of any round's tree (served from the store at
// `@round/<event>/` on the session's preview origin).

import { h, clear, obj, arr, stamp, ago } from './dom.js';
import { get, post, sessionPath } from './api.js';
import { previewUrl } from './panels.js';
import { report } from './alerts.js';

/** The entry page a row's files suggest: the build's `data.entry`, else an index.html. */
function entryOf(e) {
  const data = obj(obj(e).data);
  if (typeof data.entry === 'string' && data.entry) return data.entry;
  const paths = arr(obj(e).artifacts).map(a => String(obj(a).path || '')).filter(p => p.startsWith('artifacts/')).map(p => p.slice('artifacts/'.length));
  return paths.find(p => p.endsWith('index.html')) || paths.find(p => /\.html?$/i.test(p)) || '';
}

/** The buttons of a feed row that recorded files: release, preview that round, what changed. */
export function roundButtons(me, e, out) {
  const id = String(obj(e).id ?? '');
  const stop = f => ev => { ev.stopPropagation(); f(ev.currentTarget); };
  const entry = entryOf(e);
  return h('span', { class: 'ev-tools' },
    h('button', { class: 'btn ghost small ev-release', type: 'button', title: 'Freeze the tree after this event as a version', onclick: stop(b => releaseAt(me, id, b, out)) }, 'release'),
    entry ? h('a', { class: 'btn ghost small ev-round', href: previewUrl(me.id, `@round/${id}/` + entry.split('/').map(encodeURIComponent).join('/'), obj(me.data).preview_key), target: '_blank', rel: 'noopener noreferrer', title: 'This round\'s tree, from the store', onclick: ev => ev.stopPropagation() }, 'preview') : null,
    h('button', { class: 'btn ghost small ev-changed', type: 'button', title: 'What changed since the previous files', onclick: stop(() => showChanged(me, id, out)) }, 'changed'));
}

async function releaseAt(me, at, button, out) {
  const name = window.prompt('Version name (empty: the next v<n>)', '');
  if (name === null) return;
  button.disabled = true;
  const { ok, body } = await post(sessionPath(me.id, '/release'), { at, name });
  button.disabled = false;
  if (!ok) { report(`release: ${body.error || 'refused'}`, 'warn'); return; }
  report(`released ${body.name} (${arr(body.files).length} files)`, 'info');
  if (out.reload) out.reload();
}

async function showChanged(me, at, out) {
  let reply;
  try { reply = obj(await get(sessionPath(me.id, `/diff?b=${encodeURIComponent(at)}`))); }
  catch (err) { report(`what changed: ${err.message}`, 'warn'); return; }
  if (out.show) out.show(reply);
}

/** The Versions pane: the session's versions with their zip, and the last "what changed". */
export function versionsPane(el, id) {
  const list = h('div', { class: 'versions-list', id: 'versions' });
  const changed = h('pre', { class: 'viewer', id: 'what-changed', hidden: true });
  el.append(h('h3', {}, 'Versions'), list, h('h3', {}, 'What changed'), changed);
  const pane = {
    async reload() {
      let reply;
      try { reply = obj(await get(sessionPath(id, '/versions'))); }
      catch (err) { clear(list).append(h('p', { class: 'muted' }, err.message)); return; }
      const versions = arr(reply.versions).map(obj);
      clear(list);
      if (!versions.length) { list.append(h('p', { class: 'muted' }, 'No version yet: "release" on a feed row freezes its tree.')); return; }
      list.append(h('table', { class: 'checks' }, h('tbody', {}, versions.map(v => {
        const judged = obj(v.judged);
        return h('tr', { dataset: { version: String(v.name) } },
          h('td', {}, h('b', {}, String(v.name))),
          h('td', { class: 'small' }, h('span', { title: stamp(v.created) }, ago(v.created))),
          h('td', { class: 'small' }, `${arr(v.files).length} files`),
          h('td', { class: 'small' }, judged.verdict ? `${judged.verdict} ${judged.aggregate}` : 'no verdict'),
          h('td', { class: 'small muted' }, String(v.note || '')),
          h('td', {}, h('a', { class: 'btn ghost small', href: sessionPath(id, `/versions/${encodeURIComponent(v.name)}/zip`), download: `${v.name}.zip` }, 'zip')));
      }))));
    },
    show(reply) {
      changed.hidden = false;
      const rows = arr(reply.changes).map(obj);
      const lines = [`${reply.a} → ${reply.b}`];
      if (!rows.length) lines.push('no file changed');
      for (const r of rows) {
        lines.push(`${r.change} ${r.path}`);
        if (typeof r.text_diff === 'string') lines.push(...r.text_diff.split('\n').filter(Boolean).map(l => '    ' + l));
      }
      changed.textContent = lines.join('\n');
      if (pane.open) pane.open();
    },
  };
  return pane;
}
