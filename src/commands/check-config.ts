import { stringify } from 'yaml';
import { configJsonSchema, loadConfig } from '../config/index.js';
import { Policy } from '../guard/index.js';
import { KubeClient } from '../kube/index.js';
import { preflight, PreflightError } from '../preflight.js';
import { parseFlags, UsageError } from './args.js';
import { DEFAULT_NAMESPACE } from '../names.js';

export const checkConfigHelp = `Usage: spec-guard check-config --config FILE [--kubeconfig F | --in-cluster] [--namespace NS] [--no-register]
       spec-guard check-config --schema

Validates the configuration and prints the effective policy, defaults filled in.
Exit code 0 when valid, 2 with one line per problem when not.

With --kubeconfig (or --in-cluster: the pod's service account, as \`helm test\` runs it), also
runs the checks \`serve\` runs before it registers anything, as that user: every configured resource exists at its version, every verb spec-guard
needs is allowed (--no-register: the GitOps install, which registers nothing), the store is
writable. Exit code 1 with one line per missing thing.

--schema prints the configuration's JSON Schema (committed as config.schema.json).`;

export async function checkConfig(argv: string[]): Promise<number> {
  const flags = parseFlags(argv, { config: { type: 'string' }, kubeconfig: { type: 'string' }, namespace: { type: 'string' }, 'no-register': { type: 'boolean' }, 'in-cluster': { type: 'boolean' }, schema: { type: 'boolean' } });
  if (flags.help) {
    console.log(checkConfigHelp);
    return 0;
  }
  if (flags.schema) {
    process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    return 0;
  }
  if (!flags.config) throw new UsageError('--config FILE is required');
  const config = loadConfig(flags.config);
  process.stdout.write(`# ${flags.config}: valid\n${stringify(config)}`);
  if (flags.kubeconfig && flags['in-cluster']) throw new UsageError('--kubeconfig and --in-cluster exclude each other');
  if (!flags.kubeconfig && !flags['in-cluster']) return 0;
  const kube = await KubeClient.load(flags.kubeconfig);
  try {
    const review = await kube.request<{ status?: { userInfo?: { username?: string } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    await preflight(kube, new Policy(config, review.status?.userInfo?.username), { namespace: flags.namespace ?? DEFAULT_NAMESPACE, register: !flags['no-register'] });
    process.stdout.write(`# the cluster serves every configured resource and ${review.status?.userInfo?.username ?? 'this user'} may do all spec-guard needs\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof PreflightError)) throw err;
    console.error(`spec-guard check-config: ${err.message}`);
    return 1;
  } finally {
    kube.close();
  }
}
