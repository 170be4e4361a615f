/** Reading the environment once at boot: a bad value stops the process with a message naming it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`Invalid configuration: ${variable} ${problem}`);
  }
}

/** The process environment as config readers take it (libs never read the live environment themselves). */
export type Env = Record<string, string | undefined>;
