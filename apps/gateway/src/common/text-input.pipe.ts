import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { DomainError } from '@portal/domain';

const LONE_SURROGATE = /\p{Cs}/u;

/** What is wrong with a string for storage, or null: U+0000, or a lone UTF-16 surrogate. */
function stringProblem(text: string): string | null {
  if (text.includes('\u0000')) return 'NUL characters (U+0000) are not accepted';
  if (LONE_SURROGATE.test(text)) return 'not well-formed Unicode (a lone surrogate)';
  return null;
}

/**
 * The first string in `value` (keys included) that cannot be stored, with where it is (`a.b[2]`).
 * Walks without recursion: bodies may nest deep.
 */
export function textInputProblem(value: unknown): { path: string; problem: string } | null {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      const problem = stringProblem(item);
      if (problem) return { path, problem };
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}[${i}]`]);
    } else if (item !== null && typeof item === 'object') {
      for (const [k, v] of Object.entries(item).reverse()) {
        const at = path ? `${path}.${k}` : k;
        const problem = stringProblem(k);
        if (problem) return { path: at, problem };
        stack.push([v, at]);
      }
    }
  }
  return null;
}

/**
 * Refuses text that Postgres cannot store anywhere in a route's body, path parameters or query
 * (400 `validation_failed`): U+0000 (no text column holds it) and lone surrogates (no jsonb
 * column holds them; message blocks are jsonb). Both answered 500 before (found by the request
 * fuzzer, apps/gateway/test/security).
 */
@Injectable()
export class TextInputPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'custom') return value;
    const found = textInputProblem(value);
    if (found) {
      const where =
        metadata.type === 'body'
          ? found.path || 'body'
          : [metadata.type, metadata.data ?? found.path].join(' ').trim();
      throw new DomainError('validation_failed', `${where}: ${found.problem}`, { field: where });
    }
    return value;
  }
}
