// Filters typed in the box (typed_filters.py reads them): chips that can be removed, values completed
// from the space (tags and folders), and a filter still being typed never reported as an error.

import { api } from './api.js';
import { $, el, spacePath, state, t, timers } from './context.js';

// The names the service reads as filters (docs/api.md, "Typed filters"); the others stay words.
const NAMES = ['tag', '-tag', 'folder', 'path', 'file', 'section', 'after', 'before', 'created-after', 'created-before'];
// Which field's values complete which filter.
const COMPLETED = { tag: 'tag', '-tag': 'tag', folder: 'folder', file: 'file' };
const SUGGESTIONS = 8;
const ASK_MS = 80;

const quoted = (value) => (/[\s"]/.test(value) ? `"${value.replaceAll('"', '')}"` : value);
export const filterText = (f) => `${f.name}:${quoted(f.value)}`;

function escaped(text) { return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

// The filter being typed: the last word, the caret at its end, a known name and its colon.
export function unfinished(q, caret = q.length) {
  if (caret !== q.length) return null;
  const match = q.match(/(?:^|\s)((-?[a-z-]+):("[^"]*|[^\s"]*))$/i);
  if (!match || !NAMES.includes(match[2].toLowerCase())) return null;
  return { token: match[1], name: match[2].toLowerCase(), value: match[3].replace(/^"/, '') };
}

export const withoutToken = (q, token) => q.slice(0, q.length - token.length).trimEnd();

// A chip for each filter the service read, with a button that takes it out of the query.
export function showChips(filters, onChange) {
  const chips = (filters ?? []).map((f) => {
    const text = filterText(f);
    const remove = el('button', { type: 'button', class: 'chip-remove', 'aria-label': t('removeFilter', text) }, '×');
    remove.addEventListener('click', () => {
      $('q').value = removeFilter($('q').value, f);
      $('q').focus();
      onChange();
    });
    return el('li', { class: 'chip' }, el('span', {}, text), remove);
  });
  $('search-filters').replaceChildren(...(chips.length ? [el('li', { class: 'chips-label' }, t('filtersLabel')), ...chips] : []));
}

export function removeFilter(q, f) {
  // Quoted with spaces inside the quotes (`tag:" projet "`), the service reads the value without them.
  const value = `(?:"\\s*${escaped(f.value)}\\s*"|${escaped(f.value)})`;
  const pattern = new RegExp(`(^|\\s)${escaped(f.name)}:${value}(?=\\s|$)`, 'i');
  return q.replace(pattern, '$1').replace(/\s{2,}/g, ' ').trim();
}

// A filter's error, in the page's language when the service names the filter (error `invalid_filter`).
export function filterError(error) {
  const body = error.body ?? {};
  if (body.error !== 'invalid_filter' || !body.filter) return null;
  const key = /after|before|created/.test(body.filter) ? 'badDate' : 'badFilter';
  return t(key, body.filter, body.value ?? '');
}

// -- completion ------------------------------------------------------------
// The values listed under the box (a second listbox of the combobox): the first is what Tab takes;
// the arrows move into them (the box's aria-activedescendant follows), and Enter then takes the one chosen.

const suggestion = { asked: 0, at: 0, chosen: false };

export function suggestValues() {
  clearTimeout(timers.suggest);
  const typing = unfinished($('q').value, $('q').selectionStart);
  if (!typing || !COMPLETED[typing.name] || !state.space) {
    hideSuggestions();
    return;
  }
  const asked = ++suggestion.asked; // an answer landing after Esc, a blur or more typing is dropped
  timers.suggest = setTimeout(() => {
    api(spacePath('values'), { field: COMPLETED[typing.name], prefix: typing.value, limit: SUGGESTIONS })
      .then((body) => {
        if (asked !== suggestion.asked || document.activeElement !== $('q')) return;
        if (unfinished($('q').value, $('q').selectionStart)?.token !== typing.token) return; // typed on meanwhile
        showSuggestions(typing, body.values ?? []);
      })
      .catch(() => { if (asked === suggestion.asked) hideSuggestions(); });
  }, ASK_MS);
}

function showSuggestions(typing, values) {
  const shown = values.filter((v) => v.value.toLowerCase() !== typing.value.toLowerCase());
  $('suggest').replaceChildren(...shown.map((v, i) => {
    const option = el('li', { role: 'option', id: `suggest-${i}`, 'aria-selected': 'false', 'data-value': v.value },
      `${typing.name}:${v.value}`, el('span', { class: 'count' }, String(v.notes)));
    option.addEventListener('mousedown', (event) => { event.preventDefault(); complete(v.value); });
    return option;
  }));
  $('suggest').hidden = !shown.length;
  if (shown.length) $('q').setAttribute('aria-controls', 'suggest');
  markSuggestion(0, false);
}

function markSuggestion(at, chosen) {
  Object.assign(suggestion, { at, chosen });
  for (const [i, option] of [...$('suggest').children].entries()) option.setAttribute('aria-selected', String(i === at));
  if (chosen) $('q').setAttribute('aria-activedescendant', `suggest-${at}`);
}

// The arrows while values are listed: Down goes into them, Up from the first goes back to the rows.
export function moveSuggestion(step) {
  const count = $('suggest').children.length;
  if (!suggestion.chosen && step < 0) return false;
  const at = suggestion.chosen ? suggestion.at + step : 0;
  if (at < 0) {
    markSuggestion(0, false);
    rowActive();
    return true;
  }
  markSuggestion(Math.min(at, count - 1), true);
  return true;
}

export const suggestionChosen = () => suggesting() && suggestion.chosen;
const suggestionValue = () => $('suggest').children[suggestion.at]?.dataset.value;

function rowActive() {
  const row = $(`hit-${state.selected}`);
  if (row) $('q').setAttribute('aria-activedescendant', row.id); else $('q').removeAttribute('aria-activedescendant');
}

export function hideSuggestions() {
  clearTimeout(timers.suggest);
  suggestion.asked += 1;
  const wasShown = suggesting();
  $('suggest').hidden = true;
  $('suggest').replaceChildren();
  if (wasShown) {
    $('q').setAttribute('aria-controls', 'results');
    rowActive();
  }
}

// Tab, Enter on a chosen value or a click puts the value in the box, followed by a space: the filter is finished.
export function complete(value = suggestionValue()) {
  const typing = unfinished($('q').value);
  if (!typing || value == null) return false;
  const before = $('q').value.slice(0, $('q').value.length - typing.token.length);
  $('q').value = `${before}${typing.name}:${quoted(value)} `;
  hideSuggestions();
  $('q').dispatchEvent(new Event('input'));
  return true;
}

export const suggesting = () => !$('suggest').hidden;
