import { Injectable, type PipeTransform } from '@nestjs/common';
import type { z } from 'zod';
import { DomainError } from '@portal/domain';

/** `a.b[1].c` for a zod issue path. */
function fieldName(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (name, key) =>
      typeof key === 'number' ? `${name}[${key}]` : name ? `${name}.${String(key)}` : String(key),
    '',
  );
}

/** Parses `value` or throws `validation_failed` naming the first bad field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what = 'body'): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const base = fieldName(issue.path);
  const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => (base ? `${base}.${k}` : k)) : [];
  const field = keys.length ? keys.join(', ') : base || what;
  throw new DomainError('validation_failed', `${field}: ${issue.message}`, { field });
}

/** `@Body(new ZodBody(schema))`: the body parsed, or 400 `validation_failed` naming the field. */
@Injectable()
export class ZodBody<S extends z.ZodType> implements PipeTransform<unknown, z.output<S>> {
  constructor(private readonly schema: S) {}

  transform(value: unknown): z.output<S> {
    return parseInput(this.schema, value ?? {});
  }
}
