// The side preview, on screens wide enough for two columns: the selected hit's note, its words
// marked, scrolled to the hit's section; the same note view, in a pane, beside the rows.

import { actionButtons } from './actions.js';
import { latest } from './api.js';
import { $, state, timers } from './context.js';
import { notePath, renderInto, showSection } from './note.js';

const WIDE = window.matchMedia('(min-width: 60rem)');
// Arrows held down walk the rows faster than notes can be read: the pane follows once they stop.
const FOLLOW_MS = 90;
const KEPT = 24; // notes kept for going back and forth between rows

const cache = new Map();
let shownKey = null; // the note and query the pane holds

export const previewShown = () => WIDE.matches;

export function previewHit(hit) {
  clearTimeout(timers.preview);
  if (!hit || !WIDE.matches) {
    $('preview').hidden = true;
    shownKey = null;
    return;
  }
  // The space and the query the rows were asked with: the space picker may change before the pane follows.
  const { space, query } = state.searchBody;
  timers.preview = setTimeout(() => load(space, hit, query ?? ''), FOLLOW_MS);
}

function load(space, hit, q) {
  // With the note's version: the rows asked again after an edit bring a new `updated`.
  const key = JSON.stringify([space, hit.id, hit.updated, q]);
  const shown = (body) => {
    if (state.searchBody?.results?.[state.selected]?.id !== hit.id) return; // another row was chosen meanwhile
    show(space, hit, body, key);
  };
  if (cache.has(key)) {
    shown(cache.get(key));
    return;
  }
  latest('preview', notePath(space, hit.id), { render: 1, q }).then((body) => {
    cache.set(key, body);
    if (cache.size > KEPT) cache.delete(cache.keys().next().value);
    shown(body);
  }).catch((error) => {
    if (error.name === 'AbortError') return; // another row's note asked for instead: that one will show
    $('preview').hidden = true; // the note went away: the rows stand alone
  });
}

function show(space, hit, body, key) {
  if (!WIDE.matches) return; // narrowed while the note was on its way
  const again = key === shownKey && !$('preview').hidden; // the same note asked again: the reader's place is kept
  const kept = $('preview').scrollTop;
  renderInto('preview', space, body);
  // A recent note of the empty box is a feed item: its editor link is the note's own.
  $('preview-actions').replaceChildren(...actionButtons(space, body.note, hit.open_url ?? body.open_url, false));
  $('preview').hidden = false;
  shownKey = key;
  showSection($('preview-content'), hit.anchor, again ? null : $('preview'));
  if (again) $('preview').scrollTop = kept;
}

// Narrowed to one column (a phone turned, a window shrunk): no pane; widened again: the selected hit's.
WIDE.addEventListener('change', () => previewHit(state.searchBody?.results?.[state.selected]));

// Anything cached may be older than the index after a pass: asked anew.
document.addEventListener('notarium:indexed', () => cache.clear());
