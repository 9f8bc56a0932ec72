// The search view: the box, the request, the rows, the address that holds the query.
// The keys and the selection are in keys.js, the side preview in preview.js.

import { abort, latest } from './api.js';
import { $, dateNode, el, failure, number, snippetNodes, spacePath, state, t, timers, whereText } from './context.js';
import { filterError, hideSuggestions, showChips, suggestValues, unfinished, withoutToken } from './filters.js';
import { openWhenAnswered, select } from './keys.js';
import { hideRecentSearches, recentNotes, showRecentSearches } from './recent.js';

const CHANNELS = [['lexical', 'mots'], ['semantic', 'sens'], ['graph', 'lien']];
export const DEBOUNCE_MS = 120;
const SEARCH_LIMIT = 20;

export function scheduleSearch() {
  state.enterWaiting = null; // typed on after an Enter: that Enter was for the text before
  clearTimeout(timers.search);
  timers.search = setTimeout(runSearch, DEBOUNCE_MS);
  suggestValues();
}

// The same query asked anew (the index moved on, or the typing's debounced search landing after
// the results were already shown): the note the user had selected stays selected, wherever it now ranks.
export function runSearch() {
  const q = $('q').value;
  keepInAddress(q);
  if (!q.trim() || !state.space) {
    showEmpty();
    return;
  }
  hideRecentSearches();
  ask(q).catch((error) => {
    if (error.name === 'AbortError') return;
    // A filter still being typed (`after:2024-0`) is not an error yet: asked without it meanwhile.
    const typing = unfinished(q, $('q').selectionStart);
    if (error.status === 400 && typing && error.body?.error === 'invalid_filter') {
      const rest = withoutToken(q, typing.token);
      if (!rest.trim()) showEmpty(true); // nothing but the filter being typed: the empty box, its values listed
      else ask(q, rest).catch((again) => { if (again.name !== 'AbortError') showFailure(again); });
      return;
    }
    showFailure(error);
  });
}

// `typed`: the box's text these rows answer (`sent` may leave out a filter still being typed).
function ask(typed, sent = typed) {
  return latest('search', spacePath('search'), { q: sent, limit: SEARCH_LIMIT, sort: state.sort })
    .then((body) => showResults({ ...body, typed }, sameQuery(state.searchBody, body)));
}

function showFailure(error) {
  state.searchBody = null;
  state.enterWaiting = null;
  $('results').replaceChildren();
  showChips([], runSearch); // the chips of the query before would be stale
  select(-1);
  $('search-info').textContent = filterError(error) ?? failure(error);
}

// The search lives in the address (/?space=…&q=…): it can be bookmarked and
// shared, and back and forward return to it. Typing replaces the entry;
// opening a note (a new hash) pushes one.
function keepInAddress(q) {
  const url = new URL(location.href);
  if (q.trim()) url.searchParams.set('q', q); else url.searchParams.delete('q');
  if (state.space) url.searchParams.set('space', state.space);
  if (url.href !== location.href) history.replaceState(null, '', url);
}

export function searchFromAddress() {
  const q = new URLSearchParams(location.search).get('q') ?? '';
  if ($('q').value !== q) setQuery(q);
}

// The box set by the page (a recent search picked, back or forward, Esc): an Enter waiting for
// the text before is dropped.
export function setQuery(q) {
  state.enterWaiting = null;
  $('q').value = q;
  clearTimeout(timers.search);
  runSearch();
}

function sameQuery(before, after) {
  return Boolean(before && after) && before.query === after.query;
}

// The empty box: the last searches and the space's recent notes, as rows to choose from.
// `typing`: a filter is being typed alone (`tag:pro`): its values stay listed.
function showEmpty(typing = false) {
  abort('search');
  if (!typing) hideSuggestions();
  showChips([], runSearch);
  $('search-info').textContent = '';
  if (!state.space) return;
  showRecentSearches((q) => { setQuery(q); $('q').focus(); });
  recentNotes().then((notes) => {
    if ($('q').value.trim() && !typing) return;
    // The feed's items, as rows (each with its editor link: api.md, "GET /spaces/{space}/feed").
    showRows({ query: '', results: notes.map((note) => ({ ...note, snippets: [], channels: {} })) }, false, 'recentNotes');
  }).catch(() => { /* no recent notes to show: the box still works */ });
}

export function showResults(body, keepSelection = false) {
  if (!body) {
    showEmpty();
    return;
  }
  showRows(body, keepSelection, null);
  showChips(body.filters, runSearch);
  const info = infoLine(body);
  // A live region: written only when it says something new (a re-ask while indexing often does not).
  if ($('search-info').textContent !== info) $('search-info').textContent = info;
}

// The rows on screen drawn again from the answer held (the language switched).
export function showAgain() {
  const body = state.searchBody;
  if (body?.label) showRows(body, true, body.label); else if (body) showResults(body, true);
}

function showRows(body, keepSelection, label) {
  const selectedId = state.searchBody?.results?.[state.selected]?.id;
  state.searchBody = { ...body, space: state.space, label };
  const results = body.results ?? [];
  $('results').replaceChildren(...results.map(hitRow));
  $('list-label').hidden = !label || !results.length;
  if (label) $('list-label').textContent = t(label);
  $('q').setAttribute('aria-expanded', String(results.length > 0));
  const kept = keepSelection ? results.findIndex((hit) => hit.id === selectedId) : -1;
  // The first hit is what Enter opens: shown as chosen. Asked again with the same hit chosen: the list stays put.
  select(kept >= 0 ? kept : results.length ? 0 : -1, kept < 0);
  openWhenAnswered();
}

function infoLine(body) {
  const results = body.results;
  const progress = indexing();
  if (!results.length && body.partial) return t('partialNothing', body.query.trim(), ...progress);
  if (!results.length) {
    // Nothing found is an answer: said plainly, with what to try (issue 14).
    const parts = [t('nothing', body.query.trim())];
    if (body.caveats?.semantic?.includes('relevance floor')) parts.push(t('noMeaning')); // not a partial index's caveat
    return parts.join(' ');
  }
  const parts = [t('results', results.length)];
  if (body.unmatched_terms?.length) parts.push(`${t('unmatched')} ${body.unmatched_terms.join(', ')}`);
  if (body.partial) parts.push(progress[1] ? t('partialCount', ...progress) : t('partial'));
  return parts.join(' · ');
}

// How far the searched space's notes are indexed, from the last status: [done, total] as text.
function indexing() {
  const lexical = state.status?.spaces.find((s) => s.space === state.space)?.lexical;
  return lexical?.total ? [number(lexical.indexed), number(lexical.total)] : ['', ''];
}

// One row: the title, the section it matched in, the channels; then one line of snippet and path:line.
function hitRow(hit, index) {
  const snippet = hit.snippets[0];
  // The note's own H1 is its title again: the path starts below it.
  const headings = hit.heading ?? snippet?.heading ?? [];
  // A canvas's last heading is the id of the card the hit is in (its anchor): no words for people.
  const named = hit.path?.toLowerCase().endsWith('.canvas') ? headings.slice(0, -1) : headings;
  const section = (named[0] === hit.title ? named.slice(1) : named).join(' › ');
  const head = el('span', { class: 'row-head' }, el('span', { class: 'hit-title' }, hit.title));
  if (section) head.append(el('span', { class: 'hit-section' }, section));
  head.append(...badges(hit), dateNode(hit, state.sort === 'created' ? 'created' : 'updated'));
  const line = el('span', { class: 'row-line' });
  if (snippet) line.append(el('span', { class: 'snippet' }, ...snippetNodes(snippet.html)));
  else if (hit.reason) line.append(el('span', { class: 'snippet reason' }, t('reason', hit.reason)));
  else if (hit.excerpt) line.append(el('span', { class: 'snippet' }, ...snippetNodes(hit.excerpt.html)));
  line.append(el('span', { class: 'hit-where' }, whereText(hit)));
  // No link inside: an option's content is not interactive (WAI-ARIA); a click opens it as Enter does (keys.js).
  return el('li', { id: `hit-${index}`, role: 'option', 'aria-selected': 'false' }, el('div', { class: 'hit' }, head, line));
}

function badges(hit) {
  return CHANNELS.filter(([channel]) => hit.channels[channel]).map(([channel, name]) =>
    el('span', { class: `badge ${name}`, title: `${t(`${name}Title`)} (${t('rank')} ${hit.channels[channel]})` },
      t(name)));
}

// Asked again while the index is being built: each step of the space's indexing may bring notes.
document.addEventListener('notarium:progress', (event) => {
  if (event.detail?.space !== state.space || !state.searchBody?.partial || !$('q').value.trim()) return;
  runSearch();
});

export { hideSuggestions };
