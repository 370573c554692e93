// The JSON API and the write token the page was served with.

const token = document.querySelector('meta[name="crumb-token"]').content;
export const previewOrigin = document.querySelector('meta[name="crumb-preview"]').content;

export async function get(path) {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

export async function getText(path) {
  const res = await fetch(path);
  const text = await res.text();
  if (!res.ok) throw new Error(text || res.statusText);
  return text;
}

export async function post(path, payload) {
  const res = await fetch(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-crumb-token': token },
    body: JSON.stringify(payload),
  });
  const body = await res.json().catch(() => ({ error: res.statusText }));
  return { ok: res.ok, status: res.status, body };
}

export const sessionPath = (id, rest = '') => `/api/sessions/${encodeURIComponent(id)}${rest}`;
