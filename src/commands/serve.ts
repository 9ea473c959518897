import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/index.js';
import { z } from 'zod';
import { defineFlags, flag } from './flags.js';
import { DEFAULT_NAMESPACE } from '../names.js';
import { startRuntime, type RuntimeOptions } from '../runtime/index.js';

export const serveHelp = `Usage: spec-guard serve --config FILE [flags]

Serves the admission webhook on /mutate and /validate (HTTPS) and metrics on a plain
HTTP port. With a cluster it also registers its webhooks, keeps the canonical cache
from a watch and reverts drift; --standalone runs admission only.

Flags:
  --config FILE           configuration file (required)
  --port N                webhook HTTPS port (default 8443)
  --bind-address ADDR     address to listen on (default 0.0.0.0)
  --metrics-port N        plain-HTTP port for /metrics, /healthz, /readyz (default 8080)
  --tls-cert-file F       serving certificate (PEM), reloaded when it changes; with --tls-key-file.
                          Default: self-managed CA and certificate in Secrets, rotated automatically
  --tls-key-file F        serving key (PEM)
  --tls-ca-file F         CA bundle to register with the files above (default: caBundle is left
                          to a CA injector such as cert-manager's)
  --ca-propagation-seconds S  how long a new CA sits in the webhook configurations before
                          serving switches to it (default 20)
  --tls-san NAME          extra host name for a generated certificate (repeatable)
  --client-ca-from-cluster  admit only reviews with the apiserver's front-proxy client certificate
                          (set in its admission kubeconfig): the CA and names it publishes in
                          kube-system/extension-apiserver-authentication, kept current. The shipped
                          installs set it. Health endpoints stay open to probes without a certificate.
  --client-ca-file F      likewise, with any client certificate this CA (PEM) signed
  --stamp-key-file F      HMAC key for stamps (at least 32 bytes). Default: Secret, or generated
  --standalone            no cluster: admission only, in-memory cache
  --kubeconfig F          kubeconfig (default: in-cluster, $KUBECONFIG or ~/.kube/config)
  --namespace NS          where spec-guard keeps its Secrets and Lease (default: its pod's, else spec-guard)
  --service-name NAME     Service in front of spec-guard, for registration (default: spec-guard)
  --webhook-url URL       register this URL base instead of the Service (/mutate, /validate appended)
  --no-register           leave the webhook configurations to someone else
  --lease-duration S      leader lease, seconds; a new leader takes over within it (default 15)
  --identity NAME         leader election identity (default: the pod name, else host-pid-random)
  --log-level LEVEL       debug, info, warn or error (default: from the configuration)`;

function podNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

const serveFlags = defineFlags(
  {
    config: flag.config,
    port: flag.port(8443),
    'bind-address': { type: 'string', schema: z.string().default('0.0.0.0') },
    'metrics-port': flag.port(8080),
    'tls-cert-file': flag.optionalText(),
    'tls-key-file': flag.optionalText(),
    'tls-ca-file': flag.optionalText(),
    'ca-propagation-seconds': flag.seconds(20, 0),
    'tls-san': flag.repeatable(),
    'client-ca-file': flag.optionalText(),
    'client-ca-from-cluster': flag.switch(),
    'stamp-key-file': flag.optionalText(),
    standalone: flag.switch(),
    kubeconfig: flag.kubeconfig,
    namespace: flag.optionalText(),
    'service-name': flag.serviceName,
    'webhook-url': flag.webhookUrl,
    'no-register': flag.switch(),
    'lease-duration': flag.seconds(15, 3, true),
    identity: flag.optionalText(),
    'log-level': { type: 'string', schema: z.enum(['debug', 'info', 'warn', 'error'], { error: 'expected debug, info, warn or error' }).optional() },
  },
  (f, problem) => {
    if (Boolean(f['tls-cert-file']) !== Boolean(f['tls-key-file'])) problem('tls-cert-file', 'goes with --tls-key-file');
    if (f['tls-ca-file'] && !f['tls-cert-file']) problem('tls-ca-file', 'goes with --tls-cert-file and --tls-key-file');
    if (f['client-ca-file'] && f['client-ca-from-cluster']) problem('client-ca-file', 'and --client-ca-from-cluster exclude each other: pick one source of the client CA');
    if (f.standalone && f['client-ca-from-cluster']) problem('client-ca-from-cluster', 'needs a cluster: with --standalone use --client-ca-file');
  },
);

export async function serve(argv: string[]): Promise<number> {
  const f = serveFlags(argv);
  if (f === 'help') {
    console.log(serveHelp);
    return 0;
  }
  const config = loadConfig(f.config);
  const options: RuntimeOptions = {
    config,
    configFile: f.config,
    port: f.port,
    bindAddress: f['bind-address'],
    metricsPort: f['metrics-port'],
    tlsFiles: f['tls-cert-file'] ? { cert: f['tls-cert-file'], key: f['tls-key-file']!, ca: f['tls-ca-file'] } : undefined,
    caPropagationMs: f['ca-propagation-seconds'] * 1000,
    tlsSans: f['tls-san'],
    clientCaFile: f['client-ca-file'],
    clientCaFromCluster: f['client-ca-from-cluster'],
    stampKeyFile: f['stamp-key-file'],
    standalone: f.standalone,
    kubeconfig: f.kubeconfig,
    namespace: f.namespace ?? podNamespace() ?? DEFAULT_NAMESPACE,
    serviceName: f['service-name'],
    webhookUrl: f['webhook-url'],
    register: !f['no-register'],
    logLevel: f['log-level'] ?? config.logLevel,
    leaseDurationSeconds: f['lease-duration'],
    identity: f.identity ?? process.env.POD_NAME,
  };
  const runtime = await startRuntime(options);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      void runtime.shutdown(signal).then(() => process.exit(0));
    });
  }
  return -1;
}
