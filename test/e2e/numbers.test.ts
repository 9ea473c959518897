import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { AGENT, ALICE, application, inCluster, installLayers, kubectl, kubectlOk, layerIntact, LAYER_KINDS, startSpecGuard, unregister, waitFor, type SpecGuard } from './harness.js';

// Issue #17, item 2: integers beyond 2^53 are distinct in the apiserver (int64), and so for
// spec-guard: 9007199254740992 → 9007199254740993 is a change, refused, rewritten or reverted.
jest.setTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), 'spec-guard-numbers-'));
const config = join(dir, 'config.yaml');
writeFileSync(
  config,
  'resources:\n' +
    '  - group: argoproj.io\n    resource: applications\n    namespaces: [apps-rewrite]\n    mode: rewrite\n    normalizer: argocd-application\n' +
    '  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    normalizer: argocd-application\n' +
    'store:\n  type: memory\n',
);

const BIG = '9007199254740992';
const NEXT = '9007199254740993';
const withBig = { source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook', helm: { valuesObject: { replicas: 0 } } } };
/** The number as the apiserver stores it, read as text (kubectl's jsonpath prints int64 exactly). */
const stored = (ns: string, name: string) => kubectlOk([], ['get', 'application', '-n', ns, name, '-o', 'jsonpath={.spec.source.helm.valuesObject.replicas}']);
/** A JSON merge patch with the number as literal text: JSON.stringify could not write it. */
const patchTo = (value: string) => `{"spec":{"source":{"helm":{"valuesObject":{"replicas":${value}}}}}}`;

function createAsAgent(ns: string, name: string): void {
  const manifest = application(name, ns, withBig).replace('"replicas":0', `"replicas":${BIG}`);
  kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '-f', '-'], { input: manifest });
}

const describeLocal = inCluster ? describe.skip : describe;

describeLocal('numbers beyond 2^53', () => {
  let sg: SpecGuard | undefined;

  beforeAll(() => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'application', '-n', 'apps-rewrite', 'big-rewrite', '--ignore-not-found', '--wait=false']);
    kubectl([], ['delete', 'application', '-n', 'argocd', 'big-revert', '--ignore-not-found', '--wait=false']);
  });

  it('rewrite mode: alice’s edit by one is rewritten back, to the exact value', async () => {
    sg = await startSpecGuard(config, ['--no-register']);
    installLayers(config, sg, [...LAYER_KINDS.stamp, ...LAYER_KINDS.validating]);
    await layerIntact(sg, 'stamp');
    createAsAgent('apps-rewrite', 'big-rewrite');
    expect(stored('apps-rewrite', 'big-rewrite')).toBe(BIG);
    const result = kubectl(ALICE, ['patch', 'application', '-n', 'apps-rewrite', 'big-rewrite', '--type=merge', '-p', patchTo(NEXT)]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('was undone');
    expect(stored('apps-rewrite', 'big-rewrite')).toBe(BIG);
  });

  it('behind admission: alice’s edit by one is reverted by the watcher, to the exact value', async () => {
    createAsAgent('argocd', 'big-revert');
    await waitFor('stamped', () => kubectlOk([], ['get', 'application', '-n', 'argocd', 'big-revert', '-o', 'jsonpath={.metadata.annotations.spec-guard\\.io/stamp}']));
    // Only the stamp webhook stays: alice's write is stored, then judged by the watcher.
    kubectlOk([], ['delete', 'validatingwebhookconfiguration', 'spec-guard']);
    kubectlOk(ALICE, ['patch', 'application', '-n', 'argocd', 'big-revert', '--type=merge', '-p', patchTo(NEXT)]);
    await waitFor('reverted to the exact value', () => stored('argocd', 'big-revert') === BIG, 5000, 100);
    await new Promise((r) => setTimeout(r, 500));
    expect(stored('argocd', 'big-revert')).toBe(BIG);
  });

  it('the same number written back as a double passes every admission layer unseen (CEL compares by value), and is reverted to the exact value, not learned', async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    sg = await startSpecGuard(config);
    await layerIntact(sg, 'guard');
    const exact = '1234567890123456789';
    const manifest = application('big-double', 'argocd', withBig).replace('"replicas":0', `"replicas":${exact}`);
    kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '-f', '-'], { input: manifest });
    await waitFor('stamped', () => kubectlOk([], ['get', 'application', '-n', 'argocd', 'big-double', '-o', 'jsonpath={.metadata.annotations.spec-guard\\.io/stamp}']));
    expect(stored('argocd', 'big-double')).toBe(exact);
    // Admitted: the policy and the webhooks' match conditions see 1234567890123456789 == 1234567890123456789.0.
    kubectlOk(ALICE, ['patch', 'application', '-n', 'argocd', 'big-double', '--type=merge', '-p', patchTo(`${exact}.0`)]);
    await waitFor('reverted to the exact value', () => stored('argocd', 'big-double') === exact, 5000, 100);
    await sg.waitForLog(/drift reverted[^\n]*big-double/, 5000);
    kubectl([], ['delete', 'application', '-n', 'argocd', 'big-double', '--ignore-not-found', '--wait=false']);
  });
});
