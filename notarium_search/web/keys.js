// The rows as a listbox of the box's combobox (WAI-ARIA): one selection, moved by the arrows,
// Home/End, Page Up/Down and the pointer; Enter and Ctrl/⌘+Enter open it; Alt+L and Alt+C copy.

import { copyLink, copyPath, openNote } from './actions.js';
import { $, state } from './context.js';
import { complete, hideSuggestions, suggesting } from './filters.js';
import { previewHit } from './preview.js';
import { rememberSearch } from './recent.js';

const PAGE = 8; // rows a Page Up/Down moves: about one screen of rows

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
  const count = $('results').children.length;
  if (event.key === 'Tab' && !event.shiftKey && suggesting()) {
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
    // recent notes); the hit opened is the first of the answer to what is in the box.
    state.enterWaiting = { other: event.ctrlKey || event.metaKey };
    openWhenAnswered();
  } else if (event.altKey && hit && (event.code === 'KeyL' || event.code === 'KeyC')) {
    // By the key's place, not its letter: Alt+L on a Mac keyboard types "¬".
    event.preventDefault();
    if (event.code === 'KeyL') copyLink(hit); else copyPath(hit);
  } else if (event.key === 'Escape') {
    event.preventDefault();
    if (suggesting()) hideSuggestions(); else clear();
  }
}

const answered = () => {
  const text = $('q').value;
  return text.trim() ? state.searchBody?.typed === text : !state.searchBody?.typed;
};

export function openWhenAnswered() {
  const waiting = state.enterWaiting;
  if (!waiting || !answered()) return;
  state.enterWaiting = null;
  const hit = selectedHit();
  if (hit) open(hit, waiting.other);
}

// What opening a hit keeps: its section and words for the note view, the search for the empty box.
function opening(hit) {
  state.anchor = hit.anchor ?? null;
  state.opened = { id: hit.id, q: state.searchBody?.query || null, openUrl: hit.open_url ?? null };
  rememberSearch(state.searchBody?.space, state.searchBody?.query ?? '');
}

function open(hit, other) {
  opening(hit);
  openNote(state.searchBody?.space ?? state.space, hit, other);
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
