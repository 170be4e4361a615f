/** Errors the data layer raises; `code` is stable like the domain's error codes. */
export class DalError extends Error {
  constructor(
    readonly code: 'turn_active' | 'not_found' | 'block_conflict' | 'api_key_taken',
    message: string,
  ) {
    super(message);
    this.name = 'DalError';
  }
}
