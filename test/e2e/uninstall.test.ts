import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startCli, type Daemon } from '../helpers/cli.js';
import { AGENT, ALICE, application, freePort, kubectl as kubectlOn, waitFor, type KubectlResult } from './harness.js';

// Every documented uninstall route leaves the agent able to delete and edit as before
// spec-guard, on a control plane of its own that runs the garbage collector (as every real
// cluster does) and has nothing of spec-guard's installed until a route installs it.
// spec-guard keeps running through each uninstall, as a pod does for its grace period.
const root = new URL('../../', import.meta.url).pathname;
const script = `${root}scripts/control-plane.sh`;
const planeEnv = { ...process.env, CP_NAME: 'uninstall', CP_APISERVER_PORT: '27443', CP_ETCD_PORT: '23379', CP_CONTROLLERS: 'garbagecollector,namespace', CP_INSTALL: 'none' };
const helmBin = process.env.SPEC_GUARD_HELM ?? `${root}.cache/bin/helm`;
const CONFIG = `${root}manifests/overlays/managed-agent/config.yaml`;
const ADMISSION = 'mutatingwebhookconfigurations,validatingwebhookconfigurations,validatingadmissionpolicies,validatingadmissionpolicybindings';
const MALLORY_EDIT = JSON.stringify({ spec: { source: { targetRevision: 'mallory' } } });

let kubeconfig = '';
const kubectl = (identity: string[], args: string[], input?: string): KubectlResult => kubectlOn(identity, args, { input, env: { KUBECONFIG: kubeconfig } });
function kubectlOk(identity: string[], args: string[], input?: string): string {
  const r = kubectl(identity, args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}
function helm(args: string[]): void {
  const r = spawnSync(helmBin, [...args, '--kubeconfig', kubeconfig], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`helm ${args.join(' ')} failed: ${r.stderr}`);
}

/** spec-guard's admission objects on this control plane (nothing else registers any here). */
const admissionObjects = (): string[] => kubectlOk([], ['get', ADMISSION, '-o', 'name']).split('\n').filter(Boolean);

async function serve(extra: string[] = []): Promise<Daemon> {
  const port = await freePort();
  const daemon = startCli([
    'serve', '--config', CONFIG, '--kubeconfig', kubeconfig.replace(/admin\.kubeconfig$/, 'spec-guard.kubeconfig'), '--namespace', 'spec-guard',
    '--bind-address', '127.0.0.1', '--port', String(port), '--metrics-port', String(await freePort()), '--webhook-url', `https://127.0.0.1:${port}`, ...extra,
  ]);
  await daemon.waitForLog(/spec-guard ready/);
  return daemon;
}

const createApp = (name: string) => kubectlOk(AGENT, ['apply', '--server-side', '--field-manager=argocd-agent', '-f', '-'], application(name, 'argocd'));
const edit = (who: string[], name: string) => kubectl(who, ['patch', 'application', '-n', 'argocd', name, '--type=merge', '-p', MALLORY_EDIT]);

/** The guard holds while installed: alice's edit is refused. Returns the two Applications used after the uninstall. */
async function guarded(route: string): Promise<{ kept: string; deleted: string }> {
  await waitFor('spec-guard to register its four admission objects', () => admissionObjects().length === 4, 20_000, 200);
  const kept = `${route}-kept`;
  const deleted = `${route}-deleted`;
  createApp(kept);
  createApp(deleted);
  await waitFor('the guard to refuse alice', () => edit(ALICE, kept).code !== 0, 10_000, 200);
  return { kept, deleted };
}

/** After the uninstall, with spec-guard gone: nothing of it is left in admission; everyone writes as before it. */
async function asBeforeSpecGuard(apps: { kept: string; deleted: string }): Promise<void> {
  await waitFor('the admission objects to be removed', () => admissionObjects().length === 0, 30_000, 250);
  // The apiserver drops a deleted policy at its next refresh, about a second later.
  await waitFor('alice’s edit to be admitted', () => kubectl(ALICE, ['patch', 'application', '-n', 'argocd', apps.kept, '--dry-run=server', '--type=merge', '-p', MALLORY_EDIT]).code === 0, 10_000, 200);
  expect(kubectl(AGENT, ['delete', 'application', '-n', 'argocd', apps.deleted, '--wait=false']).stderr).toBe('');
  expect(kubectl([], ['get', 'application', '-n', 'argocd', apps.deleted]).code).not.toBe(0);
  expect(edit(AGENT, apps.kept).code).toBe(0);
  expect(edit(ALICE, apps.kept).code).toBe(0);
  const stored = JSON.parse(kubectlOk([], ['get', 'application', '-n', 'argocd', apps.kept, '-o', 'json'])) as { spec: { source: { targetRevision: string } } };
  expect(stored.spec.source.targetRevision).toBe('mallory');
}

describe('uninstall', () => {
  beforeAll(() => {
    kubeconfig = execFileSync('bash', [script, 'up'], { env: planeEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  }, 300_000);
  afterAll(() => {
    execFileSync('bash', [script, 'down'], { env: planeEnv, stdio: 'ignore' });
  });

  it('helm uninstall: the garbage collector removes what spec-guard registered (owned by its ClusterRole); the agent deletes and edits', async () => {
    helm(['install', 'spec-guard', `${root}charts/spec-guard`, '--namespace', 'spec-guard', '--create-namespace', '--set', 'image.repository=spec-guard.local/spec-guard']);
    const sg = await serve();
    try {
      const apps = await guarded('helm');
      for (const name of admissionObjects()) {
        const owners = JSON.parse(kubectlOk([], ['get', name, '-o', 'jsonpath={.metadata.ownerReferences}']) || '[]') as Array<{ kind: string; name: string }>;
        expect(owners).toEqual([expect.objectContaining({ kind: 'ClusterRole', name: 'spec-guard' })]);
      }
      helm(['uninstall', 'spec-guard', '--namespace', 'spec-guard']);
      await asBeforeSpecGuard(apps);
    } finally {
      await sg.stop();
    }
  }, 120_000);

  it('kubectl delete -k on the overlay: likewise, namespace and all; objects an earlier version registered without an owner are given one', async () => {
    const overlay = `${root}manifests/overlays/managed-agent`;
    kubectlOk([], ['apply', '--server-side', '-k', overlay]);
    // As 0.1.0 left them: registered, with no owner.
    const port = await freePort();
    const earlier = spawnSync(process.execPath, [`${root}dist/src/cli.js`, 'manifests', '--config', CONFIG, '--webhook-url', `https://127.0.0.1:${port}`], { encoding: 'utf8' });
    kubectlOk([], ['apply', '--server-side', '--field-manager=spec-guard', '-f', '-'], earlier.stdout);
    expect(admissionObjects()).toHaveLength(4);
    const sg = await serve();
    await waitFor('every admission object to be given its owner', () => admissionObjects().every((name) => kubectlOk([], ['get', name, '-o', 'jsonpath={.metadata.ownerReferences[0].kind}']) === 'ClusterRole'), 20_000, 250);
    try {
      const apps = await guarded('kustomize');
      kubectlOk([], ['delete', '-k', overlay, '--wait=false']);
      await asBeforeSpecGuard(apps);
    } finally {
      await sg.stop();
    }
    await waitFor('the spec-guard namespace to be deleted', () => kubectl([], ['get', 'namespace', 'spec-guard']).code !== 0, 60_000, 500);
  }, 150_000);

  it('GitOps (--no-register): removing what the tool applied removes every admission object', async () => {
    const dir = `${root}.cache/kustomize/uninstall-gitops`;
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/kustomization.yaml`, 'resources: [../../../manifests/overlays/managed-agent]\ncomponents: [../../../manifests/components/gitops]\n');
    kubectlOk([], ['apply', '--server-side', '-k', dir]);
    const port = await freePort();
    const rendered = spawnSync(process.execPath, [`${root}dist/src/cli.js`, 'manifests', '--config', CONFIG, '--webhook-url', `https://127.0.0.1:${port}`], { encoding: 'utf8' });
    expect(rendered.status).toBe(0);
    writeFileSync(`${dir}/admission.yaml`, rendered.stdout);
    kubectlOk([], ['apply', '--server-side', '-f', `${dir}/admission.yaml`]);
    expect(admissionObjects()).toHaveLength(4);
    // What the GitOps tool prunes when the application is removed: everything it applied.
    kubectlOk([], ['delete', '-f', `${dir}/admission.yaml`, '--wait=false']);
    kubectlOk([], ['delete', '-k', dir, '--wait=false']);
    expect(admissionObjects()).toEqual([]);
    const app = 'gitops-after';
    createApp(app);
    await waitFor('alice’s edit to be admitted', () => edit(ALICE, app).code === 0, 10_000, 200);
    expect(kubectl(AGENT, ['delete', 'application', '-n', 'argocd', app, '--wait=false']).code).toBe(0);
  }, 120_000);
});
