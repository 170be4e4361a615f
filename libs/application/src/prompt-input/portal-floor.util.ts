import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from '@portal/contracts';

/** Layer 1's first part when the bootstrap file names no `portalFloor` (API.md). */
export const DEFAULT_PORTAL_FLOOR = [
  "You are the assistant of this organisation's AI agent portal.",
  'Answer in the language the person writes in, plainly and to the point.',
  'Say so when you do not know something or cannot do it.',
].join(' ');

/**
 * The portal floor of PORTAL_BOOTSTRAP_FILE (JSON or YAML): its `portalFloor`, else the default.
 * An unreadable or malformed file throws a ConfigError naming the variable.
 */
export function readPortalFloor(bootstrapFile: string | null): string {
  if (!bootstrapFile) return DEFAULT_PORTAL_FLOOR;
  let doc: unknown;
  try {
    const content = readFileSync(bootstrapFile, 'utf8');
    doc = /^\s*[[{]/.test(content) ? JSON.parse(content) : parseYaml(content);
  } catch (err) {
    throw new ConfigError('PORTAL_BOOTSTRAP_FILE', `${bootstrapFile}: ${(err as Error).message}`);
  }
  const floor = (doc as { portalFloor?: unknown } | null)?.portalFloor;
  if (floor === undefined || floor === null) return DEFAULT_PORTAL_FLOOR;
  if (typeof floor !== 'string' || floor.trim() === '') {
    throw new ConfigError('PORTAL_BOOTSTRAP_FILE', `${bootstrapFile}: portalFloor must be non-empty text`);
  }
  return floor;
}
