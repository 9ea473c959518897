import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { parse } from 'yaml';
import {
  agentApply,
  ALICE,
  inCluster,
  installLayers,
  kubectl,
  kubectlOk,
  layerIntact,
  LAYER_KINDS,
  readApplication,
  startSpecGuard,
  state,
  unregister,
  waitFor,
  waitForRevision,
  type SpecGuard,
} from './harness.js';

// Issue #14, item 2: credentials are refreshed as client-go refreshes them. spec-guard runs
// with a kubeconfig that names its token with `tokenFile` (as a projected service-account
// token is read in a pod); the token is a TokenRequest token bound to a Secret. It is
// rotated (the file replaced) and the old one invalidated (its Secret deleted): spec-guard
// keeps reverting and healing.
jest.setTimeout(120_000);

const NS = 'argocd';
const dir = mkdtempSync(join(tmpdir(), 'spec-guard-tokens-'));
const tokenFile = join(dir, 'token');
const kubeconfig = join(dir, 'kubeconfig');
const config = join(dir, 'config.yaml');
writeFileSync(config, `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [${NS}]\n    normalizer: argocd-application\nstore:\n  type: memory\n`);

/** A token for spec-guard's service account, valid while the Secret `bound` exists; written to the token file atomically. */
function issueToken(bound: string): void {
  kubectlOk([], ['create', 'secret', 'generic', bound, '-n', 'spec-guard']);
  const token = kubectlOk([], ['create', 'token', 'spec-guard', '-n', 'spec-guard', '--bound-object-kind', 'Secret', '--bound-object-name', bound, '--duration', '1h']).trim();
  writeFileSync(`${tokenFile}.tmp`, token);
  renameSync(`${tokenFile}.tmp`, tokenFile);
}
const invalidate = (bound: string) => kubectlOk([], ['delete', 'secret', bound, '-n', 'spec-guard']);

const describeLocal = inCluster ? describe.skip : describe;

describeLocal('credentials are read again, not once', () => {
  let sg: SpecGuard | undefined;

  beforeAll(() => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    kubectl([], ['delete', 'secret', '-n', 'spec-guard', 'tok-1', 'tok-2', 'tok-3', '--ignore-not-found']);
    // The cluster and CA of spec-guard's own kubeconfig, the user by tokenFile only.
    const own = parse(readFileSync(state().specGuardKubeconfig, 'utf8'));
    own.users = [{ name: 'by-token', user: { tokenFile } }];
    own.contexts = [{ name: 'local', context: { cluster: own.clusters[0].name, user: 'by-token' } }];
    own['current-context'] = 'local';
    writeFileSync(kubeconfig, JSON.stringify(own));
    issueToken('tok-1');
  });

  afterAll(async () => {
    await sg?.stop();
    unregister();
    kubectl([], ['delete', 'secret', '-n', 'spec-guard', 'tok-1', 'tok-2', 'tok-3', '--ignore-not-found']);
    kubectl([], ['delete', 'application', '-n', NS, 'token-revert', '--ignore-not-found', '--wait=false']);
  });

  it('runs as its service account from a kubeconfig tokenFile (not as system:anonymous)', async () => {
    sg = await startSpecGuard(config, ['--no-register', '--lease-duration', '3']);
    await sg.waitForLog(/became the leader/);
    expect(sg.logs()).toContain('"selfUser":"system:serviceaccount:spec-guard:spec-guard"');
  });

  it('keeps reverting after the token is rotated and the old one invalidated', async () => {
    installLayers(config, sg!, LAYER_KINDS.stamp);
    await layerIntact(sg!, 'stamp');
    agentApply('token-revert', NS);
    await waitFor('stamped', async () => (await readApplication(NS, 'token-revert'))?.metadata?.annotations?.['spec-guard.io/stamp']);
    issueToken('tok-2');
    invalidate('tok-1');
    await new Promise((r) => setTimeout(r, 1000));
    kubectlOk(ALICE, ['patch', 'application', '-n', NS, 'token-revert', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']);
    expect(await waitForRevision(NS, 'token-revert', 'HEAD', 5000)).toBeLessThan(5000);
  });

  it('keeps healing its admission objects after another rotation', async () => {
    await sg!.stop();
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    sg = await startSpecGuard(config, ['--lease-duration', '3']);
    await sg.waitForLog(/became the leader/);
    await waitFor('registered', () => kubectl([], ['get', 'mutatingwebhookconfiguration', 'spec-guard']).code === 0, 10_000);
    issueToken('tok-3');
    invalidate('tok-2');
    await new Promise((r) => setTimeout(r, 1000));
    kubectlOk([], ['delete', 'mutatingwebhookconfiguration', 'spec-guard']);
    await waitFor('the configuration restored', () => kubectl([], ['get', 'mutatingwebhookconfiguration', 'spec-guard']).code === 0, 10_000, 200);
    expect(sg.logs()).not.toMatch(/"status":401|: 401 /);
  });
});
