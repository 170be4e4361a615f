/** The person's display settings, kept in the browser. */
const FORMATTED_KEY = 'portal.formattedReplies';
const listeners = new Set<(on: boolean) => void>();

/** Settled replies rendered from their Markdown (SPEC 9); plain text is the default. */
export function formattedReplies(): boolean {
  return localStorage.getItem(FORMATTED_KEY) === 'on';
}

export function setFormattedReplies(on: boolean): void {
  if (on) localStorage.setItem(FORMATTED_KEY, 'on');
  else localStorage.removeItem(FORMATTED_KEY);
  for (const listener of listeners) listener(on);
}

/** Calls `listener` on each change; returns the unsubscribe. */
export function onFormattedReplies(listener: (on: boolean) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
