import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { repoRoot, runCli } from '../helpers/cli.js';
import { AGENT, agentApply, ALICE, fixture, freePort, inCluster, kubectl, kubectlOk, layerIntact, policyInForce, POLICY_DENIED, startSpecGuard, state, unregister, waitFor } from './harness.js';

// Issue #14, item 1: a start that cannot work registers nothing (a fail-closed webhook left
// behind by a process that then fails would freeze every guarded kind), says exactly what is
// wrong, and exits.
jest.setTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), 'spec-guard-startup-'));
const bad = join(dir, 'bad.yaml');
writeFileSync(
  bad,
  [
    'resources:',
    '  - group: apps', // served at v1 only
    '    resource: deployments',
    '    version: v1alpha1',
    '  - group: ""', // exists, but spec-guard's RBAC does not cover it
    '    resource: configmaps',
    '    version: v1',
    '    namespaces: [argocd]',
    'store:',
    '  type: file',
    `  path: ${join(dir, 'state.json')}`,
  ].join('\n'),
);

const admissionObjects = () =>
  ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration', 'validatingadmissionpolicy', 'validatingadmissionpolicybinding'].filter(
    (kind) => kubectl([], ['get', kind, 'spec-guard']).code === 0,
  );

const describeLocal = inCluster ? describe.skip : describe;

describeLocal('start-up checks', () => {
  beforeAll(() => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
  });

  it('serve with a resource the cluster does not serve and one it may not read: exits 1 at once, names both, registers nothing', () => {
    const started = Date.now();
    const result = runCli(['serve', '--config', bad, '--kubeconfig', state().specGuardKubeconfig, '--namespace', 'spec-guard', '--bind-address', '127.0.0.1', '--port', '0', '--metrics-port', '0', '--webhook-url', 'https://127.0.0.1:1']);
    expect(result.code).toBe(1); // runCli gives up after 30 s with code null: a process that lingers fails here
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.stderr).toContain('nothing was registered');
    expect(result.stderr).toContain('resources[0]: the API apps/v1alpha1 is not served by this cluster');
    expect(result.stderr).toMatch(/RBAC: cannot get, list, watch, patch, create configmaps in namespace argocd/);
    expect(admissionObjects()).toEqual([]);
  });

  it('check-config --kubeconfig runs the same checks without serving; the shipped configuration passes them', () => {
    const failing = runCli(['check-config', '--config', bad, '--kubeconfig', state().specGuardKubeconfig]);
    expect(failing.code).toBe(1);
    expect(failing.stderr).toContain('resources[0]: the API apps/v1alpha1 is not served by this cluster');
    expect(failing.stderr).toContain('RBAC: cannot get, list, watch, patch, create configmaps in namespace argocd');
    const passing = runCli(['check-config', '--config', fixture('config.yaml'), '--kubeconfig', state().specGuardKubeconfig]);
    expect(passing.stderr).toBe('');
    expect(passing.code).toBe(0);
    expect(passing.stdout).toContain('may do all spec-guard needs');
    expect(admissionObjects()).toEqual([]);
  });
});

describeLocal('least privilege, as shipped (kubectl auth can-i as spec-guard’s service account)', () => {
  const canI = (args: string[]) => kubectl([], ['auth', 'can-i', '--as=system:serviceaccount:spec-guard:spec-guard', ...args]).stdout.trim();

  it.each([
    ['patch applications.argoproj.io in argocd', ['patch', 'applications.argoproj.io', '-n', 'argocd']],
    ['watch repository Secrets’ namespace', ['watch', 'secrets', '-n', 'argocd']],
    ['update its own validating webhook configuration', ['update', 'validatingwebhookconfigurations/spec-guard']],
    ['update its own admission policy', ['update', 'validatingadmissionpolicies/spec-guard']],
    ['write its Lease', ['update', 'leases.coordination.k8s.io', '-n', 'spec-guard']],
  ])('allowed: %s', (_what, args) => {
    expect(canI(args)).toBe('yes');
  });

  it.each([
    ['patch applications.argoproj.io in another namespace', ['patch', 'applications.argoproj.io', '-n', 'default']],
    ['read Secrets elsewhere', ['get', 'secrets', '-n', 'kube-system']],
    ['update another webhook configuration', ['update', 'validatingwebhookconfigurations/someone-else']],
    ['delete its own webhook configuration', ['delete', 'mutatingwebhookconfigurations/spec-guard']],
    ['delete guarded objects', ['delete', 'applications.argoproj.io', '-n', 'argocd']],
    ['create RBAC', ['create', 'clusterroles']],
  ])('denied: %s', (_what, args) => {
    expect(canI(args)).toBe('no');
  });
});

describeLocal('the local control plane script', () => {
  it('stops the etcd it started when the apiserver cannot start (its port is taken), and says so', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    const apiserverPort = (taken.address() as { port: number }).port;
    const etcdPort = await freePort();
    try {
      const result = spawnSync('bash', [join(repoRoot, 'scripts/control-plane.sh'), 'up'], {
        encoding: 'utf8',
        env: { ...process.env, CP_NAME: 'port-taken', CP_APISERVER_PORT: String(apiserverPort), CP_ETCD_PORT: String(etcdPort) },
        timeout: 120_000,
      });
      expect(result.status).not.toBe(0);
      expect(result.stderr).toMatch(/kube-apiserver exited/);
      expect(result.stderr).toMatch(/address already in use/);
      // Nothing of that plane is left running: its etcd port is free again.
      const probe = createServer();
      await new Promise<void>((resolve, reject) => {
        probe.once('error', reject);
        probe.listen(etcdPort, '127.0.0.1', () => resolve());
      });
      probe.close();
    } finally {
      taken.close();
      spawnSync('bash', [join(repoRoot, 'scripts/control-plane.sh'), 'down'], { env: { ...process.env, CP_NAME: 'port-taken' } });
    }
  });
});

describeLocal('when no replica can serve (README, Operating)', () => {
  const NS = 'argocd';
  afterAll(() => {
    unregister();
    kubectl([], ['delete', 'application', '-n', NS, 'no-replica', '--ignore-not-found', '--wait=false']);
  });

  it('the agent’s delete waits; one command lets it through while alice stays refused; back up, the delete is final', async () => {
    unregister();
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    const file = join(dir, 'no-replica.yaml');
    writeFileSync(file, `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [${NS}]\n    normalizer: argocd-application\nstore:\n  type: file\n  path: ${join(dir, 'no-replica-state.json')}\n`);
    let sg = await startSpecGuard(file, ['--lease-duration', '3']);
    await policyInForce();
    await layerIntact(sg, 'guard');
    agentApply('no-replica', NS);
    await new Promise((r) => setTimeout(r, 500)); // the watch brings the stamped object to the cache
    await sg.stop(); // a graceful stop stores what it learned
    kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
    // Every replica down: the agent's delete fails (its tombstone cannot be recorded).
    const refused = kubectl(AGENT, ['delete', 'application', '-n', NS, 'no-replica', '--wait=false']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('tombstone.spec-guard.io');
    // The documented command.
    kubectlOk([], ['delete', 'validatingwebhookconfiguration', 'spec-guard']);
    expect(kubectl(ALICE, ['patch', 'application', '-n', NS, 'no-replica', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']).stderr).toContain(POLICY_DENIED);
    kubectlOk(AGENT, ['delete', 'application', '-n', NS, 'no-replica']);
    // spec-guard back: the delete is attributed by the policy's continuity and stays.
    sg = await startSpecGuard(file, ['--lease-duration', '3']);
    await sg.waitForLog(/became the leader/);
    await waitFor('the configuration registered again', () => kubectl([], ['get', 'validatingwebhookconfiguration', 'spec-guard']).code === 0, 10_000);
    await new Promise((r) => setTimeout(r, 2000));
    expect(kubectl([], ['get', 'application', '-n', NS, 'no-replica']).code).not.toBe(0);
    expect(sg.logs()).toMatch(/guarded object deleted.*no-replica.*the guard layer held/);
    await sg.stop();
  });
});
