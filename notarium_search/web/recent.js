// The empty box: the last searches (kept in this browser only) and the space's recent notes,
// so that opening the page is already a way back to what one was working on.

import { latest } from './api.js';
import { $, el, spacePath, state, store } from './context.js';

const SEARCHES_KEY = 'notarium.searches';
const SEARCHES_KEPT = 6;
const RECENT_NOTES = 8;

function searches() {
  try {
    const kept = JSON.parse(store.get(SEARCHES_KEY) ?? '[]');
    return Array.isArray(kept) ? kept.filter((s) => typeof s?.q === 'string' && typeof s?.space === 'string') : [];
  } catch { // written by another version of the page, or by hand
    return [];
  }
}

// A search the user acted on (opened a hit): first in the list, once.
export function rememberSearch(space, q) {
  const text = q.trim();
  if (!text || !space) return;
  const kept = [{ space, q: text }, ...searches().filter((s) => s.space !== space || s.q !== text)];
  store.set(SEARCHES_KEY, JSON.stringify(kept.slice(0, SEARCHES_KEPT)));
}

export function showRecentSearches(onPick) {
  const mine = searches().filter((s) => s.space === state.space);
  $('recent-searches').replaceChildren(...mine.map((s) => {
    const button = el('button', { type: 'button', class: 'quiet chip' }, s.q);
    button.addEventListener('click', () => onPick(s.q));
    return el('li', {}, button);
  }));
  $('recent-searches').hidden = !mine.length;
}

export const hideRecentSearches = () => { $('recent-searches').hidden = true; };

// The space's notes by their last change, newest first (the feed without words).
export function recentNotes() {
  return latest('search', spacePath('feed'), { limit: RECENT_NOTES }).then((body) => body.items);
}
