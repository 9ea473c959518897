import { parseArgs } from 'node:util';
import { z } from 'zod';
import { DEFAULT_NAMESPACE, SPEC_GUARD } from '../names.js';

/** Wrong command-line use: the CLI prints the message and the help, exit code 2. */
export class UsageError extends Error {}

/** One flag: how node:util reads it (a string or a switch, repeatable or not) and how zod checks it. */
interface FlagSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  schema: z.ZodType;
}

type Values<S extends Record<string, FlagSpec>> = z.infer<z.ZodObject<{ [K in keyof S]: S[K]['schema'] }>>;

/**
 * A subcommand's flags, declared once: node:util parses them (unknown flags and stray
 * arguments are usage errors), zod checks them and fills in the defaults; each problem names
 * its flag. `refine` checks flags against each other.
 */
export function defineFlags<S extends Record<string, FlagSpec>>(specs: S, refine?: (values: Values<S>, problem: (flag: keyof S & string, message: string) => void) => void) {
  const options = Object.fromEntries(Object.entries(specs).map(([name, { type, multiple }]) => [name, { type, multiple: multiple ?? false }]));
  const shape = Object.fromEntries(Object.entries(specs).map(([name, { schema }]) => [name, schema])) as { [K in keyof S]: S[K]['schema'] };
  const schema = z.object(shape).superRefine((values, ctx) =>
    refine?.(values as Values<S>, (flag, message) => ctx.addIssue({ code: 'custom', path: [flag], message })),
  );
  /** The checked flags, or 'help' when --help (-h) was asked for. */
  return (argv: string[]): Values<S> | 'help' => {
    let values: Record<string, unknown>;
    try {
      values = parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false }).values;
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    if (values.help) return 'help';
    const result = schema.safeParse(values);
    if (!result.success) throw new UsageError(result.error.issues.map((i) => `--${String(i.path[0] ?? '')}: ${i.message}`).join('\n'));
    return result.data as Values<S>;
  };
}

const text = <T extends z.ZodType>(schema: T) => ({ type: 'string' as const, schema });
const seconds = (min: number, whole: boolean) =>
  z
    .string()
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n >= min && (!whole || Number.isInteger(n)), whole ? `expected whole seconds, at least ${min}` : `expected a number of seconds, ${min} or more`);

/** The flags several subcommands share, with the same defaults everywhere. */
export const flag = {
  config: text(z.string({ error: 'is required' }).min(1, 'is required')),
  kubeconfig: text(z.string().optional()),
  /** spec-guard's namespace; `serve` falls back to its pod's before the default. */
  namespace: text(z.string().default(DEFAULT_NAMESPACE)),
  serviceName: text(z.string().default(SPEC_GUARD)),
  webhookUrl: text(
    z
      .url({ error: 'not a URL' })
      .refine((u) => u.startsWith('https://'), 'must be an https:// URL (the apiserver calls webhooks over TLS)')
      .optional(),
  ),
  port: (fallback: number) =>
    text(
      z
        .string()
        .regex(/^\d{1,5}$/, 'expected a port number 0-65535')
        .transform(Number)
        .refine((p) => p <= 65535, 'expected a port number 0-65535')
        .default(fallback),
    ),
  seconds: (fallback: number, min: number, whole = false) => text(seconds(min, whole).default(fallback)),
  optionalText: () => text(z.string().optional()),
  repeatable: () => ({ type: 'string' as const, multiple: true, schema: z.array(z.string()).default([]) }),
  switch: () => ({ type: 'boolean' as const, schema: z.boolean().default(false) }),
};
