import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { Informer, Resources, type KubeClient } from '../kube/index.js';
import type { Logger } from '../log/index.js';
import type { Component } from './lifecycle.js';
import type { ClientAuthentication } from '../webhook/index.js';

/**
 * Where the apiserver publishes the CA of its front-proxy client certificate and the names
 * that certificate may carry (aggregated API servers read the same to know the apiserver).
 * The shipped installs give the apiserver that certificate for webhooks too, and read it here.
 */
const PUBLISHED = { namespace: 'kube-system', name: 'extension-apiserver-authentication' };
const PUBLISHED_PATH = `/api/v1/namespaces/${PUBLISHED.namespace}/configmaps`;
const CA_KEY = 'requestheader-client-ca-file';
const NAMES_KEY = 'requestheader-allowed-names';

const publishedSchema = z.object({
  data: z.object({
    [CA_KEY]: z.string().includes('BEGIN CERTIFICATE', { message: `${CA_KEY} holds no PEM certificate` }),
    [NAMES_KEY]: z
      .string()
      .optional()
      .transform((text, ctx) => {
        try {
          return z.array(z.string()).parse(JSON.parse(text || '[]'));
        } catch {
          ctx.addIssue({ code: 'custom', message: `${NAMES_KEY} is not a JSON list of names` });
          return z.NEVER;
        }
      }),
  }),
});

/** The client authentication a CA file gives: any certificate the CA signed. */
export async function clientAuthFromFile(file: string): Promise<ClientAuthentication> {
  const ca = await readFile(file, 'utf8').catch((err: Error) => {
    throw new Error(`--client-ca-file: cannot read ${file}: ${err.message}`);
  });
  return { ca, allowedNames: [] };
}

type Published = z.infer<typeof publishedSchema>;

const fromPublished = (cm: Published): ClientAuthentication => ({ ca: cm.data[CA_KEY], allowedNames: cm.data[NAMES_KEY] });

/**
 * The client authentication the apiserver publishes, kept current by a watch on that one
 * ConfigMap (`onChange` hears a rotated CA). Missing or malformed at start: an error that
 * says what to set, because serving without it would answer any pod that reaches the port.
 */
export async function clientAuthFromCluster(kube: KubeClient, logger: Logger, onChange: (auth: ClientAuthentication) => void): Promise<{ auth: () => ClientAuthentication; component: Component }> {
  const where = `${PUBLISHED.namespace}/${PUBLISHED.name}`;
  let current: ClientAuthentication | undefined;
  const accept = (object: unknown, atStart: boolean) => {
    const parsed = publishedSchema.safeParse(object);
    if (!parsed.success) {
      const why = `--client-ca-from-cluster: ${where} has no usable front-proxy CA (${parsed.error.issues.map((i) => i.message).join('; ')}): ` +
        'start the apiserver with --requestheader-client-ca-file and give it that client certificate for webhooks (docs/install.md)';
      if (atStart) throw new Error(why);
      logger.error(`${why}; keeping the CA read before`);
      return;
    }
    const next = fromPublished(parsed.data);
    if (current && next.ca === current.ca && next.allowedNames.join() === current.allowedNames.join()) return;
    current = next;
    if (!atStart) {
      logger.info('the apiserver’s client CA changed: reviews are checked against the new one', { source: where, allowedNames: next.allowedNames });
      onChange(next);
    }
  };
  // Read once first, so that a missing grant or ConfigMap fails the start with its reason.
  const first = await Resources.of(kube, '', 'v1', 'configmaps', PUBLISHED.namespace).get(PUBLISHED.name).catch((err: Error) => {
    throw new Error(`--client-ca-from-cluster: cannot read ${where} (${err.message}); the RoleBinding kube-system/spec-guard-client-ca-reader grants it`, { cause: err });
  });
  accept(first, true);
  const informer = new Informer<Record<string, unknown> & { metadata?: { name?: string } }>(
    kube,
    { path: PUBLISHED_PATH, fieldSelector: `metadata.name=${PUBLISHED.name}` },
    // A deleted ConfigMap keeps the CA read before (the apiserver publishes it again).
    (event) => event.type !== 'DELETED' && accept(event.object, false),
  );
  await informer.start();
  return { auth: () => current!, component: { name: 'client CA', stop: () => informer.stop() } };
}
