import { readFileSync } from 'node:fs';
import { loadConfig } from '../config/index.js';
import { parseFlags } from './args.js';
import { parseServeFlags } from './serve-flags.js';
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
  --client-ca-file F      admit only reviews whose TLS client certificate this CA (PEM) signed: the
                          apiserver's, set in its admission kubeconfig (see the README). Health
                          endpoints stay open to probes without a certificate.
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

export async function serve(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, {
    config: { type: 'string' },
    port: { type: 'string' },
    'bind-address': { type: 'string' },
    'metrics-port': { type: 'string' },
    'tls-cert-file': { type: 'string' },
    'tls-key-file': { type: 'string' },
    'tls-ca-file': { type: 'string' },
    'ca-propagation-seconds': { type: 'string' },
    'tls-san': { type: 'string', multiple: true },
    'client-ca-file': { type: 'string' },
    'stamp-key-file': { type: 'string' },
    standalone: { type: 'boolean' },
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    'service-name': { type: 'string' },
    'webhook-url': { type: 'string' },
    'no-register': { type: 'boolean' },
    'lease-duration': { type: 'string' },
    identity: { type: 'string' },
    'log-level': { type: 'string' },
  });
  if (flags.help) {
    console.log(serveHelp);
    return 0;
  }
  const f = parseServeFlags(flags, podNamespace);
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
    stampKeyFile: f['stamp-key-file'],
    standalone: f.standalone,
    kubeconfig: f.kubeconfig,
    namespace: f.namespace,
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
