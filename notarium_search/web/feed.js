// The feed view: notes newest first, narrowed by the form, each with its excerpt.

import { latest, reportUnlessAborted } from './api.js';
import { $, el, metaLine, noteHref, snippetNodes, spacePath, state, t } from './context.js';

const FEED_LIMIT = 20;

export function loadFeed(more = false) {
  state.feedStale = false;
  const filters = Object.fromEntries([...new FormData($('feed-form'))].map(([k, v]) => [k, v.trim()]));
  const query = { ...filters, limit: FEED_LIMIT, cursor: more ? state.cursor : null };
  latest('feed', spacePath('feed'), query).then((body) => {
    state.feedItems = more ? [...state.feedItems, ...body.items] : body.items;
    state.cursor = body.next_cursor;
    showFeed();
  }).catch(reportUnlessAborted($('feed-info')));
}

export function showFeed() {
  $('feed').replaceChildren(...state.feedItems.map(feedItem));
  $('more').hidden = !state.cursor;
  $('feed-info').textContent = t('notesCount', state.feedItems.length) + (state.cursor ? ' …' : '');
}

function feedItem(note) {
  const link = el('a', { class: 'hit', href: noteHref(state.space, note.id) },
    el('div', { class: 'hit-head' }, el('span', { class: 'hit-title' }, note.title)));
  // Where the words occur, else the note's opening lines (the API's excerpt).
  if (note.excerpt) link.append(el('div', { class: 'snippet' }, ...snippetNodes(note.excerpt.html)));
  link.append(metaLine(note));
  return el('li', {}, link);
}
