import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { loadConfig } from '../config/index.js';
import { Policy } from '../guard/index.js';
import { renderAdmissionObjects, renderRbac, type WebhookEndpoint } from '../registration/index.js';
import { defineFlags, flag } from './flags.js';

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

const manifestsFlags = defineFlags(
  {
    config: flag.config,
    namespace: flag.namespace,
    'service-name': flag.serviceName,
    'service-port': flag.port(443),
    'webhook-url': flag.webhookUrl,
    'ca-bundle-file': flag.optionalText(),
    'self-user': flag.optionalText(),
    rbac: flag.switch(),
    gitops: flag.switch(),
  },
  (f, problem) => {
    if (f.gitops && !f.rbac) problem('gitops', 'goes with --rbac');
  },
);

export function manifests(argv: string[]): number {
  const flags = manifestsFlags(argv);
  if (flags === 'help') {
    console.log(manifestsHelp);
    return 0;
  }
  const { namespace, 'service-name': serviceName } = flags;
  const policy = new Policy(loadConfig(flags.config), flags['self-user'] ?? `system:serviceaccount:${namespace}:${serviceName}`);
  const endpoint: WebhookEndpoint = flags['webhook-url']
    ? { url: flags['webhook-url'] }
    : { service: { name: serviceName, namespace, port: flags['service-port'] } };
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
