import { randomUUID } from 'node:crypto';
import https from 'node:https';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { MAX_TOMBSTONE_BYTES, MAX_TOMBSTONES } from '../../src/guard/index.js';
import {
  admin,
  agentApply,
  installLayers,
  LAYER_KINDS,
  application,
  fixture,
  inCluster,
  kubectl,
  kubectlOk,
  readApplication,
  startSpecGuard,
  state,
  unregister,
  waitFor,
  type SpecGuard,
} from './harness.js';

// Tombstones under hostile traffic and under load: a review body posted to the webhook port
// proves nothing, so a tombstone counts only for the object with its uid, and only until the
// watch has gone past it; confirmed ones are removed; concurrent trusted deletes share writes.
jest.setTimeout(240_000);

const NS = 'argocd';
const SECRET_NAME = 'spec-guard-e2e-tombstones';
const APPS = `/apis/argoproj.io/v1alpha1/namespaces/${NS}/applications`;
const describeLocal = inCluster ? describe.skip : describe;

function configWith(store: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-tombstones-'));
  const file = join(dir, 'config.yaml');
  // Deletes in the blind window these tests open are recreated (not kept), so that a tombstone is what decides.
  const config = readFileSync(fixture('config.yaml'), 'utf8')
    .replace(/store:\n  type: memory\n/, `store:\n${store}\n`)
    .replace(/namespaces: \[argocd\]\n    mode: enforce\n    normalizer: argocd-application\n/, '$&    blindWindow: {deletes: recreate}\n');
  if (!config.includes('blindWindow')) throw new Error('the fixture changed: no argocd Application rule found');
  writeFileSync(file, config);
  return file;
}

/** What a pod in the cluster network can do: POST a made-up AdmissionReview to the webhook port. */
function forgeTrustedDelete(port: number, name: string, uid: string): Promise<Record<string, any>> {
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `forged-${Date.now()}`,
      kind: { group: 'argoproj.io', version: 'v1alpha1', kind: 'Application' },
      resource: { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications' },
      name,
      namespace: NS,
      operation: 'DELETE',
      userInfo: { username: 'system:serviceaccount:argocd:argocd-agent-agent', groups: ['system:authenticated'] },
      oldObject: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application', metadata: { name, namespace: NS, uid } },
    },
  };
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: '/validate', method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve(JSON.parse(text)));
    });
    req.on('error', reject);
    req.end(JSON.stringify(review));
  });
}

/** Bytes the apiserver has put into etcd so far (etcd's own counter, from its client port). */
async function etcdPutBytes(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${process.env.CP_ETCD_PORT ?? '22379'}/metrics`)).text();
  return Number(/^etcd_debugging_mvcc_total_put_size_in_bytes (\S+)$/m.exec(text)![1]);
}

async function storedTombstones(): Promise<Record<string, unknown>> {
  const secret = await (await admin()).request<{ data?: Record<string, string> }>('GET', `/api/v1/namespaces/spec-guard/secrets/${SECRET_NAME}-tombstones`).catch(() => undefined);
  const raw = secret?.data?.['tombstones.json'];
  return raw ? JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) : {};
}

/** Runs `task` for 0..count-1, `concurrency` at a time. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await task(next++);
  }));
}

describeLocal('tombstones', () => {
  let sg: SpecGuard;

  beforeAll(async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    kubectl([], ['delete', 'secret', '-n', 'spec-guard', '-l', 'app.kubernetes.io/managed-by=spec-guard', '--ignore-not-found']);
    // Only the stamp webhook: deletes by anyone go straight through, as behind a bypassed admission.
    const config = configWith(`  type: secret\n  secretName: ${SECRET_NAME}`);
    sg = await startSpecGuard(config, ['--no-register']);
    await sg.waitForLog(/became the leader/);
    installLayers(config, sg, LAYER_KINDS.stamp);
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'applications', '--all', '-n', NS, '--wait=false']);
  });

  it('1. a forged trusted DELETE posted to the webhook port expires unconfirmed: a later delete behind admission is still undone', async () => {
    agentApply('tomb-forged', NS);
    await waitFor('stamped and known', async () => (await readApplication(NS, 'tomb-forged'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    const uid = (await readApplication(NS, 'tomb-forged'))!.metadata.uid as string;
    const answer = await forgeTrustedDelete(sg.webhookPort, 'tomb-forged', uid);
    expect(answer.response.allowed).toBe(true);
    expect(Object.keys(await storedTombstones())).toContain('argoproj.io/applications/argocd/tomb-forged');
    // The watch goes on watching and never sees that delete: the tombstone expires.
    await waitFor('the forged tombstone to expire', async () => !('argoproj.io/applications/argocd/tomb-forged' in (await storedTombstones())), 20_000, 500);
    await sg.waitForLog(/tombstone expired.*tomb-forged/);
    // Now a delete behind admission is undone.
    kubectlOk([], ['delete', 'application', '-n', NS, 'tomb-forged']);
    await waitFor('tomb-forged recreated', async () => {
      const app = await readApplication(NS, 'tomb-forged');
      return app && app.metadata.uid !== uid;
    }, 10_000);
  });

  it('2. a forged tombstone for another uid does not cover the real object, even at once', async () => {
    agentApply('tomb-wrong-uid', NS);
    await waitFor('stamped and known', async () => (await readApplication(NS, 'tomb-wrong-uid'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    const uid = (await readApplication(NS, 'tomb-wrong-uid'))!.metadata.uid as string;
    await forgeTrustedDelete(sg.webhookPort, 'tomb-wrong-uid', '00000000-0000-0000-0000-000000000000');
    kubectlOk([], ['delete', 'application', '-n', NS, 'tomb-wrong-uid']);
    await waitFor('tomb-wrong-uid recreated', async () => {
      const app = await readApplication(NS, 'tomb-wrong-uid');
      return app && app.metadata.uid !== uid;
    }, 10_000);
  });

  it('3. 1,000 trusted deletes, 32 at a time through the apiserver, are all admitted; their tombstones are removed once settled', async () => {
    // Through the apiserver this time: spec-guard registered, the agent's deletes recording tombstones.
    await sg.stop();
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    sg = await startSpecGuard(configWith(`  type: secret\n  secretName: ${SECRET_NAME}`));
    await sg.waitForLog(/became the leader/);
    const kube = await admin();
    const agent = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-agent-agent' };
    const COUNT = 1000;
    await pool(COUNT, 32, async (i) => {
      await kube.request('POST', APPS, { body: JSON.parse(application(`bulk-${i}`, NS)), headers: agent, query: { fieldManager: 'argocd-agent' } });
    });
    const refused: string[] = [];
    await pool(COUNT, 32, async (i) => {
      try {
        await kube.request('DELETE', `${APPS}/bulk-${i}`, { headers: agent });
      } catch (err) {
        refused.push((err as Error).message);
      }
    });
    expect(refused).toEqual([]);
    const left = await kube.request<{ items: unknown[] }>('GET', APPS, { query: { labelSelector: '' } });
    expect(left.items.filter((a: any) => a.metadata.name.startsWith('bulk-'))).toEqual([]);
    // Nothing came back, and every tombstone went once its delete was settled.
    await waitFor('the tombstones to be removed', async () => Object.keys(await storedTombstones()).filter((k) => k.includes('/bulk-')).length === 0, 30_000, 500);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await kube.request<{ items: Array<{ metadata: { name: string } }> }>('GET', APPS)).items.filter((a) => a.metadata.name.startsWith('bulk-'))).toEqual([]);
  });

  it('3b. the agent’s deletecollection records a tombstone per object (its reviews name the object only in oldObject): every delete is known trusted by its tombstone', async () => {
    const kube = await admin();
    const agent = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-agent-agent' };
    for (let i = 0; i < 3; i++) {
      const body = JSON.parse(application(`coll-${i}`, NS));
      body.metadata.labels = { batch: 'collection' };
      await kube.request('POST', APPS, { body, headers: agent, query: { fieldManager: 'argocd-agent' } });
    }
    await kube.request('DELETE', APPS, { headers: agent, query: { labelSelector: 'batch=collection' } });
    for (let i = 0; i < 3; i++) await sg.waitForLog(new RegExp(`guarded object deleted[^\\n]*coll-${i}[^\\n]*trusted \\(tombstone\\)`), 10_000);
    expect(sg.logs()).not.toMatch(/tombstone[^\n]*argocd\/"/);
  });

  it('3c. a delete the agent made, held by a finalizer longer than a tombstone waits, stays final though the guard layer’s period restarts meanwhile', async () => {
    const kube = await admin();
    const agent = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-agent-agent' };
    const body = JSON.parse(application('held', NS));
    body.metadata.finalizers = ['example.com/hold'];
    await kube.request('POST', APPS, { body, headers: agent, query: { fieldManager: 'argocd-agent' } });
    await waitFor('stamped and known', async () => (await readApplication(NS, 'held'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    await kube.request('DELETE', `${APPS}/held`, { headers: agent });
    expect((await readApplication(NS, 'held'))?.metadata?.deletionTimestamp).toBeDefined();
    // Longer than a tombstone waits for its delete (10 s), and sweeps run meanwhile.
    await new Promise((r) => setTimeout(r, 13_000));
    expect(sg.logs()).not.toMatch(/tombstone expired[^\n]*held/);
    // Anyone with rights on the binding touches it: the guard layer's period ends and begins anew.
    kubectlOk([], ['annotate', 'validatingadmissionpolicybinding', 'spec-guard', `touched=${Date.now()}`]);
    await sg.waitForLog(/blind window begins.*ValidatingAdmissionPolicyBinding/, 10_000);
    // The finalizer's owner (Argo CD's controller here) lets the delete complete.
    kubectlOk(['--as=system:serviceaccount:argocd:argocd-application-controller'], ['patch', 'application', '-n', NS, 'held', '--type=merge', '-p', '{"metadata":{"finalizers":null}}']);
    await waitFor('held gone', async () => (await readApplication(NS, 'held')) === undefined, 5000, 100);
    await new Promise((r) => setTimeout(r, 2000));
    expect(await readApplication(NS, 'held')).toBeUndefined();
    expect(sg.logs()).not.toMatch(/deleted object recreated[^\n]*held/);
    await sg.waitForLog(/guarded object deleted[^\n]*held[^\n]*trusted \(tombstone\)/, 5000);
  });

  it('3d. a flood of forged trusted deletes with 253-character names (reviews not authenticated): bounded bytes into etcd, the tombstones within budget, and the agent’s real delete is admitted and stays deleted', async () => {
    const kube = await admin();
    const agent = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-agent-agent' };
    const FORGED = 2_500;
    const before = await etcdPutBytes();
    await pool(FORGED, 32, async (i) => {
      await forgeTrustedDelete(sg.webhookPort, `f${String(i).padStart(5, '0')}-${randomUUID()}${'n'.repeat(210)}`.slice(0, 253), randomUUID());
    });
    const perReview = ((await etcdPutBytes()) - before) / FORGED;
    const stored = await storedTombstones();
    // The figure the issue asks for (printed; the bound is asserted below).
    console.log(`forged trusted DELETE flood: ${FORGED} reviews, ${Math.round(perReview)} bytes put into etcd per review, ${Object.keys(stored).length} tombstones stored`);
    expect(Object.keys(stored).length).toBeLessThanOrEqual(MAX_TOMBSTONES);
    expect(JSON.stringify(stored).length).toBeLessThanOrEqual(MAX_TOMBSTONE_BYTES);
    // Each write rewrites at most the budget, one write at a time, shared by the reviews waiting.
    expect(perReview).toBeLessThan(MAX_TOMBSTONE_BYTES / 4);
    await sg.waitForLog(/tombstones evicted for room/);
    // The budget is full of forged entries: the agent's delete is admitted all the same, and stays.
    agentApply('tomb-after-flood', NS);
    await waitFor('stamped and known', async () => (await readApplication(NS, 'tomb-after-flood'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    await kube.request('DELETE', `${APPS}/tomb-after-flood`, { headers: agent });
    await new Promise((r) => setTimeout(r, 2000));
    expect(await readApplication(NS, 'tomb-after-flood')).toBeUndefined();
    expect(sg.logs()).not.toMatch(/deleted object recreated[^\n]*tomb-after-flood/);
  });

  it('4. with --client-ca-file, only the apiserver (its client certificate) is heard: the forged review is refused, the agent is stamped', async () => {
    await sg.stop();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    const clientCa = join(dirname(state().adminKubeconfig), 'pki', 'ca.crt');
    sg = await startSpecGuard(configWith(`  type: secret\n  secretName: ${SECRET_NAME}`), ['--client-ca-file', clientCa]);
    await sg.waitForLog(/became the leader/);
    agentApply('tomb-mtls', NS);
    await waitFor('stamped through the apiserver', async () => (await readApplication(NS, 'tomb-mtls'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    const uid = (await readApplication(NS, 'tomb-mtls'))!.metadata.uid as string;
    const answer = await forgeTrustedDelete(sg.webhookPort, 'tomb-mtls', uid);
    expect(answer.error).toMatch(/accepted from the apiserver only/);
    expect(Object.keys(await storedTombstones())).not.toContain('argoproj.io/applications/argocd/tomb-mtls');
    // Refused before its body is read: a forged review costs etcd nothing (what is put meanwhile is the Lease's renewals).
    const before = await etcdPutBytes();
    await pool(500, 32, async (i) => void (await forgeTrustedDelete(sg.webhookPort, `f${i}-${'n'.repeat(240)}`, randomUUID())));
    const perReview = ((await etcdPutBytes()) - before) / 500;
    console.log(`forged trusted DELETEs with client authentication: ${Math.round(perReview)} bytes put into etcd per review`);
    expect(perReview).toBeLessThan(100);
  });
});
