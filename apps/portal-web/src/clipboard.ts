import { t } from './i18n';

/** Writes `text` to the clipboard and says so on the button (its `data-label`) for a moment. */
export async function copyText(text: string, button: HTMLElement): Promise<void> {
  const label = button.dataset.label!;
  try {
    await navigator.clipboard.writeText(text);
    button.dataset.label = t('block.copied');
    window.setTimeout(() => (button.dataset.label = label), 1500);
  } catch {
    // No clipboard (an insecure page, or refused): the text stays selectable.
  }
}
