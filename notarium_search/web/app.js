// The Spotlight page of notarium-search: plain DOM, no dependencies, nothing fetched but our own API.
// Safety rule: API data reaches the page only as text (append/textContent). The one element built from API
// data is <mark>, and only where a snippet's `html` holds exactly "<mark>" or "</mark>" (see snippetNodes).

import { STRINGS } from './strings.js';

const SHOWN_FIELDS = new Set(['title', 'tags', 'tag', 'aliases', 'alias', 'id', 'created', 'updated']);
const CHANNELS = [['lexical', 'mots'], ['semantic', 'sens'], ['graph', 'lien']];
const DEBOUNCE_MS = 120;
const SEARCH_LIMIT = 20;
const FEED_LIMIT = 20;
const POLL_BUILDING_MS = 1000;
const POLL_IDLE_MS = 5000;
const LANG_KEY = 'notarium.lang';
const TOKEN_KEY = 'notarium.token';
const SPACE_KEY = 'notarium.space';

// localStorage throws in some private modes: the page then works, it just forgets.
const store = {
  get(key) { try { return localStorage.getItem(key); } catch { return null; } },
  set(key, value) {
    try {
      if (value == null) localStorage.removeItem(key); else localStorage.setItem(key, value);
    } catch { /* the caller keeps the value in memory anyway */ }
  },
};
const params = new URLSearchParams(location.search);
const known = (code) => (Object.hasOwn(STRINGS, code ?? '') ? code : null);
let lang = known(params.get('lang')) ?? known(store.get(LANG_KEY)) ?? 'fr';
if (params.has('lang')) store.set(LANG_KEY, lang);
let token = store.get(TOKEN_KEY);

const state = {
  space: null, searchBody: null, selected: -1, list: '', feedItems: [], feedStale: true, cursor: null,
  note: null, status: null, building: false,
};
const timers = {};
const aborts = {};

const $ = (id) => document.getElementById(id);
const t = (key, ...args) => { const s = STRINGS[lang][key]; return typeof s === 'function' ? s(...args) : s; };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) if (value != null) node.setAttribute(name, value);
  node.append(...children); // strings become text nodes: never parsed as HTML
  return node;
}

const number = (n) => new Intl.NumberFormat(lang).format(n);
const date = (iso) => new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(iso));
const noteHref = (space, id) => `#/note/${encodeURIComponent(space)}/${encodeURIComponent(id)}`;
const spacePath = (rest) => `spaces/${encodeURIComponent(state.space)}/${rest}`;
const failure = (error) => `${t('error')} ${error.message}`;

// -- the API ------------------------------------------------------------

class HttpError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// Relative URLs: the page keeps working behind a proxy that serves the API under a sub-path.
async function api(path, query = {}, signal = undefined) {
  const url = new URL(path, document.baseURI);
  for (const [name, value] of Object.entries(query)) {
    if (value !== '' && value != null) url.searchParams.set(name, value);
  }
  const headers = { Accept: 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(url, { headers, signal });
  if (response.status === 401) askToken(token ? 'badToken' : 'needToken');
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new HttpError(response.status, body?.detail ?? response.statusText);
  return body;
}

// One request per purpose in flight: a newer one aborts the stale one, so a slow answer to "inte"
// can never overwrite the answer to "interop".
async function latest(purpose, path, query) {
  aborts[purpose]?.abort();
  const controller = (aborts[purpose] = new AbortController());
  const body = await api(path, query, controller.signal);
  if (controller.signal.aborted) throw new DOMException('stale', 'AbortError');
  return body;
}

function reportUnlessAborted(node) {
  return (error) => { if (error.name !== 'AbortError') node.textContent = failure(error); };
}

// -- search ---------------------------------------------------------------

function scheduleSearch() {
  clearTimeout(timers.search);
  timers.search = setTimeout(runSearch, DEBOUNCE_MS);
}

function runSearch() {
  const q = $('q').value;
  rememberSearch(q);
  if (!q.trim() || !state.space) {
    aborts.search?.abort();
    showResults(null);
    return;
  }
  latest('search', spacePath('search'), { q, limit: SEARCH_LIMIT })
    .then((body) => showResults(body))
    .catch(reportUnlessAborted($('search-info')));
}

// The search lives in the address (/?space=…&q=…): it can be bookmarked and
// shared, and back and forward return to it. Typing replaces the entry;
// opening a note (a new hash) pushes one.
function rememberSearch(q) {
  const url = new URL(location.href);
  if (q.trim()) url.searchParams.set('q', q); else url.searchParams.delete('q');
  if (state.space) url.searchParams.set('space', state.space);
  if (url.href !== location.href) history.replaceState(null, '', url);
}

function searchFromAddress() {
  const q = new URLSearchParams(location.search).get('q') ?? '';
  if ($('q').value !== q) {
    $('q').value = q;
    runSearch();
  }
}

function showChips(filters) {
  const chips = (filters ?? []).map((f) =>
    el('li', { class: 'chip' }, `${f.name}:${f.value.includes(' ') ? `"${f.value}"` : f.value}`));
  $('search-filters').replaceChildren(...(chips.length ? [el('li', { class: 'chips-label' }, t('filtersLabel')), ...chips] : []));
}

function showResults(body, keepSelection = false) {
  state.searchBody = body;
  const results = body?.results ?? [];
  $('results').replaceChildren(...results.map(hitItem));
  $('q').setAttribute('aria-expanded', String(results.length > 0));
  select(keepSelection ? Math.min(state.selected, results.length - 1) : -1);
  showChips(body?.filters);
  if (!body) {
    $('search-info').textContent = '';
    return;
  }
  if (!results.length) {
    // Nothing found is an answer: said plainly, with what to try (issue 14).
    const parts = [t('nothing', body.query.trim())];
    if (body.caveats?.semantic) parts.push(t('noMeaning'));
    $('search-info').textContent = parts.join(' ');
    return;
  }
  const parts = [t('results', results.length)];
  if (body.unmatched_terms.length) parts.push(`${t('unmatched')} ${body.unmatched_terms.join(', ')}`);
  if (body.partial) parts.push(t('partial'));
  $('search-info').textContent = parts.join(' · ');
}

function hitItem(hit, index) {
  const link = el('a', { class: 'hit', href: noteHref(state.space, hit.id), tabindex: '-1', 'data-anchor': hit.anchor },
    el('div', { class: 'hit-head' }, el('span', { class: 'hit-title' }, hit.title), ...badges(hit)));
  if (hit.reason) link.append(el('div', { class: 'reason' }, t('reason', hit.reason)));
  for (const snippet of hit.snippets) link.append(el('div', { class: 'snippet' }, ...snippetNodes(snippet.html)));
  link.append(metaLine(hit));
  const item = el('li', { id: `hit-${index}`, role: 'option', 'aria-selected': 'false' }, link);
  if (hit.open_url) item.append(el('a', { class: 'open-editor', href: hit.open_url, tabindex: '-1' }, t('openEditor')));
  return item;
}

function badges(hit) {
  return CHANNELS.filter(([channel]) => hit.channels[channel]).map(([channel, name]) =>
    el('span', { class: `badge ${name}`, title: `${t(`${name}Title`)} (${t('rank')} ${hit.channels[channel]})` },
      t(name)));
}

// The API's `html` is the snippet escaped by Python's html.escape, with bare <mark>…</mark> around the
// highlights. We split on exactly those two tags and turn every other piece back into plain text (only
// the five escapes html.escape writes are undone), so no other markup can ever come to life.
const ESCAPES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#x27;': "'" };

function snippetNodes(html) {
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

function metaLine(note) {
  const parts = [];
  if (note.folder) parts.push(el('span', { class: 'folder' }, note.folder));
  for (const tag of note.tags) parts.push(el('span', { class: 'tag' }, `#${tag}`));
  parts.push(el('time', { datetime: note.updated }, date(note.updated)));
  return el('div', { class: 'meta' }, ...parts);
}

function select(index) {
  state.selected = index;
  for (const [i, item] of [...$('results').children].entries()) item.setAttribute('aria-selected', String(i === index));
  const chosen = $(`hit-${index}`);
  if (chosen) {
    $('q').setAttribute('aria-activedescendant', chosen.id);
    chosen.scrollIntoView({ block: 'nearest' });
  } else {
    $('q').removeAttribute('aria-activedescendant');
  }
}

function onSearchKey(event) {
  const count = $('results').children.length;
  if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
    event.preventDefault();
    if (count) select(Math.min(Math.max(state.selected + (event.key === 'ArrowDown' ? 1 : -1), 0), count - 1));
  } else if (event.key === 'Enter') {
    event.preventDefault();
    const chosen = $(`hit-${Math.max(state.selected, 0)}`);
    if (!chosen) return;
    // In the editor when the space has an open_url (docs/configuration.md), else the note view.
    const editor = chosen.querySelector('a.open-editor');
    const link = chosen.querySelector('a.hit');
    state.anchor = link.dataset.anchor ?? null;
    if (editor) location.href = editor.href; else location.hash = link.getAttribute('href');
  } else if (event.key === 'Escape') {
    event.preventDefault();
    $('q').value = '';
    clearTimeout(timers.search);
    runSearch();
  }
}

// -- feed -----------------------------------------------------------------

function loadFeed(more = false) {
  state.feedStale = false;
  const filters = Object.fromEntries([...new FormData($('feed-form'))].map(([k, v]) => [k, v.trim()]));
  const query = { ...filters, limit: FEED_LIMIT, cursor: more ? state.cursor : null };
  latest('feed', spacePath('feed'), query).then((body) => {
    state.feedItems = more ? [...state.feedItems, ...body.items] : body.items;
    state.cursor = body.next_cursor;
    showFeed();
  }).catch(reportUnlessAborted($('feed-info')));
}

function showFeed() {
  $('feed').replaceChildren(...state.feedItems.map((note) => el('li', {},
    el('a', { class: 'hit', href: noteHref(state.space, note.id) },
      el('div', { class: 'hit-head' }, el('span', { class: 'hit-title' }, note.title)), metaLine(note)))));
  $('more').hidden = !state.cursor;
  $('feed-info').textContent = t('notesCount', state.feedItems.length) + (state.cursor ? ' …' : '');
}

// -- one note ---------------------------------------------------------------

function showNote(space, id) {
  for (const node of ['note-meta', 'note-links']) $(node).replaceChildren();
  $('note-title').textContent = '…';
  $('note-content').textContent = '';
  $('back').focus();
  // Ids may contain "/": the route takes them as a path, so only each segment is encoded.
  const path = `spaces/${encodeURIComponent(space)}/notes/${id.split('/').map(encodeURIComponent).join('/')}`;
  latest('note', path, { render: 1 }).then((body) => {
    state.note = { space, body };
    renderNote();
  }).catch(reportUnlessAborted($('note-title')));
}

function renderNote() {
  const { space, body: { note, aliases, links, backlinks, dangling, html } } = state.note;
  document.title = `${note.title} — notarium`;
  $('note-title').textContent = note.title;
  const rows = [['path', note.path], ['folder', note.folder], ['tags', note.tags.map((tag) => `#${tag}`).join(' ')],
    ['aliases', aliases.join(', ')], ['created', date(note.created)], ['updated', date(note.updated)],
    // The other frontmatter fields, as properties.
    ...Object.entries(note.fields).filter(([key]) => !SHOWN_FIELDS.has(key))
      .map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)])];
  $('note-meta').replaceChildren(...rows.filter(([, value]) => value)
    .flatMap(([key, value]) => [el('dt', {}, t(key) ?? key), el('dd', {}, value)]));
  const section = (key, items, render) => (items.length
    ? [el('h2', {}, t(key)), el('ul', { class: 'links' }, ...items.map((item) => el('li', {}, render(item))))] : []);
  const linkTo = (linked) => el('a', { href: noteHref(space, linked.id) }, linked.title);
  $('note-links').replaceChildren(...section('outgoing', links, linkTo), ...section('backlinks', backlinks, linkTo),
    ...section('dangling', dangling, (link) => el('span', { class: 'dangling' }, link.target)));
  // Rendered and sanitised by the service (api/preview.py: no script, handler
  // or javascript: link survives), and the page's policy runs no inline script.
  if (html == null) $('note-content').textContent = t('fileGone'); else $('note-content').innerHTML = html;
  showMatchedSection();
}

// Opened from a hit: its section scrolled into view and marked.
function showMatchedSection() {
  const anchor = state.anchor;
  state.anchor = null;
  if (!anchor) return;
  const heading = [...$('note-content').querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .find((node) => node.textContent.trim() === anchor);
  if (!heading) return;
  heading.classList.add('matched');
  heading.scrollIntoView({ block: 'start' });
}

// -- status banner ------------------------------------------------------------

async function pollStatus() {
  clearTimeout(timers.status);
  const round = (timers.round = (timers.round ?? 0) + 1);
  try {
    showStatus(await api('status'));
  } catch { /* a 401 shows the token form; anything else: the next poll tries again */ }
  if (round !== timers.round) return; // a newer poll (token saved, tab shown again) took over
  const delay = state.building ? POLL_BUILDING_MS : POLL_IDLE_MS;
  timers.status = setTimeout(pollStatus, document.hidden ? delay * 6 : delay);
}

function showStatus(status) {
  const wasBuilding = state.building;
  state.status = status;
  state.building = Boolean(status.message);
  const parts = status.spaces.filter((space) => space.message).map(spaceProgress);
  const done = parts.reduce((sum, p) => sum + p.done, 0);
  const total = parts.reduce((sum, p) => sum + p.total, 0);
  $('banner').hidden = !state.building;
  $('banner-text').textContent = [t('building'), ...parts.map((p) => p.text)].join(' ');
  if (total) $('banner-progress').value = done / total; else $('banner-progress').removeAttribute('value');
  if (wasBuilding && !state.building) refresh(); // what was shown while building may have been partial
}

function spaceProgress({ space, lexical, semantic }) {
  const counted = (done, total, unit) => ({
    done, total, text: t('progress', space, number(done), number(total), unit),
  });
  if (lexical.state === 'building') {
    return lexical.total ? counted(lexical.indexed, lexical.total, t('notes')) : { done: 0, total: 0, text: space };
  }
  if (semantic.state === 'building' && semantic.total) {
    return counted(semantic.embedded, semantic.total, t('fragments'));
  }
  return { done: 0, total: 0, text: `${space} (${t('modelLoading')})` };
}

// -- token, language, views -------------------------------------------------

function askToken(messageKey) {
  $('token-toggle').hidden = false;
  $('token-message').dataset.i18n = messageKey;
  $('token-message').textContent = t(messageKey);
  if ($('token-form').hidden) {
    $('token-form').hidden = false;
    $('token').focus();
  }
}

function saveToken(value) {
  token = value || null;
  store.set(TOKEN_KEY, token);
  $('token').value = '';
  $('token-form').hidden = true;
  start();
}

function applyLanguage() {
  document.documentElement.lang = lang;
  for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = t(node.dataset.i18n);
  for (const node of document.querySelectorAll('[data-i18n-placeholder]')) {
    node.placeholder = t(node.dataset.i18nPlaceholder);
  }
  for (const node of document.querySelectorAll('[data-i18n-title]')) node.title = t(node.dataset.i18nTitle);
  $('lang').textContent = t('other').toUpperCase();
  $('lang').title = t('otherName');
  $('lang').lang = t('other');
  // Re-render what is on screen from the answers we hold, rather than asking again.
  if (state.searchBody) showResults(state.searchBody, true);
  if (!state.feedStale) showFeed();
  if (state.note) renderNote();
  if (state.status) showStatus(state.status);
}

function route() {
  const note = location.hash.match(/^#\/note\/([^/]+)\/(.+)$/);
  const view = note ? 'note' : location.hash === '#/feed' ? 'feed' : 'search';
  for (const name of ['search', 'feed', 'note']) $(`${name}-view`).hidden = name !== view;
  for (const name of ['search', 'feed']) $(`tab-${name}`).classList.toggle('active', name === view);
  if (view === 'note') {
    try {
      showNote(decodeURIComponent(note[1]), decodeURIComponent(note[2]));
    } catch { // a hand-edited address with a stray "%"
      location.hash = '';
    }
    return;
  }
  state.note = null;
  document.title = 'notarium';
  state.list = location.hash; // where Esc and "back" return from a note
  if (view === 'feed' && state.feedStale && state.space) loadFeed();
  if (view === 'search') {
    $('q').focus();
    select(state.selected);
  }
}

function refresh() {
  state.feedStale = true;
  if (!$('feed-view').hidden) loadFeed();
  if ($('q').value.trim()) runSearch();
}

async function loadSpaces() {
  const spaces = await api('spaces');
  const wanted = params.get('space') ?? store.get(SPACE_KEY);
  state.space = spaces.some((s) => s.name === wanted) ? wanted : spaces[0]?.name ?? null;
  $('space').replaceChildren(...spaces.map((s) => el('option', { value: s.name }, s.name)));
  $('space').value = state.space ?? '';
  $('space').parentElement.hidden = !spaces.length;
}

async function start() {
  $('q').value = params.get('q') ?? ''; // a search bookmarked or shared: /?space=…&q=…
  try {
    await loadSpaces();
  } catch (error) {
    if (error.status !== 401) $('search-info').textContent = failure(error);
    return;
  }
  if (!state.space) {
    $('search-info').textContent = t('noSpace');
    return;
  }
  state.feedStale = true;
  route();
  if ($('q').value.trim()) runSearch();
  pollStatus();
}

$('q').addEventListener('input', scheduleSearch);
$('results').addEventListener('click', (event) => { state.anchor = event.target.closest('a.hit')?.dataset.anchor ?? null; });
$('q').addEventListener('keydown', onSearchKey);
$('feed-form').addEventListener('input', () => {
  clearTimeout(timers.feed);
  timers.feed = setTimeout(() => loadFeed(), DEBOUNCE_MS * 2);
});
$('feed-form').addEventListener('submit', (event) => { event.preventDefault(); loadFeed(); });
$('more').addEventListener('click', () => loadFeed(true));
$('space').addEventListener('change', () => {
  state.space = $('space').value;
  store.set(SPACE_KEY, state.space);
  refresh();
});
$('back').addEventListener('click', () => { location.hash = state.list; });
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && !$('note-view').hidden) location.hash = state.list;
});
$('lang').addEventListener('click', () => {
  lang = t('other');
  store.set(LANG_KEY, lang);
  applyLanguage();
});
$('token-toggle').addEventListener('click', () => {
  if ($('token-form').hidden) askToken('needToken'); else $('token-form').hidden = true;
});
$('token-form').addEventListener('submit', (event) => { event.preventDefault(); saveToken($('token').value.trim()); });
$('token-forget').addEventListener('click', () => saveToken(null));
// `/` (outside a text field) and Ctrl+K or ⌘K (anywhere) go to the search box.
document.addEventListener('keydown', (event) => {
  const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement;
  const slash = event.key === '/' && !typing && !event.ctrlKey && !event.metaKey && !event.altKey;
  const ctrlK = (event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'k';
  if (!slash && !ctrlK) return;
  event.preventDefault();
  if (!$('search-view').hidden || location.hash === '') { $('q').focus(); $('q').select(); return; }
  location.hash = '';
});
window.addEventListener('popstate', searchFromAddress);
document.addEventListener('visibilitychange', () => { if (!document.hidden && state.space) pollStatus(); });
window.addEventListener('hashchange', route);

$('token-toggle').hidden = !token;
applyLanguage();
start();
