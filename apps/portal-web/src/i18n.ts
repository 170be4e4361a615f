import { en, type MessageKey } from './locales/en';

/** The interface's languages: chosen from the browser's, changed with a switch, kept in the browser. */
export const LANGUAGES = { en: 'English', vi: 'Tiếng Việt' } as const;
export type Language = keyof typeof LANGUAGES;
type Catalogue = Record<MessageKey, string>;
/** English is in the bundle; another language's catalogue loads before the first drawing. */
const CATALOGUES: Partial<Record<Language, Catalogue>> = { en };
const LOADERS: Record<Exclude<Language, 'en'>, () => Promise<Catalogue>> = {
  vi: async () => (await import('./locales/vi')).vi,
};
const STORAGE_KEY = 'portal.language';

function isLanguage(value: string | null): value is Language {
  return value !== null && Object.hasOwn(LANGUAGES, value);
}

function chosen(): Language {
  const stored = localStorage.getItem(STORAGE_KEY);
  if (isLanguage(stored)) return stored;
  for (const tag of navigator.languages ?? [navigator.language]) {
    const base = tag.toLowerCase().split('-')[0];
    if (isLanguage(base)) return base;
  }
  return 'en';
}

let current: Language = chosen();
document.documentElement.lang = current;

export function language(): Language {
  return current;
}

/** Loads the chosen language's catalogue (English, should it fail to load). */
export async function loadLanguage(): Promise<void> {
  if (current === 'en' || CATALOGUES[current]) return;
  try {
    CATALOGUES[current] = await LOADERS[current]();
  } catch {
    current = 'en';
    document.documentElement.lang = current;
  }
}

/** Keeps the choice; the caller redraws. */
export function setLanguage(next: Language): void {
  current = next;
  document.documentElement.lang = next;
  localStorage.setItem(STORAGE_KEY, next);
}

export function t(key: MessageKey, params: Record<string, string | number> = {}): string {
  return (CATALOGUES[current] ?? en)[key].replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(params, name) ? String(params[name]) : whole,
  );
}

export function hasMessage(key: string): key is MessageKey {
  return Object.hasOwn(en, key);
}

/** A number as the interface's language writes it. */
export function formatNumber(value: number, options?: Intl.NumberFormatOptions): string {
  return new Intl.NumberFormat(current, options).format(value);
}

export type { MessageKey };
