// The rows as a listbox of the box's combobox (WAI-ARIA): one selection, moved by the arrows,
// Home/End, Page Up/Down and the pointer; Enter and Ctrl/⌘+Enter open it; Alt+L and Alt+C copy.

import { copyLink, copyPath, openNote, opensEditor } from './actions.js';
import { $, state } from './context.js';
import { complete, hideSuggestions, moveSuggestion, suggesting, suggestionChosen } from './filters.js';
import { previewHit } from './preview.js';
import { rememberSearch } from './recent.js';

const PAGE = 8; // rows a Page Up/Down moves: about one screen of rows

// `scroll`: false when the rows were asked again and the same one stays chosen (the list stays where it was).
export function select(index, scroll = true) {
  state.selected = index;
  for (const [i, item] of [...$('results').children].entries()) item.setAttribute('aria-selected', String(i === index));
  const chosen = $(`hit-${index}`);
  // A value chosen in the suggestions stays the active one when rows arrive meanwhile (a late answer).
  if (chosen && !suggestionChosen()) $('q').setAttribute('aria-activedescendant', chosen.id);
  else if (!suggestionChosen()) $('q').removeAttribute('aria-activedescendant');
  if (chosen && scroll) chosen.scrollIntoView({ block: 'nearest' });
  previewHit(selectedHit());
}

export const selectedHit = () => state.searchBody?.results?.[state.selected] ?? null;

// Where the selection goes for a key, or null for a key that is not a move.
function moved(event, count) {
  const at = state.selected;
  const plain = !event.shiftKey && !event.altKey;
  const to = {
    ArrowDown: at + 1, ArrowUp: at - 1, PageDown: at + PAGE, PageUp: at - PAGE,
    // Home/End choose the first and last rows; with Shift they select text in the box as usual.
    Home: plain ? 0 : null, End: plain ? count - 1 : null,
  }[event.key];
  return to == null ? null : Math.min(Math.max(to, 0), count - 1);
}

export function onSearchKey(event, clear) {
  if (event.isComposing) return; // the keys belong to the input method until its text is composed
  const count = $('results').children.length;
  if (suggesting() && (event.key === 'ArrowDown' || event.key === 'ArrowUp')) {
    if (moveSuggestion(event.key === 'ArrowDown' ? 1 : -1)) {
      event.preventDefault();
      return;
    }
  }
  if (suggesting() && ((event.key === 'Tab' && !event.shiftKey) || (event.key === 'Enter' && suggestionChosen()))) {
    if (complete()) event.preventDefault();
    return;
  }
  const to = moved(event, count);
  if (to != null) {
    event.preventDefault();
    if (count) select(to);
    return;
  }
  const hit = selectedHit();
  if (event.key === 'Enter') {
    event.preventDefault();
    // Typed then Enter at once: the rows shown may answer the text before (or be the empty box's
    // recent notes); the hit opened is the first of the answer to what is in the box. Anything
    // done after the Enter (typing, Esc, another space or view) drops it (search.js, app.js).
    state.enterWaiting = { other: event.ctrlKey || event.metaKey, typed: $('q').value, space: state.space };
    openWhenAnswered();
  } else if (copyKey(event) && hit) {
    event.preventDefault();
    if (event.code === 'KeyL') copyLink(hit); else copyPath(hit);
  } else if (event.key === 'Escape') {
    event.preventDefault();
    if (suggesting()) hideSuggestions(); else clear();
  }
}

// Alt+L, Alt+C, by the key's place, not its letter: Alt+L on a Mac keyboard types "¬". Not AltGr
// (Ctrl+Alt on Windows), which types characters on many layouts (AltGr+L is "ł" in Polish).
const copyKey = (event) => event.altKey && !event.ctrlKey && !event.metaKey
  && !event.getModifierState('AltGraph') && (event.code === 'KeyL' || event.code === 'KeyC');

// Whether the rows shown answer the text the Enter was pressed on, in its space
// (the empty box's recent notes answer an empty box).
function answered(waiting) {
  const body = state.searchBody;
  if (!body || body.space !== waiting.space || $('q').value !== waiting.typed) return false;
  return waiting.typed.trim() ? body.typed === waiting.typed : !body.typed;
}

export function openWhenAnswered() {
  const waiting = state.enterWaiting;
  if (!waiting || !answered(waiting)) return;
  state.enterWaiting = null;
  const hit = selectedHit();
  if (hit) open(hit, waiting.other);
}

// Opening a hit keeps the search for the empty box and, for the page's note view, the hit's
// section and words (note.js takes them once; the editor needs neither).
function open(hit, other) {
  const space = state.searchBody?.space ?? state.space;
  const q = state.searchBody?.query ?? '';
  rememberSearch(space, q);
  state.opened = opensEditor(hit, other) ? null
    : { space, id: hit.id, q: q || null, openUrl: hit.open_url ?? null, anchor: hit.anchor ?? null };
  openNote(space, hit, other);
}

// A click on a row opens it as Enter does (Ctrl/⌘+click the other way); the pointer over a row selects it.
export function onResultsClick(event) {
  const row = event.target.closest('li[role="option"]');
  const hit = row && state.searchBody?.results?.[Number(row.id.slice('hit-'.length))];
  if (hit) open(hit, event.ctrlKey || event.metaKey);
}

export function onResultsPointer(event) {
  const row = event.target.closest('li[role="option"]');
  if (!row) return;
  const index = Number(row.id.slice('hit-'.length));
  if (index !== state.selected) select(index);
}
