import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/config/index.js';
import { decide, GuardedView, Policy, STAMP_POINTER, Stamper, within, type Rule } from '../../src/guard/index.js';
import { KubeError, type AdmissionRequest, type KubeObject } from '../../src/kube/index.js';
import { runCli } from '../helpers/cli.js';
import { admin, fixture, inCluster, kubectl, policyInForce, unregister } from './harness.js';

// One rule model, two printers: the webhook's decision (JavaScript) and the admission policy
// (CEL, as the real apiserver evaluates it) must agree. Generated untrusted and trusted writes
// of guarded objects (writers × rules × old/new pairs across every door, the stamp, selection
// and harmless metadata) go to the apiserver as server-side dry-runs with only the policy
// registered, and to decide(); the only differences allowed are the two the model names:
// the policy leaves the consumer's normalized doors to the webhook, and compares exactly where
// the webhook normalizes.
jest.setTimeout(240_000);

const SELF = 'system:serviceaccount:spec-guard:spec-guard';
const WRITERS = {
  alice: { username: 'alice', groups: ['developers', 'system:authenticated'] },
  controller: { username: 'system:serviceaccount:argocd:argocd-application-controller', groups: ['system:serviceaccounts', 'system:authenticated'] },
  agent: { username: 'system:serviceaccount:argocd:argocd-agent-agent', groups: ['system:serviceaccounts', 'system:authenticated'] },
  // alice in the configuration's break-glass group: trusted, loudly.
  oncall: { username: 'alice', groups: ['spec-guard:break-glass', 'developers', 'system:authenticated'] },
} as const;
type Writer = keyof typeof WRITERS;
const CASES = 1500;

/** A small deterministic PRNG (mulberry32): the same cases every run, printed on failure. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Mutation = { name: string; apply: (o: any, n: number) => void };
const ann = (o: any) => (o.metadata.annotations ??= {});
const labels = (o: any) => (o.metadata.labels ??= {});

const appMutations: Mutation[] = [
  { name: 'spec.targetRevision', apply: (o, n) => void (o.spec.source.targetRevision = `r${n}`) },
  { name: 'spec.automated {}', apply: (o) => void ((o.spec.syncPolicy ??= {}).automated = {}) },
  { name: 'spec.project "" (normalizes)', apply: (o) => void (o.spec.project = '') },
  { name: 'spec.syncPolicy {} (normalizes)', apply: (o) => void (o.spec.syncPolicy = o.spec.syncPolicy ?? {}) },
  { name: 'spec.helm deep value', apply: (o, n) => void (o.spec.source.helm = { valuesObject: { a: { b: { c: n } } } }) },
  // A member every parsed object inherits the name of (constructor), added beside one there.
  { name: 'spec.helm value "constructor"', apply: (o, n) => void Object.assign(((o.spec.source.helm ??= {}).valuesObject ??= {}), { constructor: `c${n}` }) },
  { name: 'operation.sync.manifests', apply: (o, n) => void (o.operation = { sync: { manifests: [`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"m${n}"}}`] } }) },
  { name: 'operation automated', apply: (o, n) => void (o.operation = { initiatedBy: { automated: true }, sync: { revision: `a${n}` } }) },
  { name: 'operation removed', apply: (o) => void delete o.operation },
  { name: 'status.operationState', apply: (o, n) => void ((o.status ??= {}).operationState = { phase: 'Running', startedAt: '2026-12-04T10:00:00Z', operation: { sync: { revision: `s${n}` } } }) },
  { name: 'status.sync', apply: (o, n) => void ((o.status ??= {}).sync = { status: n % 2 ? 'Synced' : 'OutOfSync' }) },
  { name: 'finalizers removed', apply: (o) => void delete o.metadata.finalizers },
  { name: 'finalizer added', apply: (o) => void (o.metadata.finalizers = ['resources-finalizer.argocd.argoproj.io']) },
  { name: 'skip-reconcile', apply: (o) => void (ann(o)['argocd.argoproj.io/skip-reconcile'] = 'true') },
  { name: 'refresh annotation', apply: (o) => void (ann(o)['argocd.argoproj.io/refresh'] = 'hard') },
  { name: 'other annotation', apply: (o, n) => void (ann(o).note = `n${n}`) },
  { name: 'label', apply: (o, n) => void (labels(o).team = `t${n}`) },
  { name: 'stamp forged', apply: (o, n) => void (ann(o)['spec-guard.io/stamp'] = `v2.forged${n}`) },
];
const secretMutations: Mutation[] = [
  { name: 'data.url', apply: (o, n) => void (o.data.url = Buffer.from(`https://evil.example/${n}.git`).toString('base64')) },
  { name: 'selection label removed', apply: (o) => void delete labels(o)['argocd.argoproj.io/secret-type'] },
  { name: 'selection label added', apply: (o) => void (labels(o)['argocd.argoproj.io/secret-type'] = 'repository') },
  { name: 'other label', apply: (o, n) => void (labels(o).team = `t${n}`) },
  { name: 'annotation', apply: (o, n) => void (ann(o).note = `n${n}`) },
];

const app = (ns: string, name: string, extra: object = {}) => ({
  path: `/apis/argoproj.io/v1alpha1/namespaces/${ns}/applications/${name}`,
  resource: { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications' },
  kind: { group: 'argoproj.io', version: 'v1alpha1', kind: 'Application' },
  mutations: appMutations,
  writers: ['alice', 'controller', 'agent', 'oncall'] as Writer[],
  body: {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, namespace: ns, finalizers: ['resources-finalizer.argocd.argoproj.io'] },
    spec: { project: 'default', source: { repoURL: 'https://example.com/r.git', targetRevision: 'HEAD', path: 'p' }, destination: { server: 'https://kubernetes.default.svc', namespace: 'x' } },
    ...extra,
  },
});
const secret = (name: string, repository: boolean) => ({
  path: `/api/v1/namespaces/argocd/secrets/${name}`,
  resource: { group: '', version: 'v1', resource: 'secrets' },
  kind: { group: '', version: 'v1', kind: 'Secret' },
  mutations: secretMutations,
  // The controller has no rights on Secrets here (identities.yaml).
  writers: ['alice', 'agent', 'oncall'] as Writer[],
  body: { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'argocd', ...(repository ? { labels: { 'argocd.argoproj.io/secret-type': 'repository' } } : {}) }, data: { url: Buffer.from('https://example.com/r.git').toString('base64') } },
});

const seeds = [
  app('argocd', 'diff-plain'),
  app('argocd', 'diff-operation', { operation: { sync: { revision: 'v1' } }, status: { sync: { status: 'Synced' } } }),
  app('apps-rewrite', 'diff-rewrite'),
  app('apps-warn', 'diff-warn'),
  secret('diff-repo', true),
  secret('diff-plain', false),
];

interface Verdict {
  case: string;
  writer: Writer;
  admitted: boolean;
  message: string;
}

interface Judged {
  apiserver: Verdict;
  request: AdmissionRequest;
}

/** May the policy and decide() differ here, by what the rule model says? */
function allowedDifference(policy: Policy, rule: Rule | undefined, request: AdmissionRequest, jsAdmitted: boolean, changed: string[]): boolean {
  if (!rule) return false;
  const consumer = rule.ownership.isConsumer(request.userInfo);
  if (!jsAdmitted) {
    // The policy leaves the consumer's writes on a normalized rule's guarded doors to the webhook.
    return consumer && Boolean(rule.config.normalizer) && changed.every((p) => rule.ownership.doors.some((d) => d.canonical && within(p, d.pointer)));
  }
  // The webhook normalizes, the policy compares exactly (never for the consumer, who is exempt there).
  if (consumer || !rule.config.normalizer || policy.isTrusted(request.userInfo)) return false;
  return rawChanges(rule, request).length > 0;
}

/** The guarded pointers that differ before normalization: what the policy compares (it does not normalize). */
function rawChanges(rule: Rule, request: AdmissionRequest): string[] {
  const raw = new GuardedView(rule.config.guardedPaths, rule.config.ignore);
  return raw.changedPointers(raw.valuesOf(request.oldObject), request.object);
}

/**
 * Does the policy's message name what decide() found changed (a door holding it, the stamp, the
 * selection), or a door that differs before normalization (where the policy, comparing exactly,
 * stops first)?
 */
function namesTheSame(rule: Rule, request: AdmissionRequest, message: string, changed: string[]): boolean {
  const doors = rule.ownership.doors.filter((d) => message.includes(`${d.pointer} of `)).map((d) => d.pointer);
  const named = [...changed, ...(rule.ownership.isConsumer(request.userInfo) ? [] : rawChanges(rule, request))];
  if (named.some((p) => doors.some((d) => within(p, d)))) return true;
  if (changed.includes(STAMP_POINTER) && message.includes('stamp annotation')) return true;
  return changed.some((p) => p.startsWith('/metadata (')) && message.includes('guarded selection');
}

/** Compares every judged case with decide() under `policy`; returns the disagreements. */
function disagreements(policy: Policy, judged: Judged[]): string[] {
  const stamper = new Stamper(Buffer.alloc(32, 9));
  const canonical = { get: () => undefined, tombstone: () => undefined };
  const out: string[] = [];
  for (const { apiserver, request } of judged) {
    const decision = decide(request, 'validate', { policy, canonical, stamper, now: Date.now() });
    const jsAdmitted = decision.kind === 'allow';
    const changed = decision.kind === 'deny' ? decision.changed : [];
    const rule = policy.match(request.resource.group, request.resource.resource, request.namespace, [request.object?.metadata, request.oldObject?.metadata]);
    const where = `${apiserver.case} by ${apiserver.writer}: apiserver ${apiserver.admitted ? 'admitted' : `denied (${apiserver.message})`}, decide() ${jsAdmitted ? 'admitted' : `denied ${changed.join(', ')}`}`;
    if (jsAdmitted !== apiserver.admitted) {
      if (!allowedDifference(policy, rule, request, jsAdmitted, changed)) out.push(where);
    } else if (!jsAdmitted && rule && !namesTheSame(rule, request, apiserver.message, changed)) {
      out.push(`${where}: the messages name different doors`);
    }
  }
  return out;
}

(inCluster ? describe.skip : describe)('the admission policy and the webhook decision agree (differential)', () => {
  const config = fixture('config.yaml');
  const policy = new Policy(parseConfig(readFileSync(config, 'utf8'), config), SELF);
  const judged: Judged[] = [];

  beforeAll(async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    const manifests = runCli(['manifests', '--config', config, '--webhook-url', 'https://127.0.0.1:9', '--self-user', SELF]);
    if (manifests.code !== 0) throw new Error(manifests.stderr);
    const layer0 = parseAllDocuments(manifests.stdout).map((d) => d.toJS()).filter((d) => d && /^ValidatingAdmissionPolicy/.test(d.kind));
    expect(layer0).toHaveLength(2);
    const client = await admin();
    for (const seed of seeds) {
      await client.request('DELETE', seed.path).catch(() => undefined);
    }
    kubectl([], ['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: layer0.map((d) => JSON.stringify(d)).join('\n') });
    await policyInForce();
    for (const seed of seeds) {
      const collection = seed.path.slice(0, seed.path.lastIndexOf('/'));
      // The agent creates (trusted); alice's plain Secret is hers.
      const as = seed.body.metadata.name === 'diff-plain' && seed.kind.kind === 'Secret' ? 'alice' : WRITERS.agent.username;
      await client.request('POST', collection, { body: seed.body, headers: { 'Impersonate-User': as, ...(as === 'alice' ? { 'Impersonate-Group': 'developers' } : {}) } });
    }
  });

  afterAll(async () => {
    unregister();
    const client = await admin();
    for (const seed of seeds) await client.request('DELETE', seed.path).catch(() => undefined);
  });

  it(`judges ${CASES} generated writes alike in both engines`, async () => {
    const client = await admin();
    const random = prng(20261204);
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
    const stored = new Map<string, KubeObject>();
    for (const seed of seeds) stored.set(seed.path, await client.request<KubeObject>('GET', seed.path));
    for (let n = 0; n < CASES; n++) {
      const seed = pick(seeds);
      const writer = pick(seed.writers);
      const old = stored.get(seed.path)!;
      const object = structuredClone(old) as any;
      const names: string[] = [];
      for (let m = 1 + Math.floor(random() * 3); m > 0; m--) {
        const mutation = pick(seed.mutations);
        mutation.apply(object, n);
        names.push(mutation.name);
      }
      const user = WRITERS[writer];
      let admitted = true;
      let message = '';
      try {
        await client.request('PUT', seed.path, { body: object, query: { dryRun: 'All' }, headers: { 'Impersonate-User': user.username, 'Impersonate-Group': user.groups.filter((g) => g !== 'system:authenticated') } });
      } catch (err) {
        if (!(err instanceof KubeError) || err.status !== 403 || !/ValidatingAdmissionPolicy 'spec-guard'/.test(err.message)) throw err;
        admitted = false;
        message = err.message;
      }
      const request: AdmissionRequest = {
        uid: `case-${n}`,
        kind: seed.kind,
        resource: seed.resource,
        name: object.metadata.name,
        namespace: object.metadata.namespace,
        operation: 'UPDATE',
        userInfo: user as unknown as AdmissionRequest['userInfo'],
        object,
        oldObject: old,
      } as AdmissionRequest;
      judged.push({ apiserver: { case: `#${n} ${seed.kind.kind} ${object.metadata.namespace}/${object.metadata.name}: ${names.join(' + ')}`, writer, admitted, message }, request });
    }
    const found = disagreements(policy, judged);
    expect(found).toEqual([]);
    // The cases reach both verdicts for every writer (the generator is not one-sided).
    for (const writer of Object.keys(WRITERS)) {
      const mine = judged.filter((j) => j.apiserver.writer === writer);
      expect(mine.some((j) => j.apiserver.admitted)).toBe(true);
      if (writer === 'alice' || writer === 'controller') expect(mine.some((j) => !j.apiserver.admitted)).toBe(true);
      else expect(mine.every((j) => j.apiserver.admitted)).toBe(true);
    }
  });

  it('catches a planted mismatch: a model that forgets the finalizers door disagrees with the apiserver', () => {
    const planted = readFileSync(config, 'utf8').replace(
      /(namespaces: \[argocd\]\n    mode: enforce\n    normalizer: argocd-application)/,
      '$1\n    guardedPaths: [/spec, /operation, /metadata/annotations/argocd.argoproj.io~1skip-reconcile]\n    consumerPaths: [/operation, /status]\n    consumedPaths: [/operation]',
    );
    expect(planted).not.toBe(readFileSync(config, 'utf8'));
    const found = disagreements(new Policy(parseConfig(planted, 'planted.yaml'), SELF), judged);
    expect(found.length).toBeGreaterThan(0);
    expect(found.join('\n')).toMatch(/finalizers removed|finalizer added/);
  });
});
