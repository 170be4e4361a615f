import { hasMessage, t } from './i18n';

/**
 * A turn's error as the portal records it (`code: details`, or a bare code) in words a person
 * understands, with the code kept for support.
 */
export function describeFailure(error: string | null): { reason: string; code: string | null } {
  if (!error) return { reason: t('error.unknown'), code: null };
  const code = /^([a-z][a-z0-9_]*)(?::|$)/.exec(error)?.[1] ?? null;
  const key = `error.${code}`;
  return { reason: code && hasMessage(key) ? t(key) : t('error.unknown'), code: code ?? error };
}
