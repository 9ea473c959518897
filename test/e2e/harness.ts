import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { CA_BUNDLE_KEY, CA_SECRET } from '../../src/certs/index.js';
import { KubeClient, KubeError } from '../../src/kube/index.js';
import { runCli, startCli, type Daemon } from '../helpers/cli.js';
import { e2eState as state } from './state.js';
import { waitFor } from '../helpers/wait-for.js';

export { state, waitFor };

export const AGENT = ['--as=system:serviceaccount:argocd:argocd-agent-agent'];
export const CONTROLLER = ['--as=system:serviceaccount:argocd:argocd-application-controller'];
export const ALICE = ['--as=alice', '--as-group=developers'];
export const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

export interface KubectlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Real kubectl against the test apiserver, as the admin unless `identity` impersonates someone. */
export function kubectl(identity: string[], args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): KubectlResult {
  const result = spawnSync('kubectl', [...identity, ...args], {
    input: options.input,
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: state().adminKubeconfig, ...options.env },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** kubectl that must succeed; returns stdout. */
export function kubectlOk(identity: string[], args: string[], options?: { input?: string; env?: NodeJS.ProcessEnv }): string {
  const r = kubectl(identity, args, options);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

export function getJson<T = Record<string, any>>(args: string[]): T {
  return JSON.parse(kubectlOk([], ['get', ...args, '-o', 'json'])) as T;
}

/**
 * Where the kernel takes the local ports of outgoing connections from (Linux: 32768–60999
 * unless configured otherwise).
 */
function ephemeralPortsStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

/** Ports handed to child processes are drawn from just below the ephemeral range. */
const PORT_POOL = { to: ephemeralPortsStart(), size: 2_700 };
/** Ports freePort gave out (a few dozen per run, of 2,700). */
const handedOut = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A port nothing listens on, for a child process to bind. Not one `listen(0)` gives: that is
 * an ephemeral port, which any outgoing connection (the apiserver's to etcd, a kubectl call)
 * may take as its local port before the child binds it (EADDRINUSE in a CI run). Ports below
 * the ephemeral range are only ever taken by a listen; the fixed ports of the test control
 * planes are lower still.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = PORT_POOL.to - 1 - Math.floor(Math.random() * PORT_POOL.size);
    // Never the same port twice: a child's webhook and metrics ports are picked before it binds
    // either, so a repeat passes canListen and the child fails with EADDRINUSE.
    if (handedOut.has(port)) continue;
    if (await canListen(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${PORT_POOL.to - PORT_POOL.size}–${PORT_POOL.to - 1}`);
}

export interface SpecGuard extends Daemon {
  webhookPort: number;
  metricsPort: number;
  metrics(): Promise<string>;
}

/**
 * Set by scripts/e2e-kind.sh: spec-guard runs in the cluster from its image and
 * manifests/, and the suites that need to control its process are skipped.
 */
export const inCluster = Boolean(process.env.SPEC_GUARD_E2E_IN_CLUSTER);

/** The in-cluster spec-guard (kind), once it is rolled out and registered. */
async function inClusterSpecGuard(): Promise<SpecGuard> {
  kubectlOk([], ['rollout', 'status', '-n', 'spec-guard', 'deployment/spec-guard', '--timeout=120s']);
  await waitFor('spec-guard webhook configurations', () => kubectl([], ['get', 'mutatingwebhookconfiguration,validatingwebhookconfiguration', 'spec-guard']).code === 0, 30_000, 250);
  const logs = () => kubectl([], ['logs', '-n', 'spec-guard', '-l', 'app.kubernetes.io/name=spec-guard', '--tail=-1', '--prefix']).stdout;
  return {
    child: undefined as never,
    exited: new Promise<number | null>(() => {}),
    logs,
    waitForLog: (pattern, timeoutMs = 30_000) =>
      waitFor(`a log line matching ${pattern}`, () => logs().split('\n').find((l) => pattern.test(l)), timeoutMs, 500),
    stop: async () => 0,
    webhookPort: 443,
    metricsPort: 8080,
    metrics: async () => kubectlOk([], ['get', '--raw', '/api/v1/namespaces/spec-guard/services/spec-guard:metrics/proxy/metrics']),
  };
}

/** `spec-guard serve` as a child process, with its own identity, against the test apiserver. */
export async function startSpecGuard(config: string, extra: string[] = []): Promise<SpecGuard> {
  if (inCluster) return inClusterSpecGuard();
  const webhookPort = await freePort();
  const metricsPort = await freePort();
  const daemon = startCli([
    'serve',
    '--config',
    config,
    '--kubeconfig',
    state().specGuardKubeconfig,
    '--namespace',
    'spec-guard',
    '--bind-address',
    '127.0.0.1',
    '--port',
    String(webhookPort),
    '--metrics-port',
    String(metricsPort),
    '--webhook-url',
    `https://127.0.0.1:${webhookPort}`,
    ...extra,
  ]);
  await daemon.waitForLog(/spec-guard ready/);
  return {
    ...daemon,
    webhookPort,
    metricsPort,
    metrics: async () => (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
  };
}

/** A killed leader's Lease runs until it expires; the tests expire it at once. */
export const expireLease = () => kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);

/**
 * Another replica holds the Lease for ten minutes (a leader change). Written over whatever is
 * there in one apply: a delete then a create raced a running leader, which recreated the Lease
 * in between (AlreadyExists; one CI run in about ten).
 */
export function leaseHeldByAnother(): void {
  const renewTime = new Date().toISOString().replace(/\.\d+Z$/, '.000000Z');
  const lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'spec-guard', namespace: 'spec-guard' }, spec: { holderIdentity: 'other-replica', leaseDurationSeconds: 600, acquireTime: renewTime, renewTime } };
  kubectlOk([], ['apply', '--server-side', '--force-conflicts', '--field-manager', 'other-replica', '-f', '-'], { input: JSON.stringify(lease) });
}

/** Is spec-guard's admission object of this kind registered? */
export const admissionObjectExists = (kind: string) => kubectl([], ['get', kind, 'spec-guard']).code === 0;

/** A config file equal to the e2e one, with the admission policy switched off: webhooks only. */
export function webhooksOnlyConfig(): string {
  const file = join(tmpdir(), `spec-guard-webhooks-only-${process.pid}.yaml`);
  writeFileSync(file, `${readFileSync(fixture('config.yaml'), 'utf8')}\nadmissionPolicy: false\n`);
  return file;
}

export const POLICY_DENIED = "ValidatingAdmissionPolicy 'spec-guard' with binding 'spec-guard' denied request";

/**
 * Resolves once spec-guard's admission policy is in force: the apiserver loads a new policy
 * about a second after it is written. Probes with alice's dry-run create in argocd.
 */
export async function policyInForce(): Promise<void> {
  const probe = () => kubectl(ALICE, ['create', '--dry-run=server', '-f', '-'], { input: application('policy-probe', 'argocd') }).stderr.includes(POLICY_DENIED);
  await waitFor('the admission policy to be in force', probe, 10_000, 100);
}

/** Removes spec-guard's admission objects (webhooks, policy, binding), so nothing blocks: admission is bypassed. */
export function unregister(): void {
  if (inCluster) return; // the in-cluster spec-guard owns them
  const deleted = kubectl([], ['delete', 'mutatingwebhookconfiguration,validatingwebhookconfiguration,validatingadmissionpolicy,validatingadmissionpolicybinding', 'spec-guard', '--ignore-not-found']);
  // The apiserver drops a deleted policy at its next refresh, about a second later.
  if (deleted.stdout.includes('validatingadmissionpolicy')) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2000);
}

export function application(name: string, namespace: string, spec: Record<string, unknown> = {}): string {
  return JSON.stringify({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace },
    spec: {
      project: 'default',
      source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook' },
      destination: { server: 'https://kubernetes.default.svc', namespace: 'guestbook' },
      ...spec,
    },
  });
}

/** Creates (or updates) an Application as the agent, through kubectl apply with its field manager. */
export function agentApply(name: string, namespace: string, spec: Record<string, unknown> = {}): void {
  kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '--force-conflicts', '-f', '-'], { input: application(name, namespace, spec) });
}

export const targetRevision = (name: string, namespace: string): string =>
  getJson(['application', '-n', namespace, name]).spec.source.targetRevision as string;

let adminClient: KubeClient | undefined;
/** A REST client as the admin, for fast polling (kubectl takes ~100 ms per call). */
export async function admin(): Promise<KubeClient> {
  adminClient ??= await KubeClient.load(state().adminKubeconfig);
  return adminClient;
}

export async function readApplication(namespace: string, name: string): Promise<Record<string, any> | undefined> {
  try {
    return await (await admin()).request<Record<string, any>>('GET', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/applications/${name}`);
  } catch (err) {
    if (err instanceof KubeError && err.status === 404) return undefined;
    throw err;
  }
}

/** Polls until the Application's targetRevision is `expected`; returns how long that took. */
export async function waitForRevision(namespace: string, name: string, expected: string, timeoutMs = 5000): Promise<number> {
  const started = Date.now();
  await waitFor(`${namespace}/${name} targetRevision ${expected}`, async () => (await readApplication(namespace, name))?.spec?.source?.targetRevision === expected, timeoutMs, 20);
  return Date.now() - started;
}

export function eventsFor(namespace: string, name: string, reason: string): Array<Record<string, any>> {
  return getJson<{ items: Array<Record<string, any>> }>(['events', '-n', namespace, '--field-selector', `involvedObject.name=${name},reason=${reason}`]).items;
}

/** The admission object kinds of each layer (see src/sync/attribution.ts). */
export const LAYER_KINDS = {
  stamp: ['MutatingWebhookConfiguration'],
  guard: ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'],
  validating: ['ValidatingWebhookConfiguration'],
} as const;

/**
 * Registers spec-guard's admission objects of `kinds` (all by default) the GitOps way, from
 * `spec-guard manifests`, pointing at this replica: what a `--no-register` install does.
 */
export function installLayers(config: string, sg: SpecGuard, kinds: readonly string[] = [...LAYER_KINDS.stamp, ...LAYER_KINDS.guard, ...LAYER_KINDS.validating], selfUser = 'system:serviceaccount:spec-guard:spec-guard'): void {
  const ca = Buffer.from(getJson(['secret', '-n', 'spec-guard', CA_SECRET]).data[CA_BUNDLE_KEY], 'base64');
  const caFile = join(tmpdir(), `spec-guard-e2e-ca-${process.pid}.pem`);
  writeFileSync(caFile, ca);
  const manifests = runCli(['manifests', '--config', config, '--webhook-url', `https://127.0.0.1:${sg.webhookPort}`, '--ca-bundle-file', caFile, '--self-user', selfUser]);
  if (manifests.code !== 0) throw new Error(`spec-guard manifests failed: ${manifests.stderr}`);
  const docs = parseAllDocuments(manifests.stdout).map((d) => d.toJS() as { kind: string }).filter((d) => d && kinds.includes(d.kind));
  kubectlOk([], ['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: docs.map((d) => JSON.stringify(d)).join('\n') });
}

/** Waits until spec-guard reports the layer in force without a gap (its continuity record). */
export async function layerIntact(sg: SpecGuard, layer: 'guard' | 'stamp' | 'tombstone', timeoutMs = 15_000): Promise<void> {
  await waitFor(`the ${layer} layer in force`, async () => new RegExp(`spec_guard_admission_layer_intact\\{layer="${layer}"\\} 1`).test(await sg.metrics()), timeoutMs, 250);
}

/**
 * Writes as the real argocd-agent does (measured against upstream): creates with field
 * manager `foo` and the principal's managedFields copied onto the copy; updates as
 * `argocd-agent` with a JSON patch that replaces the annotations, labels and finalizers with
 * the principal's (so the stamp is stripped each time) and the spec; deletes as itself.
 */
export const realAgent = {
  user: AGENT[0]!.replace('--as=', ''),
  /** managedFields as the principal's copy carries them: kubectl on the principal, then argocd-server. */
  principalManagedFields: [
    { manager: 'kubectl-client-side-apply', operation: 'Update', apiVersion: 'argoproj.io/v1alpha1', time: '2026-11-30T09:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {} } }, 'f:spec': { '.': {}, 'f:destination': {}, 'f:project': {}, 'f:source': {} } } },
    { manager: 'argocd-server', operation: 'Update', apiVersion: 'argoproj.io/v1alpha1', time: '2026-11-30T09:05:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:status': {} } },
  ],
  async create(name: string, namespace: string, spec: Record<string, unknown> = {}): Promise<Record<string, any>> {
    const body = JSON.parse(application(name, namespace, spec));
    body.metadata.managedFields = realAgent.principalManagedFields;
    body.metadata.annotations = { 'argocd.argoproj.io/refresh': 'normal' };
    return (await admin()).request('POST', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/applications`, {
      body,
      query: { fieldManager: 'foo' },
      headers: { 'Impersonate-User': realAgent.user },
    });
  },
  async update(name: string, namespace: string, spec: Record<string, unknown>): Promise<Record<string, any>> {
    const full = JSON.parse(application(name, namespace, spec)).spec;
    return (await admin()).request('PATCH', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/applications/${name}`, {
      body: [
        { op: 'replace', path: '/spec', value: full },
        { op: 'add', path: '/metadata/annotations', value: { 'argocd.argoproj.io/refresh': 'normal' } },
        { op: 'add', path: '/metadata/labels', value: {} },
        { op: 'add', path: '/metadata/finalizers', value: [] },
      ],
      contentType: 'application/json-patch+json',
      query: { fieldManager: 'argocd-agent' },
      headers: { 'Impersonate-User': realAgent.user },
    });
  },
  async delete(name: string, namespace: string): Promise<void> {
    await (await admin()).request('DELETE', `/apis/argoproj.io/v1alpha1/namespaces/${namespace}/applications/${name}`, { headers: { 'Impersonate-User': realAgent.user } });
  },
};
