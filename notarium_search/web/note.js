// The note view: the rendered note, its properties, links, backlinks and related notes.

import { latest, reportUnlessAborted } from './api.js';
import { $, date, el, idPath, noteHref, state, t } from './context.js';

const SHOWN_FIELDS = new Set(['title', 'tags', 'tag', 'aliases', 'alias', 'id', 'created', 'updated']);
const RELATED_LIMIT = 5;

export function showNote(space, id) {
  for (const node of ['note-meta', 'note-links', 'note-related']) $(node).replaceChildren();
  $('note-title').textContent = '…';
  $('note-content').textContent = '';
  $('back').focus();
  state.related = null;
  latest('note', `spaces/${encodeURIComponent(space)}/notes/${idPath(id)}`, { render: 1 }).then((body) => {
    state.note = { space, body };
    renderNote();
    loadRelated();
  }).catch(reportUnlessAborted($('note-title')));
}

export function renderNote() {
  const { space, body: { note, aliases, links, backlinks, dangling, html } } = state.note;
  document.title = `${note.title} — notarium`;
  $('note-title').textContent = note.title;
  const rows = [['path', note.path], ['folder', note.folder], ['tags', note.tags.map((tag) => `#${tag}`).join(' ')],
    ['aliases', aliases.join(', ')], ['created', date(note.created)], ['updated', date(note.updated)],
    // The other frontmatter fields, as properties.
    ...Object.entries(note.fields).filter(([key]) => !SHOWN_FIELDS.has(key))
      .map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)])];
  $('note-meta').replaceChildren(...rows.filter(([, value]) => value)
    .flatMap(([key, value]) => [el('dt', {}, t(key) ?? key), el('dd', {}, value)]));
  const linkTo = (linked) => el('a', { href: noteHref(space, linked.id) }, linked.title);
  $('note-links').replaceChildren(...section('outgoing', links, linkTo), ...section('backlinks', backlinks, linkTo),
    ...section('dangling', dangling, (link) => el('span', { class: 'dangling' }, link.target)));
  showRelated();
  // Rendered and sanitised by the service (api/preview.py: no script, handler
  // or javascript: link survives), and the page's policy runs no inline script.
  if (html == null) $('note-content').textContent = t('fileGone'); else $('note-content').innerHTML = html;
  showMatchedSection();
}

function section(key, items, render) {
  return items.length
    ? [el('h2', {}, t(key)), el('ul', { class: 'links' }, ...items.map((item) => el('li', {}, render(item))))] : [];
}

// Related notes come from the semantic channel: asked for only when the space's
// channel is ready (a 503 otherwise), and again when the status says it became so.
export function loadRelated() {
  const shown = state.note;
  if (!shown || state.related !== null) return;
  const space = state.status?.spaces.find((s) => s.space === shown.space);
  if (space?.semantic.state !== 'ready') return;
  state.related = [];
  const path = `spaces/${encodeURIComponent(shown.space)}/related/${idPath(shown.body.note.id)}`;
  latest('related', path, { limit: RELATED_LIMIT }).then((body) => {
    if (state.note !== shown) return;
    state.related = body.related;
    showRelated();
  }).catch(() => { /* the channel went away meanwhile: no section, the rest of the note stands */ });
}

function showRelated() {
  const { space } = state.note;
  $('note-related').replaceChildren(...section('related', state.related ?? [], (related) =>
    el('a', { href: noteHref(space, related.id), title: related.fragment.text }, related.title)));
}

// Opened from a hit: its section scrolled into view and marked.
function showMatchedSection() {
  const anchor = state.anchor;
  state.anchor = null;
  if (!anchor) return;
  const heading = [...$('note-content').querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .find((node) => node.textContent.trim() === anchor);
  if (!heading) return;
  heading.classList.add('matched');
  heading.scrollIntoView({ block: 'start' });
}
