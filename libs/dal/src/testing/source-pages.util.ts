import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A copy of the project's source page (shared/seeds), English or Vietnamese: real text with its
 * own headings, tables and tone marks, kept in the repository so a clone has it. Here rather than
 * in @portal/testing so that libs/dal's own suites can read it too, and a unit spec does not load
 * the whole of @portal/testing for a text file.
 */
export function sourcePage(language: 'en' | 'vi'): string {
  return readFileSync(path.join(__dirname, 'fixtures', `source-page.${language}.txt`), 'utf8');
}
