import { stringify } from 'yaml';
import { configJsonSchema, loadConfig } from '../config/index.js';
import { Policy } from '../guard/index.js';
import { KubeClient } from '../kube/index.js';
import { preflight, PreflightError } from '../preflight.js';
import { whoAmI } from '../runtime/cluster.js';
import { defineFlags, flag } from './flags.js';

export const checkConfigHelp = `Usage: spec-guard check-config --config FILE [--kubeconfig F | --in-cluster] [--namespace NS] [--no-register]
       spec-guard check-config --schema

Validates the configuration and prints the effective policy, defaults filled in.
Exit code 0 when valid, 2 with one line per problem when not.

With --kubeconfig (or --in-cluster: the pod's service account, as \`helm test\` runs it), also
runs the checks \`serve\` runs before it registers anything, as that user: every configured resource exists at its version, every verb spec-guard
needs is allowed (--no-register: the GitOps install, which registers nothing), the store is
writable. Exit code 1 with one line per missing thing.

--schema prints the configuration's JSON Schema (committed as config.schema.json).`;

const checkConfigFlags = defineFlags(
  {
    // Not required with --schema, which reads no configuration.
    config: flag.optionalText(),
    kubeconfig: flag.kubeconfig,
    namespace: flag.namespace,
    'no-register': flag.switch(),
    'in-cluster': flag.switch(),
    schema: flag.switch(),
  },
  (f, problem) => {
    if (!f.schema && !f.config) problem('config', 'is required');
    if (f.kubeconfig && f['in-cluster']) problem('kubeconfig', 'excludes --in-cluster');
  },
);

export async function checkConfig(argv: string[]): Promise<number> {
  const flags = checkConfigFlags(argv);
  if (flags === 'help') {
    console.log(checkConfigHelp);
    return 0;
  }
  if (flags.schema) {
    process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
    return 0;
  }
  const config = loadConfig(flags.config!);
  process.stdout.write(`# ${flags.config}: valid\n${stringify(config)}`);
  if (!flags.kubeconfig && !flags['in-cluster']) return 0;
  const kube = await KubeClient.load(flags.kubeconfig);
  try {
    const self = await whoAmI(kube);
    await preflight(kube, new Policy(config, self), { namespace: flags.namespace, register: !flags['no-register'] });
    process.stdout.write(`# the cluster serves every configured resource and ${self ?? 'this user'} may do all spec-guard needs\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof PreflightError)) throw err;
    console.error(`spec-guard check-config: ${err.message}`);
    return 1;
  } finally {
    kube.close();
  }
}
