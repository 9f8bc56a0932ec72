// What can be done with a note from a hit or a note view: open it in the editor or in the page,
// copy its [[wiki-link]] or its path. The same buttons in the side preview and the note view,
// the same keys on the selected hit (search.js): Enter, Ctrl/⌘+Enter, Alt+L, Alt+C.

import { $, el, noteHref, t, timers, wikiLink } from './context.js';

const TOAST_MS = 2500;

// Enter: the editor when the space has an `open_url` (docs/configuration.md), else the page's note view.
// Ctrl/⌘+Enter: the other one (the note view when the editor is the first; the note view again when there is no editor).
export const opensEditor = (hit, other = false) => Boolean(hit.open_url) && !other;

export function openNote(space, hit, other = false) {
  if (opensEditor(hit, other)) location.href = hit.open_url; else location.hash = noteHref(space, hit.id);
}

export async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // No clipboard API (a page served over plain HTTP to another machine is not a secure context):
    // the older copy command, from a field selected for the moment.
    const focused = document.activeElement; // given back: the copy's field takes the focus for a moment
    const field = el('textarea', { class: 'sr-only', 'aria-hidden': 'true' }, text);
    document.body.append(field);
    field.select();
    const done = document.execCommand('copy');
    field.remove();
    if (focused instanceof HTMLElement) focused.focus();
    if (!done) return toast(t('copyFailed'));
  }
  toast(t('copied', text));
}

export const copyLink = (note) => copy(wikiLink(note));
export const copyPath = (note) => copy(note.path);

// #copied is a live region outside the views, always rendered (a region shown at the moment it
// speaks is not announced by every screen reader): only its text changes, and it is empty when idle.
function toast(text) {
  $('copied').textContent = text;
  clearTimeout(timers.toast);
  timers.toast = setTimeout(() => { $('copied').textContent = ''; }, TOAST_MS);
}

// The buttons: open (editor and/or note view), copy the link, copy the path.
export function actionButtons(space, note, openUrl, inNoteView) {
  const buttons = [];
  if (openUrl) buttons.push(el('a', { class: 'action', href: openUrl }, t('openEditor')));
  if (!inNoteView) buttons.push(el('a', { class: 'action', href: noteHref(space, note.id) }, t('openNote')));
  const button = (label, run) => {
    const node = el('button', { type: 'button', class: 'quiet action' }, label);
    node.addEventListener('click', run);
    return node;
  };
  buttons.push(button(t('copyLink'), () => copyLink(note)), button(t('copyPath'), () => copyPath(note)));
  return buttons;
}
