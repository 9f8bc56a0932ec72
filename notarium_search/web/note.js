// A note as the page shows it, in the note view (#note-…) and in the side preview (#preview-…):
// its body first (rendered and sanitised by the service, the query's words marked), then its
// properties, links and backlinks; related notes in the note view.

import { actionButtons } from './actions.js';
import { latest, reportUnlessAborted } from './api.js';
import { $, date, el, idPath, noteHref, state, t } from './context.js';

const SHOWN_FIELDS = new Set(['title', 'tags', 'tag', 'aliases', 'alias', 'id', 'created', 'updated']);
const RELATED_LIMIT = 5;

export const notePath = (space, id) => `spaces/${encodeURIComponent(space)}/notes/${idPath(id)}`;

// The note view (#/note/space/id): opened from a hit, it is marked with the hit's words and opens at its section.
export function showNote(space, id) {
  for (const node of ['note-meta', 'note-links', 'note-related', 'note-actions']) $(node).replaceChildren();
  $('note-title').textContent = '…';
  $('note-content').textContent = '';
  $('back').focus();
  state.related = null;
  // The hit it was opened from (keys.js), taken once: a later visit to the note opens at its top.
  const from = state.opened?.space === space && state.opened?.id === id ? state.opened : null;
  state.opened = null;
  latest('note', notePath(space, id), { render: 1, q: from?.q }).then((body) => {
    state.note = { space, body, openUrl: from?.openUrl ?? body.open_url ?? null, anchor: from?.anchor ?? null };
    renderNote(true);
    loadRelated();
  }).catch(reportUnlessAborted($('note-title')));
}

// `first`: scrolled to the hit's section; drawn again (the language switched), the reader's place is kept.
export function renderNote(first = false) {
  const { space, body, openUrl, anchor } = state.note;
  document.title = `${body.note.title} — notarium`;
  renderInto('note', space, body);
  $('note-actions').replaceChildren(...actionButtons(space, body.note, openUrl, true));
  showRelated();
  showSection($('note-content'), anchor, first ? window : null);
}

// Fills #{prefix}-title, -content, -meta and -links with the note.
export function renderInto(prefix, space, { note, aliases, links, backlinks, dangling, html }) {
  $(`${prefix}-title`).textContent = note.title;
  const fromFile = (which) => (note.dates?.[which] === 'file' ? ` — ${t('fileDate')}` : '');
  const rows = [[t('path'), note.path], [t('folder'), note.folder],
    [t('tags'), note.tags.map((tag) => `#${tag}`).join(' ')], [t('aliases'), aliases.join(', ')], [t('created'), date(note.created) + fromFile('created')],
    [t('updated'), date(note.updated) + fromFile('updated')],
    // The other frontmatter fields, as properties, under their own names (never looked up in the
    // strings table: a field called `reason` or `results` named a function there).
    ...Object.entries(note.fields ?? {}).filter(([key]) => !SHOWN_FIELDS.has(key))
      .map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)])];
  $(`${prefix}-meta`).replaceChildren(...rows.filter(([, value]) => value)
    .flatMap(([label, value]) => [el('dt', {}, label), el('dd', {}, value)]));
  const linkTo = (linked) => el('a', { href: noteHref(space, linked.id) }, linked.title);
  $(`${prefix}-links`).replaceChildren(...section('outgoing', links, linkTo), ...section('backlinks', backlinks, linkTo),
    ...section('dangling', dangling, (link) => el('span', { class: 'dangling' }, link.target)));
  // Rendered and sanitised by the service (api/preview.py: no script, handler
  // or javascript: link survives), and the page's policy runs no inline script.
  if (html == null) $(`${prefix}-content`).textContent = t('fileGone'); else $(`${prefix}-content`).innerHTML = html;
  // A body that opens with its title as an H1 (most notes): the title is not written twice.
  const first = $(`${prefix}-content`).firstElementChild;
  $(`${prefix}-title`).hidden = first?.tagName === 'H1' && first.textContent.trim() === note.title.trim();
  // A task's checkbox (disabled: the page never writes a note) is named by its task, for screen readers.
  for (const box of $(`${prefix}-content`).querySelectorAll('li > input[type="checkbox"]')) {
    box.setAttribute('aria-label', box.parentElement.textContent.trim().slice(0, 120));
  }
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

// The hit's section (the heading it sits under), marked and scrolled to the top of `scroller`
// (the window for the note view, the preview pane for the side preview; null: marked, not scrolled);
// else the first marked word.
export function showSection(content, anchor, scroller) {
  const heading = anchor && [...content.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .find((node) => node.textContent.trim() === anchor);
  if (heading) heading.classList.add('matched');
  if (!scroller) return;
  const target = heading ?? content.querySelector('mark.hit');
  if (!target) {
    if (scroller !== window) scroller.scrollTop = 0;
    return;
  }
  if (scroller === window) {
    target.scrollIntoView({ block: 'start' });
  } else {
    const top = target.getBoundingClientRect().top - scroller.getBoundingClientRect().top + scroller.scrollTop;
    scroller.scrollTop = Math.max(0, top - 8);
  }
}

// A footnote's links (#fn-md-1, #fnref-md-1: api/preview.py) go to their place in the note, not to
// the page's router, which reads the address's hash.
function followFootnotes(content) {
  content.addEventListener('click', (event) => {
    const link = event.target.closest('a[href^="#fn"]');
    if (!link) return;
    event.preventDefault();
    content.querySelector(`[id="${CSS.escape(link.getAttribute('href').slice(1))}"]`)?.scrollIntoView({ block: 'center' });
  });
}
followFootnotes($('note-content'));
followFootnotes($('preview-content'));
