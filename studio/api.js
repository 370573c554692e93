// The JSON API, the write token and instance id the page was served with.

const meta = name => { const el = document.querySelector(`meta[name="${name}"]`); return el ? el.content : ''; };
const token = meta('crumb-token');
/** The preview origin pattern: `http://{session}.localhost:<port>`. */
export const previewOrigin = meta('crumb-preview');
/** The Studio process that served this page. */
export const instance = meta('crumb-instance');

let tokenRefused = () => {};
export function onTokenRefused(f) { tokenRefused = f; }

export async function get(path) {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new Error((body && body.error) || res.statusText);
  return body;
}

export async function getText(path) {
  const res = await fetch(path);
  const text = await res.text();
  if (!res.ok) throw new Error(text || res.statusText);
  return text;
}

export async function post(path, payload) {
  let res;
  try {
    res = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-crumb-token': token },
      body: JSON.stringify(payload),
    });
  } catch (err) {
    return { ok: false, status: 0, body: { error: `Studio is not reachable: ${err.message}` } };
  }
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (res.status === 403 && String(body.error || '').includes('X-Crumb-Token')) tokenRefused();
  return { ok: res.ok, status: res.status, body: body && typeof body === 'object' ? body : {} };
}

export const sessionPath = (id, rest = '') => `/api/sessions/${encodeURIComponent(id)}${rest}`;
