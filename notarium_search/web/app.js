// The Spotlight page of notarium-search: plain DOM, no dependencies, nothing fetched but our own API.
// This module starts the page and routes between its views; each view is its own module:
// search.js (with keys.js, filters.js, recent.js and preview.js), feed.js, note.js, status.js
// (the banner); actions.js opens and copies; api.js talks to the API, context.js holds what
// they share (and the page's safety rule), strings.js the words.

import { api, askToken } from './api.js';
import { $, el, failure, LANG_KEY, params, prefs, SPACE_KEY, state, store, t, timers, TOKEN_KEY } from './context.js';
import { loadFeed, showFeed } from './feed.js';
import { loadRelated, renderNote, showNote } from './note.js';
import { onResultsClick, onResultsPointer, onSearchKey, select } from './keys.js';
import { DEBOUNCE_MS, hideSuggestions, runSearch, scheduleSearch, searchFromAddress, setQuery, showAgain } from './search.js';
import { pollStatus, showStatus } from './status.js';

function saveToken(value) {
  prefs.token = value || null;
  store.set(TOKEN_KEY, prefs.token);
  $('token').value = '';
  $('token-form').hidden = true;
  start();
}

function applyLanguage() {
  document.documentElement.lang = prefs.lang;
  for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = t(node.dataset.i18n);
  for (const node of document.querySelectorAll('[data-i18n-placeholder]')) {
    node.placeholder = t(node.dataset.i18nPlaceholder);
  }
  for (const node of document.querySelectorAll('[data-i18n-title]')) node.title = t(node.dataset.i18nTitle);
  for (const node of document.querySelectorAll('[data-i18n-label]')) node.setAttribute('aria-label', t(node.dataset.i18nLabel));
  $('lang').textContent = t('other').toUpperCase();
  $('lang').title = t('otherName');
  $('lang').lang = t('other');
  // Re-render what is on screen from the answers we hold, rather than asking again.
  showAgain();
  if (!state.feedStale) showFeed();
  if (state.note) renderNote();
  if (state.status) showStatus(state.status);
}

function route() {
  const note = location.hash.match(/^#\/note\/([^/]+)\/(.+)$/);
  const view = note ? 'note' : location.hash === '#/feed' ? 'feed' : 'search';
  for (const name of ['search', 'feed', 'note']) $(`${name}-view`).hidden = name !== view;
  for (const name of ['search', 'feed']) $(`tab-${name}`).classList.toggle('active', name === view);
  if (view !== 'search') state.enterWaiting = null; // gone elsewhere: an Enter still waiting is not wanted
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
    if (state.searchBody) select(state.selected);
  }
}

function refresh() {
  state.feedStale = true;
  if (!$('feed-view').hidden) loadFeed();
  runSearch();
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
  runSearch(); // the query of the address, or the empty box's recent notes
  pollStatus();
}

// `/` (outside a text field) and Ctrl+K or ⌘K (anywhere) go to the search box.
function onShortcut(event) {
  const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement;
  const slash = event.key === '/' && !typing && !event.ctrlKey && !event.metaKey && !event.altKey;
  const ctrlK = (event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'k';
  if (!slash && !ctrlK) return;
  event.preventDefault();
  if (!$('search-view').hidden || location.hash === '') { $('q').focus(); $('q').select(); return; }
  location.hash = '';
}

$('q').addEventListener('input', scheduleSearch);
$('results').addEventListener('click', onResultsClick);
$('q').addEventListener('keydown', (event) => onSearchKey(event, () => setQuery('')));
$('q').addEventListener('blur', () => setTimeout(hideSuggestions, DEBOUNCE_MS));
$('results').addEventListener('pointermove', onResultsPointer);
$('sort').addEventListener('change', () => {
  state.sort = $('sort').value;
  if ($('q').value.trim()) runSearch();
});
$('feed-form').addEventListener('input', () => {
  clearTimeout(timers.feed);
  timers.feed = setTimeout(() => loadFeed(), DEBOUNCE_MS * 2);
});
$('feed-form').addEventListener('submit', (event) => { event.preventDefault(); loadFeed(); });
$('more').addEventListener('click', () => loadFeed(true));
$('space').addEventListener('change', () => {
  state.space = $('space').value;
  state.enterWaiting = null;
  store.set(SPACE_KEY, state.space);
  refresh();
});
$('back').addEventListener('click', () => { location.hash = state.list; });
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && !$('note-view').hidden) location.hash = state.list;
});
$('lang').addEventListener('click', () => {
  prefs.lang = t('other');
  store.set(LANG_KEY, prefs.lang);
  applyLanguage();
});
$('token-toggle').addEventListener('click', () => {
  if ($('token-form').hidden) askToken('needToken'); else $('token-form').hidden = true;
});
$('token-form').addEventListener('submit', (event) => { event.preventDefault(); saveToken($('token').value.trim()); });
$('token-forget').addEventListener('click', () => saveToken(null));
document.addEventListener('keydown', onShortcut);
document.addEventListener('notarium:status', loadRelated); // the semantic channel may have become ready
document.addEventListener('notarium:indexed', refresh);
window.addEventListener('popstate', searchFromAddress);
document.addEventListener('visibilitychange', () => { if (!document.hidden && state.space) pollStatus(); });
window.addEventListener('hashchange', route);

$('token-toggle').hidden = !prefs.token;
applyLanguage();
start();
