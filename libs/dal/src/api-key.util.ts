import { createHash } from 'node:crypto';

/** The only form in which an API key is stored or looked up. */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}
