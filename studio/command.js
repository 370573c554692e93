// The command bar: the inbox grammar with completions, each sent line followed by what it means
// and, once the coordinator answers, its ack. Disabled, with the reason, on an ended session.

import { h, clear, obj, arr } from './dom.js';
import { get, post, sessionPath } from './api.js';

const COMMANDS = ['/approve', '/veto ', '/pause ', '/resume ', '/goto ', '/swap ', '/append ', '/cancel ', '/reset-circuit ', '/ask status', '/ask cost', '/ask next', '/ask stuck', '/ask scorecard', '/note ', '/redo '];

let roleNames = [];
export function setRoles(roles) { roleNames = Array.isArray(roles) ? roles.filter(r => typeof r === 'string') : []; }

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

const VERDICT_LINE = /^\/(approve|veto)\b/;

/** A line that decides a waiting verdict and that no coordinator has read yet, if any: the banner
 * says it is queued and the buttons it would contradict are withdrawn. */
export function queuedVerdict(me) {
  return arr(me.pendingLines).find(l => VERDICT_LINE.test(l)) || null;
}

function sentCard(line, offset) {
  return h('div', { class: 'sent', dataset: offset != null ? { offset: String(offset) } : {} },
    h('code', {}, line), h('div', { class: 'ack muted small' }, 'sending…'));
}

/** The thread as the server rebuilt it from the session's files: it survives a reload and shows
 * the lines sent from the CLI too, each with its ack and an `/ask` answer in full. */
export async function loadThread(me) {
  let lines;
  try { lines = arr(obj(await get(sessionPath(me.id, '/thread'))).lines).map(obj); } catch (_) { return; }
  const thread = document.getElementById('thread');
  if (!thread) return;
  // Lines this page sent while the thread loaded stay as they are, after the rebuilt ones.
  const live = [...thread.querySelectorAll('.sent:not(.from-files)')];
  const liveOffsets = new Set(live.map(c => c.dataset.offset).filter(Boolean));
  for (const card of thread.querySelectorAll('.sent.from-files')) card.remove();
  const older = lines.filter(l => !liveOffsets.has(String(l.inbox_offset)));
  me.history = [...older.map(l => String(l.line ?? '')).filter(Boolean), ...arr(me.history).filter(l => !older.some(o => o.line === l))];
  me.pendingLines = [...new Set([...older.filter(l => l.pending).map(l => String(l.line ?? '')), ...arr(me.pendingLines)])];
  for (const l of older) {
    const card = sentCard(String(l.line ?? ''), l.inbox_offset);
    card.classList.add('from-files');
    const ack = card.querySelector('.ack');
    const reply = obj(l.ack);
    if (l.ack) {
      ack.className = 'ack small ' + (reply.ok === false ? 'error' : 'good');
      ack.textContent = (reply.ok === false ? '✗ ' : '✓ ') + String(reply.text ?? 'acknowledged');
    } else {
      ack.textContent = l.pending
        ? (me.data && me.data.live ? '→ waiting for the coordinator…' : '→ queued: applied when the session is resumed')
        : `→ recorded as ${String(l.event ?? '').slice(-6)}, waiting for the ack…`;
      if (l.pending) ack.classList.add('pending-resume');
      if (typeof l.event === 'string') me.userByOffset.set(l.inbox_offset, l.event);
      me.acks.set(l.inbox_offset, card);
    }
    if (typeof l.answer === 'string') card.append(h('pre', { class: 'answer small' }, l.answer));
    if (l.responded) card.append(h('div', { class: 'muted small' }, `${obj(l.responded).role} responded · ${obj(l.responded).events ?? 0} events`));
    thread.insertBefore(card, live[0] || null);
  }
  thread.scrollTop = thread.scrollHeight;
  if (me.redraw) me.redraw();
}

/** Send one line to the session's inbox and show what happens to it in the thread. */
export async function sendLine(me, line) {
  const thread = document.getElementById('thread');
  const card = sentCard(line, null);
  if (thread) { thread.append(card); thread.scrollTop = thread.scrollHeight; }
  const { ok, body } = await post(sessionPath(me.id, '/inbox'), { line });
  const ack = card.querySelector('.ack');
  if (!ok) { ack.className = 'ack error small'; ack.textContent = '✗ ' + (body.error || 'refused'); return false; }
  me.history = [...arr(me.history), line];
  card.dataset.offset = String(body.inbox_offset);
  // What happens next: applied now by the live coordinator, or when the session is resumed.
  ack.textContent = `→ ${body.command}${body.note ? ' · ' + body.note : ' · waiting for the coordinator…'}`;
  if (!body.live && !body.ended) ack.classList.add('pending-resume');
  // Until a coordinator reads it, the line is pending: the banner says so.
  if (!body.ended) {
    me.pendingLines = [...arr(me.pendingLines), line];
    if (me.redraw) me.redraw();
  }
  me.acks.set(body.inbox_offset, card);
  showAck(me, body.inbox_offset, card);
  return true;
}

export function commandBar(me) {
  // `role=log`: each ack and answer is announced as it arrives.
  const thread = h('div', { class: 'thread', id: 'thread', role: 'log', 'aria-live': 'polite', 'aria-label': 'conversation' });
  const hints = h('div', { class: 'hints' });
  const reason = h('div', { class: 'command-off small muted', id: 'command-off', hidden: true });
  const input = h('input', { id: 'command', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: '/approve · /veto <reason> · /answer <text> · @role <message> (next turn) · /ask status · plain text for every role', 'aria-label': 'command' });
  const send = h('button', { class: 'btn primary', type: 'submit' }, 'Send');
  const showHints = () => {
    clear(hints);
    for (const c of completions(input.value).slice(0, 8)) {
      hints.append(h('button', { class: 'hint', type: 'button', onclick: () => { input.value = c; input.focus(); showHints(); } }, c));
    }
  };
  input.addEventListener('input', showHints);
  // ↑/↓ walk the lines sent before (this page's and the thread's), like a shell's history.
  let back = 0;
  input.addEventListener('keydown', e => {
    if (e.key === 'Tab') {
      const c = completions(input.value);
      if (c.length) { e.preventDefault(); input.value = c[0]; showHints(); }
    }
    const history = arr(me.history);
    if ((e.key === 'ArrowUp' || e.key === 'ArrowDown') && history.length) {
      e.preventDefault();
      back = Math.max(0, Math.min(history.length, back + (e.key === 'ArrowUp' ? 1 : -1)));
      input.value = back ? history[history.length - back] : '';
      showHints();
    }
  });
  const form = h('form', { class: 'command', onsubmit: async e => {
    // Enter always sends what is typed, even when it equals a bare command.
    e.preventDefault();
    const line = input.value.trim();
    if (!line || input.disabled) return;
    if (await sendLine(me, line)) { input.value = ''; back = 0; showHints(); }
  } }, h('span', { class: 'prompt' }, '›'), input, send);
  const bar = h('section', { class: 'card commandbar' }, thread, hints, form, reason);
  me.setCommandsEnabled = (enabled, why) => {
    bar.classList.toggle('off', !enabled);
    input.disabled = !enabled; send.disabled = !enabled;
    reason.hidden = enabled; reason.textContent = why || '';
    input.placeholder = enabled ? '/approve · /veto <reason> · /answer <text> · @role <message> (next turn) · /ask status · plain text for every role' : (why || 'disabled');
  };
  return bar;
}

// A user event carries the inbox offset of its line; its ack names the user event. Either may
// arrive on the stream before the POST's answer does, so both are remembered and matched from
// whichever side comes last.
export function noteAck(me, e) {
  if (!e || typeof e !== 'object') return;
  if (e.from === 'user' && e.data && typeof e.data.inbox_offset === 'number') {
    me.userByOffset.set(e.data.inbox_offset, e.id);
  }
  if (e.kind === 'ack' && e.metadata && e.metadata.ack_for) me.ackFor.set(e.metadata.ack_for, e);
  if (e.kind === 'note' && e.metadata && e.metadata.in_reply_to && typeof e.body === 'string') me.answers.set(e.metadata.in_reply_to, e.body);
  for (const [offset, card] of me.acks) showAck(me, offset, card);
}

function showAck(me, offset, card) {
  const userId = me.userByOffset.get(offset);
  if (!userId) return;
  const ack = card.querySelector('.ack');
  const reply = me.ackFor.get(userId);
  if (!reply) { ack.textContent = `→ recorded as ${String(userId).slice(-6)}, waiting for the ack…`; return; }
  const ok = !reply.data || reply.data.ok !== false;
  ack.className = 'ack small ' + (ok ? 'good' : 'error');
  ack.textContent = (ok ? '✓ ' : '✗ ') + (typeof reply.body === 'string' ? reply.body : 'acknowledged');
  const answer = me.answers.get(userId);
  if (answer && !card.querySelector('.answer')) card.append(h('pre', { class: 'answer small' }, answer));
  me.acks.delete(offset);
  // Read by a coordinator: no longer queued.
  const line = card.querySelector('code');
  if (line && arr(me.pendingLines).includes(line.textContent)) {
    me.pendingLines = me.pendingLines.filter(l => l !== line.textContent);
    if (me.redraw) me.redraw();
  }
}
