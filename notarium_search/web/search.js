// The search view: the box, the hits, the keys, the address that holds the query.

import { abort, latest, reportUnlessAborted } from './api.js';
import { $, el, metaLine, noteHref, snippetNodes, spacePath, state, t, timers } from './context.js';

const CHANNELS = [['lexical', 'mots'], ['semantic', 'sens'], ['graph', 'lien']];
export const DEBOUNCE_MS = 120;
const SEARCH_LIMIT = 20;

export function scheduleSearch() {
  clearTimeout(timers.search);
  timers.search = setTimeout(runSearch, DEBOUNCE_MS);
}

// The same query asked anew (the index finished building, or the typing's
// debounced search landing after the results were already shown): the note
// the user had selected stays selected, wherever it now ranks.
export function runSearch() {
  const q = $('q').value;
  rememberSearch(q);
  if (!q.trim() || !state.space) {
    abort('search');
    showResults(null);
    return;
  }
  latest('search', spacePath('search'), { q, limit: SEARCH_LIMIT })
    .then((body) => showResults(body, sameQuery(state.searchBody, body)))
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

export function searchFromAddress() {
  const q = new URLSearchParams(location.search).get('q') ?? '';
  if ($('q').value !== q) {
    $('q').value = q;
    runSearch();
  }
}

function sameQuery(before, after) {
  return Boolean(before && after) && before.query === after.query;
}

function showChips(filters) {
  const chips = (filters ?? []).map((f) =>
    el('li', { class: 'chip' }, `${f.name}:${f.value.includes(' ') ? `"${f.value}"` : f.value}`));
  $('search-filters').replaceChildren(...(chips.length ? [el('li', { class: 'chips-label' }, t('filtersLabel')), ...chips] : []));
}

export function showResults(body, keepSelection = false) {
  const selectedId = state.searchBody?.results?.[state.selected]?.id;
  state.searchBody = body;
  const results = body?.results ?? [];
  $('results').replaceChildren(...results.map(hitItem));
  $('q').setAttribute('aria-expanded', String(results.length > 0));
  select(keepSelection ? results.findIndex((hit) => hit.id === selectedId) : -1);
  showChips(body?.filters);
  if (!body) {
    $('search-info').textContent = '';
    return;
  }
  if (!results.length) {
    // Nothing found is an answer: said plainly, with what to try (issue 14).
    const parts = [t('nothing', body.query.trim())];
    if (body.caveats?.semantic?.includes('relevance floor')) parts.push(t('noMeaning')); // not a partial index's caveat
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

export function select(index) {
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

export function onSearchKey(event) {
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

// Which section of the note a click on a hit opens at.
export function onResultsClick(event) {
  state.anchor = event.target.closest('a.hit')?.dataset.anchor ?? null;
}
