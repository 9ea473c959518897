import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Wrong command-line use: the CLI prints the message and the help, exit code 2. */
export class UsageError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses `argv` for one subcommand; unknown flags and stray arguments are usage errors. */
export function parseFlags<T extends Options>(argv: string[], options: T) {
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false })
      .values;
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export function parsePort(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`${flag}: expected a port number 0-65535, got "${value}"`);
  return port;
}
