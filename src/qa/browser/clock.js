// crumb QA's page clock, installed before any script of the page runs (see clock.rs).
//
// Time flows as usual (a native animation-frame pump advances it by the real time that passed), and
// QA can also run it forward: `advance(ms)` runs the page's timers and animation frames of `ms`
// milliseconds at once, at 60 frames per virtual second, so a game sees the same states it would
// see in real time without QA waiting for them. `Date`, `performance.now`, `setTimeout`,
// `setInterval` and `requestAnimationFrame` all read this clock.
(() => {
  'use strict';
  if (Object.prototype.hasOwnProperty.call(window, '__crumbClock')) return;
  const RealDate = window.Date;
  const realPerfNow = performance.now.bind(performance);
  const realRaf = window.requestAnimationFrame.bind(window);
  const realSetTimeout = window.setTimeout.bind(window);
  const FRAME = 1000 / 60;

  let now = realPerfNow(); // virtual performance.now() at the last sync
  let lastReal = now; // real performance.now() at the last sync
  let fast = false; // inside a fast-forward: time only moves when QA moves it
  const dateOffset = RealDate.now() - now;
  let seq = 0;
  const timers = new Map(); // id -> { at, seq, fn, args, every }
  let frameCallbacks = new Map();
  let nextFrameId = 0;
  let frames = 0;

  const vnow = () => (fast ? now : now + Math.max(0, realPerfNow() - lastReal));
  const sync = () => {
    now = vnow();
    lastReal = realPerfNow();
  };
  const report = (e) => {
    if (typeof window.reportError === 'function') window.reportError(e);
    else realSetTimeout(() => { throw e; }, 0);
  };
  const call = (fn, args) => {
    try {
      fn(...args);
    } catch (e) {
      report(e);
    }
  };

  function earliestTimer(limit) {
    let best = null;
    for (const [id, t] of timers) {
      if (t.at <= limit && (!best || t.at < best[1].at || (t.at === best[1].at && t.seq < best[1].seq))) best = [id, t];
    }
    return best;
  }
  // Run every timer due up to `target` in order, then leave the clock at `target`.
  function runTimersTo(target) {
    for (;;) {
      const next = earliestTimer(target);
      if (!next) break;
      const [id, t] = next;
      if (t.at > now) now = t.at;
      if (t.every === null) timers.delete(id);
      else t.at = now + t.every, t.seq = ++seq;
      call(t.fn, t.args);
    }
    if (target > now) now = target;
  }
  function runFrame() {
    if (frameCallbacks.size === 0) return;
    const due = frameCallbacks;
    frameCallbacks = new Map();
    frames += 1;
    const at = now;
    for (const fn of due.values()) call(fn, [at]);
  }
  function step(ms) {
    runTimersTo(now + ms);
    runFrame();
  }
  function pump() {
    if (!fast) {
      const real = realPerfNow();
      const delta = Math.max(0, real - lastReal);
      lastReal = real;
      step(delta);
    }
    realRaf(pump);
  }

  function schedule(fn, delay, args, repeat) {
    const code = fn;
    const run = typeof fn === 'function' ? fn : () => (0, eval)(String(code));
    const ms = Math.max(1, Number(delay) || 0);
    const id = ++seq;
    timers.set(id, { at: vnow() + ms, seq: id, fn: run, args, every: repeat ? Math.max(ms, 1) : null });
    return id;
  }
  const clear = (id) => { timers.delete(id); };
  window.setTimeout = (fn, delay, ...args) => schedule(fn, delay, args, false);
  window.setInterval = (fn, delay, ...args) => schedule(fn, delay, args, true);
  window.clearTimeout = clear;
  window.clearInterval = clear;
  window.requestAnimationFrame = (fn) => {
    nextFrameId += 1;
    frameCallbacks.set(nextFrameId, fn);
    return nextFrameId;
  };
  window.cancelAnimationFrame = (id) => { frameCallbacks.delete(id); };
  performance.now = () => vnow();

  function FakeDate(...args) {
    const date = args.length === 0 ? new RealDate(Math.floor(vnow() + dateOffset)) : new RealDate(...args);
    return new.target ? date : date.toString();
  }
  FakeDate.prototype = RealDate.prototype;
  FakeDate.now = () => Math.floor(vnow() + dateOffset);
  FakeDate.parse = RealDate.parse;
  FakeDate.UTC = RealDate.UTC;
  Object.defineProperty(FakeDate, 'name', { value: 'Date' });
  window.Date = FakeDate;

  // A real task boundary (no 4 ms clamp): lets input, network and load events in between.
  const channel = new MessageChannel();
  const waiting = [];
  channel.port1.onmessage = () => { const done = waiting.shift(); if (done) done(); };
  const macrotask = () => new Promise((done) => { waiting.push(done); channel.port2.postMessage(0); });

  // Run the clock forward by `ms` at once, frame by frame. Returns the frames drawn so far.
  function advance(ms) {
    sync();
    fast = true;
    try {
      let left = Math.max(0, Number(ms) || 0);
      while (left > 0) {
        const d = Math.min(FRAME, left);
        step(d);
        left -= d;
      }
    } finally {
      fast = false;
      lastReal = realPerfNow();
    }
    return frames;
  }
  // Fast-forward frame by frame until `promise` settles or `ms` have passed (then wait for it in
  // real time); resolves or rejects as it does.
  async function settle(promise, ms) {
    let state = 'pending';
    let value;
    promise.then((v) => { state = 'ok'; value = v; }, (e) => { state = 'err'; value = e; });
    const deadline = vnow() + ms;
    for (let i = 1; ; i += 1) {
      await null; await null; await null;
      if (state !== 'pending' || vnow() >= deadline) break;
      advance(FRAME);
      if (i % 8 === 0) await macrotask();
    }
    if (state === 'pending') return promise;
    if (state === 'err') throw value;
    return value;
  }
  // Evaluate `source` after each frame until it is truthy or the clock reaches `end` (`ms` from now
  // when `end` is null), for at most `realMs` of real time (then `pending`: ask again with `end`).
  async function poll(source, end, ms, realMs) {
    const deadline = end === null ? vnow() + ms : end;
    const realEnd = realPerfNow() + realMs;
    for (let i = 1; ; i += 1) {
      const v = await (0, eval)(source);
      const shown = String(v).slice(0, 120);
      if (v) return { ok: true, shown, end: deadline };
      if (vnow() >= deadline) return { ok: false, shown, end: deadline };
      if (realPerfNow() >= realEnd) return { ok: false, pending: true, shown, end: deadline };
      advance(Math.min(FRAME, deadline - vnow()));
      if (i % 8 === 0) await macrotask();
    }
  }
  const api = Object.freeze({
    advance,
    settle,
    poll,
    now: () => vnow(),
    frames: () => frames,
  });
  Object.defineProperty(window, '__crumbClock', { value: api, enumerable: false });
  realRaf(pump);
})();
