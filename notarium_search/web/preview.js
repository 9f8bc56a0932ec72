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

export const previewShown = () => WIDE.matches;

export function previewHit(hit) {
  clearTimeout(timers.preview);
  if (!hit || !WIDE.matches) {
    $('preview').hidden = true;
    return;
  }
  // The space and the query the rows were asked with: the space picker may change before the pane follows.
  const { space, query } = state.searchBody;
  timers.preview = setTimeout(() => load(space, hit, query ?? ''), FOLLOW_MS);
}

function load(space, hit, q) {
  const key = JSON.stringify([space, hit.id, q]);
  const shown = (body) => {
    if (state.searchBody?.results?.[state.selected]?.id !== hit.id) return; // another row was chosen meanwhile
    show(space, hit, body);
  };
  if (cache.has(key)) {
    shown(cache.get(key));
    return;
  }
  latest('preview', notePath(space, hit.id), { render: 1, q }).then((body) => {
    cache.set(key, body);
    if (cache.size > KEPT) cache.delete(cache.keys().next().value);
    shown(body);
  }).catch(() => { $('preview').hidden = true; }); // stale, or the note went away: the rows stand alone
}

function show(space, hit, body) {
  renderInto('preview', space, body);
  $('preview-actions').replaceChildren(...actionButtons(space, body.note, hit.open_url, false));
  $('preview').hidden = false;
  showSection($('preview-content'), hit.anchor, $('preview'));
}

// Narrowed to one column (a phone turned, a window shrunk): no pane; widened again: the selected hit's.
WIDE.addEventListener('change', () => previewHit(state.searchBody?.results?.[state.selected]));

// Anything cached may be older than the index after a pass: asked anew.
document.addEventListener('notarium:indexed', () => cache.clear());
