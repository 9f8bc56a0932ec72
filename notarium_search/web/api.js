// The page's one way to the API: relative URLs, the token, one request per purpose in flight.

import { $, failure, prefs, t } from './context.js';

export class HttpError extends Error {
  constructor(status, message, body) { super(message); this.status = status; this.body = body; }
}

const aborts = {};

// The token form, shown when the API asks for a token (401) or the user opens it.
export function askToken(messageKey) {
  $('token-toggle').hidden = false;
  $('token-message').dataset.i18n = messageKey;
  $('token-message').textContent = t(messageKey);
  if ($('token-form').hidden) {
    $('token-form').hidden = false;
    $('token').focus();
  }
}

// Relative URLs: the page keeps working behind a proxy that serves the API under a sub-path.
export async function api(path, query = {}, signal = undefined) {
  const url = new URL(path, document.baseURI);
  for (const [name, value] of Object.entries(query)) {
    if (value !== '' && value != null) url.searchParams.set(name, value);
  }
  const headers = { Accept: 'application/json' };
  if (prefs.token) headers.Authorization = `Bearer ${prefs.token}`;
  const response = await fetch(url, { headers, signal });
  if (response.status === 401) askToken(prefs.token ? 'badToken' : 'needToken');
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new HttpError(response.status, body?.detail ?? response.statusText, body);
  return body;
}

// One request per purpose in flight: a newer one aborts the stale one, so a slow answer to "inte"
// can never overwrite the answer to "interop".
export async function latest(purpose, path, query) {
  aborts[purpose]?.abort();
  const controller = (aborts[purpose] = new AbortController());
  const body = await api(path, query, controller.signal);
  if (controller.signal.aborted) throw new DOMException('stale', 'AbortError');
  return body;
}

export function abort(purpose) {
  aborts[purpose]?.abort();
}

export function reportUnlessAborted(node) {
  return (error) => { if (error.name !== 'AbortError') node.textContent = failure(error); };
}
