import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { loadConfig } from '../config/index.js';
import { Policy } from '../guard/index.js';
import { renderAdmissionObjects, renderRbac, type WebhookEndpoint } from '../registration/index.js';
import { parseFlags, parsePort, UsageError } from './args.js';
import { DEFAULT_NAMESPACE, SPEC_GUARD } from '../names.js';

export const manifestsHelp = `Usage: spec-guard manifests --config FILE [flags]

Prints the admission objects that 'spec-guard serve' would register, as YAML, for
installs that apply them with GitOps: the MutatingWebhookConfiguration, the
ValidatingWebhookConfiguration and, unless the configuration sets admissionPolicy: false,
the ValidatingAdmissionPolicy and its binding.

Flags:
  --config FILE          configuration file (required)
  --namespace NS         spec-guard's namespace (default: spec-guard)
  --service-name NAME    Service in front of spec-guard (default: spec-guard)
  --service-port PORT    Service port (default: 443)
  --webhook-url URL      call a URL base instead of the Service (/mutate, /validate appended)
  --ca-bundle-file F     PEM CA bundle for clientConfig.caBundle (default: left empty for a CA injector)
  --self-user NAME       spec-guard's own username (default: system:serviceaccount:NS:NAME)
  --rbac                 print spec-guard's least-privilege RBAC for the configuration instead:
                         Roles in the guarded namespaces, its own admission objects by name
  --gitops               with --rbac: for 'serve --no-register' (read access to the admission
                         objects, no create or update)`;

export function manifests(argv: string[]): number {
  const flags = parseFlags(argv, {
    config: { type: 'string' },
    namespace: { type: 'string' },
    'service-name': { type: 'string' },
    'service-port': { type: 'string' },
    'webhook-url': { type: 'string' },
    'ca-bundle-file': { type: 'string' },
    'self-user': { type: 'string' },
    rbac: { type: 'boolean' },
    gitops: { type: 'boolean' },
  });
  if (flags.help) {
    console.log(manifestsHelp);
    return 0;
  }
  if (!flags.config) throw new UsageError('--config FILE is required');
  const namespace = flags.namespace ?? DEFAULT_NAMESPACE;
  const serviceName = flags['service-name'] ?? SPEC_GUARD;
  const policy = new Policy(loadConfig(flags.config), flags['self-user'] ?? `system:serviceaccount:${namespace}:${serviceName}`);
  const endpoint: WebhookEndpoint = flags['webhook-url']
    ? { url: flags['webhook-url'] }
    : { service: { name: serviceName, namespace, port: parsePort(flags['service-port'], '--service-port', 443) } };
  if (flags.gitops && !flags.rbac) throw new UsageError('--gitops goes with --rbac');
  if (flags.rbac) {
    const rbac = renderRbac(policy, { namespace, serviceAccount: serviceName, register: !flags.gitops });
    process.stdout.write(rbac.map((o) => stringify(o, { aliasDuplicateObjects: false })).join('---\n'));
    return 0;
  }
  const caBundle = flags['ca-bundle-file'] ? readFileSync(flags['ca-bundle-file'], 'utf8') : '';
  const objects = renderAdmissionObjects(policy, { endpoint, caBundle, excludedNamespaces: ['kube-system', namespace] });
  process.stdout.write(Object.values(objects).map((o) => stringify(o, { aliasDuplicateObjects: false })).join('---\n'));
  return 0;
}
