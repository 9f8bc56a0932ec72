// The status banner: "Building search index…" with progress, polled while the page is open.
// Each answer raises `notarium:status`; a change in a space's indexing `notarium:progress` (its name in
// `detail.space`: a partial answer is asked again); the end of a build `notarium:indexed`, for the views to ask again.

import { api } from './api.js';
import { $, number, state, t, timers } from './context.js';

const POLL_BUILDING_MS = 1000;
const POLL_IDLE_MS = 5000;

export async function pollStatus() {
  clearTimeout(timers.status);
  const round = (timers.round = (timers.round ?? 0) + 1);
  try {
    showStatus(await api('status'));
  } catch { /* a 401 shows the token form; anything else: the next poll tries again */ }
  if (round !== timers.round) return; // a newer poll (token saved, tab shown again) took over
  const delay = state.building ? POLL_BUILDING_MS : POLL_IDLE_MS;
  timers.status = setTimeout(pollStatus, document.hidden ? delay * 6 : delay);
}

export function showStatus(status) {
  const wasBuilding = state.building;
  state.status = status;
  state.building = Boolean(status.message);
  const parts = status.spaces.filter((space) => space.message).map(spaceProgress);
  const done = parts.reduce((sum, p) => sum + p.done, 0);
  const total = parts.reduce((sum, p) => sum + p.total, 0);
  $('banner').hidden = !state.building;
  $('banner-text').textContent = [t('building'), ...parts.map((p) => p.text)].join(' ');
  if (total) $('banner-progress').value = done / total; else $('banner-progress').removeAttribute('value');
  // A space that cannot open or whose indexing stopped (a folder the service may not read…): its
  // reason, as /status gives it, until it is fixed; the other spaces serve meanwhile.
  const problems = status.spaces.filter((space) => space.lexical.error)
    .map((space) => t('problem', space.space, space.lexical.error));
  // Folders of the spaces root that are not served, and why (not a valid space name, unreadable…).
  problems.push(...(status.ignored_folders ?? []).map((folder) => t('ignored', folder.path, folder.reason)));
  $('problems').hidden = !problems.length;
  $('problems').textContent = problems.join(' · ');
  document.dispatchEvent(new Event('notarium:status'));
  for (const space of status.spaces) {
    const seen = progressKey(space);
    if (seen !== lastSeen.get(space.space)) {
      lastSeen.set(space.space, seen);
      document.dispatchEvent(new CustomEvent('notarium:progress', { detail: { space: space.space } }));
    }
  }
  // What was shown while building may have been partial.
  if (wasBuilding && !state.building) document.dispatchEvent(new Event('notarium:indexed'));
}

// What a search's answer depends on: how many notes are indexed, and each channel's state.
const lastSeen = new Map();
const progressKey = (space) => JSON.stringify([space.lexical.indexed, space.lexical.state,
  ...Object.entries(space.channels ?? {}).map(([name, channel]) => [name, channel.state, channel.embedded ?? null])]);

function spaceProgress({ space, lexical, semantic }) {
  const counted = (done, total, unit) => ({
    done, total, text: t('progress', space, number(done), number(total), unit),
  });
  if (lexical.state === 'building') {
    return lexical.total ? counted(lexical.indexed, lexical.total, t('notes')) : { done: 0, total: 0, text: space };
  }
  if (semantic.state === 'building' && semantic.total) {
    return counted(semantic.embedded, semantic.total, t('fragments'));
  }
  return { done: 0, total: 0, text: `${space} (${t('modelLoading')})` };
}
