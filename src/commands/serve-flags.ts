import { z } from 'zod';
import { DEFAULT_NAMESPACE, SPEC_GUARD } from '../names.js';
import { UsageError } from './args.js';

const port = (fallback: number) =>
  z
    .string()
    .regex(/^\d{1,5}$/, 'expected a port number 0-65535')
    .transform(Number)
    .refine((p) => p <= 65535, 'expected a port number 0-65535')
    .default(fallback);

const seconds = (min: number, whole: boolean) =>
  z
    .string()
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n >= min && (!whole || Number.isInteger(n)), whole ? `expected whole seconds, at least ${min}` : `expected a number of seconds, ${min} or more`);

/**
 * `serve`'s flags as parsed by node:util (strings and booleans), checked and given their
 * defaults in one place; each problem names its flag. The shared ones (--namespace,
 * --service-name) default to the names every subcommand uses.
 */
export const serveFlagsSchema = z
  .object({
    config: z.string({ error: 'is required' }).min(1, 'is required'),
    port: port(8443),
    'bind-address': z.string().default('0.0.0.0'),
    'metrics-port': port(8080),
    'tls-cert-file': z.string().optional(),
    'tls-key-file': z.string().optional(),
    'tls-ca-file': z.string().optional(),
    'ca-propagation-seconds': seconds(0, false).default(20),
    'tls-san': z.array(z.string()).default([]),
    'client-ca-file': z.string().optional(),
    'stamp-key-file': z.string().optional(),
    standalone: z.boolean().default(false),
    kubeconfig: z.string().optional(),
    namespace: z.string().optional(),
    'service-name': z.string().default(SPEC_GUARD),
    'webhook-url': z
      .url({ error: 'not a URL' })
      .refine((u) => u.startsWith('https://'), 'must be an https:// URL (the apiserver calls webhooks over TLS)')
      .optional(),
    'no-register': z.boolean().default(false),
    'lease-duration': seconds(3, true).default(15),
    identity: z.string().optional(),
    'log-level': z.enum(['debug', 'info', 'warn', 'error'], { error: 'expected debug, info, warn or error' }).optional(),
  })
  .superRefine((f, ctx) => {
    if (Boolean(f['tls-cert-file']) !== Boolean(f['tls-key-file'])) ctx.addIssue({ code: 'custom', path: ['tls-cert-file'], message: 'goes with --tls-key-file' });
    if (f['tls-ca-file'] && !f['tls-cert-file']) ctx.addIssue({ code: 'custom', path: ['tls-ca-file'], message: 'goes with --tls-cert-file and --tls-key-file' });
  });

export type ServeFlags = z.infer<typeof serveFlagsSchema>;

/** Checks `serve`'s flags; a problem is a UsageError naming the flag. */
export function parseServeFlags(values: Record<string, unknown>, podNamespace: () => string | undefined): ServeFlags & { namespace: string } {
  const result = serveFlagsSchema.safeParse(values);
  if (!result.success) {
    throw new UsageError(result.error.issues.map((i) => `--${String(i.path[0] ?? '')}: ${i.message}`).join('\n'));
  }
  return { ...result.data, namespace: result.data.namespace ?? podNamespace() ?? DEFAULT_NAMESPACE };
}
