import { InitialSchema1767225600000 } from './1767225600000-initial-schema';

/** Every migration, oldest first. Hand-written; the schema is never synchronised from entities. */
export const MIGRATIONS = [InitialSchema1767225600000];
