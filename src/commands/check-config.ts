import { stringify } from 'yaml';
import { loadConfig } from '../config/index.js';
import { parseFlags, UsageError } from './args.js';

export const checkConfigHelp = `Usage: spec-guard check-config --config FILE

Validates the configuration and prints the effective policy, defaults filled in.
Exit code 0 when valid, 2 with one line per problem when not.`;

export function checkConfig(argv: string[]): number {
  const flags = parseFlags(argv, { config: { type: 'string' } });
  if (flags.help) {
    console.log(checkConfigHelp);
    return 0;
  }
  if (!flags.config) throw new UsageError('--config FILE is required');
  const config = loadConfig(flags.config);
  process.stdout.write(`# ${flags.config}: valid\n${stringify(config)}`);
  return 0;
}
