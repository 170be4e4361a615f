import type { ToolArgs } from './tool.types';

/** The model's argument text as an object; empty text is `{}`. */
export function parseToolArguments(raw: string): { args: ToolArgs } | { error: string } {
  if (raw.trim() === '') return { args: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    return {
      error: `The arguments were not valid JSON (${(err as Error).message}). Call the tool again with a JSON object.`,
    };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return {
      error: 'The arguments were not valid JSON: a JSON object was expected. Call the tool again with one.',
    };
  }
  return { args: parsed as ToolArgs };
}

export function stringArg(args: ToolArgs, name: string): string | null {
  const value = args[name];
  return typeof value === 'string' && value.trim() !== '' ? value : null;
}

/** A list of strings; [] when absent, null when present but not one. */
export function stringsArg(args: ToolArgs, name: string): string[] | null {
  const value = args[name];
  if (value === undefined) return [];
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : null;
}
