import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { FileStore } from '../../src/sync/index.js';
import { AGENT, agentApply, expireLease, fixture, getJson, inCluster, installLayers, kubectl, kubectlOk, layerIntact, leaseHeldByAnother, readApplication, startSpecGuard, unregister, waitFor, type SpecGuard } from './harness.js';

// A period the guard layer was verified in force keeps vouching for the changes made within
// it after it ended: a trusted write admitted without a stamp and not yet learned (its review
// timed out, the replica was not leading or stopped) is learned after a blind window, not
// reverted as unattributed.
jest.setTimeout(120_000);

const NS = 'argocd';
const running: SpecGuard[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterAll(async () => {
  await Promise.all(running.map((sg) => sg.stop()));
  unregister();
  expireLease();
  kubectl([], ['delete', 'application', '-n', NS, 'verified-a', 'verified-b', '--ignore-not-found', '--wait=false']);
});

const rv = (name: string) => BigInt(getJson(['application', '-n', NS, name]).metadata.resourceVersion as string);

(inCluster ? describe.skip : describe)('verified periods of the guard layer', () => {
  it('a trusted write left unstamped and unlearned while the policy held is learned after a blind window that follows, not reverted', async () => {
    const config = fixture('config.yaml');
    unregister();
    expireLease();
    const sg = await startSpecGuard(config, ['--no-register', '--lease-duration', '3']);
    running.push(sg);
    await sg.waitForLog(/became the leader/);
    installLayers(config, sg);
    await layerIntact(sg, 'guard');
    agentApply('verified-a', NS);
    const stamped = await waitFor('stamped', async () => (await readApplication(NS, 'verified-a'))?.metadata?.annotations?.['spec-guard.io/stamp'] as string | undefined);
    await sleep(500); // learned
    leaseHeldByAnother();
    await sg.waitForLog(/stopped leading/, 10_000);
    // No stamp for what follows (as when the stamp webhook's review times out: it fails open
    // for trusted writers); the policy holds. The agent's write is neither stamped nor learned.
    kubectlOk([], ['delete', 'mutatingwebhookconfiguration', 'spec-guard']);
    await sleep(1500);
    kubectlOk(AGENT, ['patch', 'application', '-n', NS, 'verified-a', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"agent-v2"}}}']);
    expect((await readApplication(NS, 'verified-a'))!.metadata.annotations['spec-guard.io/stamp']).toBe(stamped);
    await sleep(6000); // the replica verifies the layers every 2 s: the policy held past the write
    // A blind window: the binding is deleted, then everything is registered again.
    kubectlOk([], ['delete', 'validatingadmissionpolicybinding', 'spec-guard']);
    await sg.waitForLog(/blind window begins.*ValidatingAdmissionPolicyBinding/, 10_000);
    installLayers(config, sg);
    // Leading again: the change is attributed by the period that ended, learned and stamped anew.
    expireLease();
    await waitFor('stamped anew', async () => {
      const app = await readApplication(NS, 'verified-a');
      return app?.metadata?.annotations?.['spec-guard.io/stamp'] !== stamped && app?.spec?.source?.targetRevision === 'agent-v2';
    }, 20_000, 100);
    await sleep(2000);
    expect((await readApplication(NS, 'verified-a'))!.spec.source.targetRevision).toBe('agent-v2');
    expect(sg.logs()).not.toMatch(/unattributed change in a blind window.*verified-a/);
    expect(sg.logs()).not.toMatch(/drift reverted.*verified-a/);
    await sg.stop();
    running.splice(0);
  });

  it('a graceful stop stores the layers verified up to the stop: a write made just before it lies within the stored period', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spec-guard-verified-'));
    const statePath = join(dir, 'state.json');
    const config = join(dir, 'config.yaml');
    writeFileSync(config, `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [${NS}]\n    normalizer: argocd-application\nstore:\n  type: file\n  path: ${statePath}\n`);
    unregister();
    expireLease();
    const sg = await startSpecGuard(config, ['--lease-duration', '3']);
    running.push(sg);
    await sg.waitForLog(/became the leader/);
    await layerIntact(sg, 'guard');
    agentApply('verified-b', NS);
    const written = rv('verified-b');
    await sg.stop();
    running.splice(0);
    const { continuity } = await new FileStore(statePath, () => undefined).load();
    for (const kind of ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
      const record = continuity?.[kind];
      expect(record).toBeDefined();
      expect(BigInt(record!.since)).toBeLessThan(written);
      expect(BigInt(record!.verifiedAt ?? record!.since)).toBeGreaterThanOrEqual(written);
    }
  });
});
