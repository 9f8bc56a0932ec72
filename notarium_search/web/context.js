// What every part of the page shares: its state, the language, the small DOM helpers.
// Safety rule: API data reaches the page only as text (append/textContent). The one element built from API
// data is <mark>, and only where a snippet's `html` holds exactly "<mark>" or "</mark>" (see snippetNodes).

import { STRINGS } from './strings.js';

export const LANG_KEY = 'notarium.lang';
export const TOKEN_KEY = 'notarium.token';
export const SPACE_KEY = 'notarium.space';

// localStorage throws in some private modes: the page then works, it just forgets.
export const store = {
  get(key) { try { return localStorage.getItem(key); } catch { return null; } },
  set(key, value) {
    try {
      if (value == null) localStorage.removeItem(key); else localStorage.setItem(key, value);
    } catch { /* the caller keeps the value in memory anyway */ }
  },
};

export const params = new URLSearchParams(location.search);
const known = (code) => (Object.hasOwn(STRINGS, code ?? '') ? code : null);
// The language and the token the user chose (changed by app.js).
export const prefs = {
  lang: known(params.get('lang')) ?? known(store.get(LANG_KEY)) ?? 'fr',
  token: store.get(TOKEN_KEY),
};
if (params.has('lang')) store.set(LANG_KEY, prefs.lang);

export const state = {
  space: null, searchBody: null, selected: -1, list: '', feedItems: [], feedStale: true, cursor: null,
  note: null, related: null, opened: null, enterWaiting: null, status: null, building: false, sort: 'relevance',
};
export const timers = {};

export const $ = (id) => document.getElementById(id);
export const t = (key, ...args) => {
  const s = STRINGS[prefs.lang][key];
  return typeof s === 'function' ? s(...args) : s;
};

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) if (value != null) node.setAttribute(name, value);
  node.append(...children); // strings become text nodes: never parsed as HTML
  return node;
}

export const number = (n) => new Intl.NumberFormat(prefs.lang).format(n);
export const date = (iso) => new Intl.DateTimeFormat(prefs.lang, { dateStyle: 'medium', timeZone: 'UTC' })
  .format(new Date(iso));
export const noteHref = (space, id) => `#/note/${encodeURIComponent(space)}/${encodeURIComponent(id)}`;
export const spacePath = (rest) => `spaces/${encodeURIComponent(state.space)}/${rest}`;
// Ids may contain "/": the routes take them as a path, so only each segment is encoded.
export const idPath = (id) => id.split('/').map(encodeURIComponent).join('/');
export const failure = (error) => `${t('error')} ${error.message}`;
// How a note is linked in Obsidian: its file name without the extension (the shortest form it resolves).
export const wikiLink = (note) => `[[${note.path.split('/').pop().replace(/\.md$/i, '')}]]`;
// Where a hit is: its file and line (`path:line`), as the CLI and MCP write it.
export const whereText = (hit) => (hit.line ? `${hit.path}:${hit.line}` : hit.path);

// The API's `html` is the snippet escaped by Python's html.escape, with bare <mark>…</mark> around the
// highlights. We split on exactly those two tags and turn every other piece back into plain text (only
// the five escapes html.escape writes are undone), so no other markup can ever come to life.
const ESCAPES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'" };

export function snippetNodes(html) {
  const nodes = [];
  let mark = null;
  for (const part of html.split(/(<\/?mark>)/)) {
    if (part === '<mark>') {
      mark = el('mark');
      nodes.push(mark);
    } else if (part === '</mark>') {
      mark = null;
    } else if (part) {
      const text = part.replace(/&(?:amp|lt|gt|quot|#x27);/g, (entity) => ESCAPES[entity]);
      if (mark) mark.append(text); else nodes.push(text);
    }
  }
  return nodes;
}

// Folder, tags and date of a note in a list.
export function metaLine(note) {
  const parts = [];
  if (note.folder) parts.push(el('span', { class: 'folder' }, note.folder));
  for (const tag of note.tags) parts.push(el('span', { class: 'tag' }, `#${tag}`));
  parts.push(dateNode(note, 'updated'));
  return el('div', { class: 'meta' }, ...parts);
}

// A note's date; one the note does not hold (taken from its file) says so.
export function dateNode(note, which) {
  const fromFile = note.dates?.[which] === 'file';
  return el('time', { datetime: note[which], title: fromFile ? t('fileDate') : null, class: fromFile ? 'file-date' : null },
    date(note[which]) + (fromFile ? ' *' : ''));
}
