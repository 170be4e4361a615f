/**
 * What is being written, per conversation (or per agent for one not started yet), kept in the
 * browser so that switching conversation or reloading loses nothing: the text and the ids of what
 * was already uploaded (a picked file that has not uploaded cannot be kept by a page).
 */
export interface Draft {
  text: string;
  attachmentIds: string[];
}

const PREFIX = 'portal.draft.';

export function draftKey(target: { conversationId: string } | { agentId: string }): string {
  return 'conversationId' in target ? `c:${target.conversationId}` : `new:${target.agentId}`;
}

export function loadDraft(key: string): Draft {
  try {
    const draft = JSON.parse(localStorage.getItem(PREFIX + key) ?? 'null') as Partial<Draft> | null;
    return { text: draft?.text ?? '', attachmentIds: draft?.attachmentIds ?? [] };
  } catch {
    return { text: '', attachmentIds: [] };
  }
}

export function saveDraft(key: string, draft: Draft): void {
  try {
    if (!draft.text && draft.attachmentIds.length === 0) localStorage.removeItem(PREFIX + key);
    else localStorage.setItem(PREFIX + key, JSON.stringify(draft));
  } catch {
    // storage full or refused: the draft lives as long as the page
  }
}
