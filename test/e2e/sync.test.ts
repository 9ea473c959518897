import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { STAMP_ANNOTATION } from '../../src/guard/index.js';
import { runCli } from '../helpers/cli.js';
import { metricValue, parsePrometheusText } from '../helpers/prometheus.js';
import {
  AGENT,
  ALICE,
  CONTROLLER,
  agentApply,
  eventsFor,
  inCluster,
  kubectl,
  kubectlOk,
  installLayers,
  layerIntact,
  LAYER_KINDS,
  POLICY_DENIED,
  readApplication,
  startSpecGuard,
  state,
  unregister,
  waitFor,
  waitForRevision,
  type SpecGuard,
} from './harness.js';

jest.setTimeout(120_000);

const NS = 'argocd';
const dir = mkdtempSync(join(tmpdir(), 'spec-guard-sync-'));

function configWithStore(name: string, store: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [${NS}]\n    normalizer: argocd-application\nstore:\n${store}\n`,
  );
  return file;
}

const fileConfig = configWithStore('file', `  type: file\n  path: ${join(dir, 'state.json')}`);
/** The same rule and store, choosing to recreate what is deleted in a blind window. */
const recreatingConfig = join(dir, 'recreating.yaml');
writeFileSync(
  recreatingConfig,
  `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [${NS}]\n    normalizer: argocd-application\n    blindWindow: {deletes: recreate}\nstore:\n  type: file\n  path: ${join(dir, 'state.json')}\n`,
);
const secretConfig = configWithStore('secret', '  type: secret\n  secretName: spec-guard-e2e-state');
const running: SpecGuard[] = [];

async function start(config: string, extra: string[] = []): Promise<SpecGuard> {
  const sg = await startSpecGuard(config, ['--lease-duration', '3', ...extra]);
  running.push(sg);
  return sg;
}

async function stopAll(): Promise<void> {
  await Promise.all(running.splice(0).map((sg) => sg.stop()));
  // The lease of a stopped leader is released; a killed one's lease runs out in 3 s.
  kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
}

const alicePatch = (name: string, revision: string) =>
  kubectlOk(ALICE, ['patch', 'application', '-n', NS, name, '--type=merge', '-p', JSON.stringify({ spec: { source: { targetRevision: revision } } })]);

/** Scenario 7: the application-controller writes status in a loop during the whole file. */
const controllerLoop = { stop: false, writes: 0, failures: [] as string[], done: Promise.resolve() };
function startControllerLoop(name: string): void {
  const once = () =>
    new Promise<void>((resolve) => {
      const child = spawn('kubectl', [...CONTROLLER, 'patch', 'application', '-n', NS, name, '--type=merge', '-p', JSON.stringify({ status: { reconciledAt: new Date().toISOString(), sync: { status: 'Synced' } } })], {
        env: { ...process.env, KUBECONFIG: state().adminKubeconfig },
      });
      let err = '';
      child.stderr.on('data', (c) => (err += c));
      // 'close': after stderr is read to its end ('exit' can come first).
      child.on('close', (code) => {
        controllerLoop.writes++;
        if (code !== 0 && !/not found/.test(err)) controllerLoop.failures.push(err);
        resolve();
      });
    });
  controllerLoop.done = (async () => {
    while (!controllerLoop.stop) {
      await once();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
}

beforeAll(() => {
  if (inCluster) return;
  unregister();
  kubectl([], ['delete', 'applications', '--all', '-n', NS]);
  kubectl([], ['delete', 'lease', '-n', 'spec-guard', 'spec-guard', '--ignore-not-found']);
  agentApply('sync-status-loop', NS);
  startControllerLoop('sync-status-loop');
});

afterAll(async () => {
  if (inCluster) return;
  await stopAll();
  unregister();
  controllerLoop.stop = true;
  await controllerLoop.done;
  kubectl([], ['delete', 'applications', '--all', '-n', NS, '--wait=false']);
});

// These scenarios stop, kill and restart spec-guard's process: local control plane only.
(inCluster ? describe.skip : describe)('the watcher reverts what bypassed admission', () => {
  it('1. with only the stamp webhook registered, alice’s kubectl patch is reverted within 1 s as untrusted, with an Event', async () => {
    const sg = await start(fileConfig, ['--no-register']);
    await sg.waitForLog(/became the leader/);
    installLayers(fileConfig, sg, LAYER_KINDS.stamp);
    await layerIntact(sg, 'stamp');
    agentApply('sync-one', NS);
    await waitFor('the agent’s write stamped', async () => (await readApplication(NS, 'sync-one'))?.metadata?.annotations?.[STAMP_ANNOTATION]);
    alicePatch('sync-one', 'evil');
    const ms = await waitForRevision(NS, 'sync-one', 'HEAD', 1000);
    expect(ms).toBeLessThan(1000);
    await waitFor('the SpecDriftReverted event', () => eventsFor(NS, 'sync-one', 'SpecDriftReverted').length > 0, 10_000, 250);
    const [event] = eventsFor(NS, 'sync-one', 'SpecDriftReverted');
    expect(event!.message).toContain('/spec/source/targetRevision');
    expect(event!.message).toContain('an untrusted change');
    // One drift, one revert, seen by Prometheus as such.
    const samples = parsePrometheusText(await sg.metrics());
    const resource = { resource: 'applications.argoproj.io' };
    expect(metricValue(samples, 'spec_guard_reverts_total', { ...resource, result: 'reverted' })).toBe(1);
    expect(metricValue(samples, 'spec_guard_drift_detected_total', { ...resource, source: 'watch' })).toBe(1);
    expect(metricValue(samples, 'spec_guard_revert_duration_seconds_count')).toBe(1);
    expect(metricValue(samples, 'spec_guard_revert_duration_seconds_sum')).toBeLessThan(1);
    expect(metricValue(samples, 'spec_guard_leader')).toBe(1);
    expect(metricValue(samples, 'spec_guard_admission_layer_intact', { layer: 'stamp' })).toBe(1);
    expect(metricValue(samples, 'spec_guard_admission_layer_intact', { layer: 'guard' })).toBe(0);
    unregister();
  });

  it('2. the agent’s write while spec-guard is down, the admission policy in place, is trusted by continuity: learned, stamped, never reverted', async () => {
    await stopAll();
    let sg = await start(fileConfig);
    await sg.waitForLog(/became the leader/);
    await layerIntact(sg, 'guard');
    agentApply('sync-two', NS);
    await waitFor('stamped', async () => (await readApplication(NS, 'sync-two'))?.metadata?.annotations?.[STAMP_ANNOTATION]);
    await sg.stop();
    running.splice(running.indexOf(sg), 1);
    // Every replica down: the stamp webhook is skipped (failurePolicy Ignore), the policy holds.
    agentApply('sync-two', NS, { source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'v2', path: 'guestbook' } });
    const unstamped = (await readApplication(NS, 'sync-two'))!;
    expect(unstamped.spec.source.targetRevision).toBe('v2');
    expect(kubectl(ALICE, ['patch', 'application', '-n', NS, 'sync-two', '--type=merge', '-p', '{"spec":{"source":{"targetRevision":"evil"}}}']).stderr).toContain(POLICY_DENIED);
    sg = await start(fileConfig);
    await waitFor('the agent’s write stamped anew', async () => {
      const app = await readApplication(NS, 'sync-two');
      return app?.spec.source.targetRevision === 'v2' && app.metadata.annotations?.[STAMP_ANNOTATION] && app.metadata.resourceVersion !== unstamped.metadata.resourceVersion;
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect((await readApplication(NS, 'sync-two'))!.spec.source.targetRevision).toBe('v2');
    expect(sg.logs()).not.toMatch(/drift reverted.*sync-two/);
    await stopAll();
  });

  it('3. a change made while spec-guard was stopped, in a blind window, is reverted when it starts again with the same file store', async () => {
    await stopAll();
    unregister();
    alicePatch('sync-one', 'while-down');
    expect((await readApplication(NS, 'sync-one'))!.spec.source.targetRevision).toBe('while-down');
    const status = runCli(['status', '--config', fileConfig, '--kubeconfig', state().adminKubeconfig]);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/applications\.argoproj\.io argocd\/sync-one\s+changed, not stamped\s+\/spec\/source\/targetRevision/);
    expect(status.stdout).toMatch(/applications\.argoproj\.io argocd\/sync-two\s+in sync/);
    expect(status.stdout).toMatch(/^leader: none/m);
    expect(status.stdout).toMatch(/^layers: guard NOT in force without a gap .*; tombstone NOT in force/m);
    const sg = await start(fileConfig, ['--no-register']);
    await sg.waitForLog(/canonical state loaded.*"entries":[1-9]/);
    expect(await waitForRevision(NS, 'sync-one', 'HEAD', 10_000)).toBeLessThan(10_000);
    await waitFor('the UnattributedChange event', () => eventsFor(NS, 'sync-one', 'UnattributedChange').length > 0, 10_000, 250);
    expect(metricValue(parsePrometheusText(await sg.metrics()), 'spec_guard_unattributed_changes_total', { resource: 'applications.argoproj.io', change: 'update', action: 'revert' })).toBe(1);
  });

  it('4. alice’s delete in a blind window is undone where the rule says blindWindow.deletes: recreate; the agent’s delete through admission is final, also across a restart', async () => {
    await stopAll();
    const sg = await start(recreatingConfig);
    await sg.waitForLog(/became the leader/);
    agentApply('sync-four-alice', NS);
    agentApply('sync-four-agent', NS);
    await waitFor('stamped', async () => (await readApplication(NS, 'sync-four-alice'))?.metadata?.annotations?.[STAMP_ANNOTATION]);
    // Annotations are open to alice; 60 KB of hers, the stamp unchanged, must not become part of
    // the canonical copy (nor come back with a recreated object).
    kubectlOk(ALICE, ['annotate', 'application', '-n', NS, 'sync-four-alice', `example.com/bulk=${'b'.repeat(60_000)}`]);
    // The agent's next write (server-side apply leaves her annotation) is learned with a new stamp.
    const stampBefore = (await readApplication(NS, 'sync-four-alice'))!.metadata.annotations[STAMP_ANNOTATION];
    agentApply('sync-four-alice', NS, { source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook-v2' } });
    await waitFor('stamped anew', async () => (await readApplication(NS, 'sync-four-alice'))?.metadata?.annotations?.[STAMP_ANNOTATION] !== stampBefore);
    await new Promise((r) => setTimeout(r, 1000));
    // Behind admission: the configurations are gone for a moment (as after a bad uninstall).
    await sg.stop();
    running.splice(running.indexOf(sg), 1);
    unregister();
    const uid = (await readApplication(NS, 'sync-four-alice'))!.metadata.uid;
    kubectlOk(ALICE, ['delete', 'application', '-n', NS, 'sync-four-alice']);
    const back = await start(recreatingConfig);
    await waitFor('sync-four-alice recreated', async () => {
      const app = await readApplication(NS, 'sync-four-alice');
      return app && app.metadata.uid !== uid;
    });
    expect((await readApplication(NS, 'sync-four-alice'))!.spec.source.targetRevision).toBe('HEAD');
    expect(Object.keys((await readApplication(NS, 'sync-four-alice'))!.metadata.annotations ?? {})).not.toContain('example.com/bulk');
    await waitFor('the recreate event', () => eventsFor(NS, 'sync-four-alice', 'DeletedObjectRecreated').length > 0, 10_000, 250);
    // Through admission: the agent’s delete records a tombstone first.
    kubectlOk(AGENT, ['delete', 'application', '-n', NS, 'sync-four-agent']);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await readApplication(NS, 'sync-four-agent')).toBeUndefined();
    await back.stop();
    running.splice(running.indexOf(back), 1);
    const again = await start(recreatingConfig);
    await again.waitForLog(/became the leader/);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await readApplication(NS, 'sync-four-agent')).toBeUndefined();
    await stopAll();
    unregister();
  });

  it('5. two replicas with the secret store: A admits, leader B reverts; B dies and A reverts the next one', async () => {
    const b = await start(secretConfig, ['--no-register', '--identity', 'replica-b']);
    await b.waitForLog(/became the leader/);
    const a = await start(secretConfig, ['--no-register', '--identity', 'replica-a']);
    // Register replica A only, as a GitOps install would, from `spec-guard manifests`.
    const ca = Buffer.from(kubectlOk([], ['get', 'secret', '-n', 'spec-guard', 'spec-guard-tls', '-o', 'jsonpath={.data.ca\\.crt}']), 'base64');
    writeFileSync(join(dir, 'ca.crt'), ca);
    const manifests = runCli(['manifests', '--config', secretConfig, '--webhook-url', `https://127.0.0.1:${a.webhookPort}`, '--ca-bundle-file', join(dir, 'ca.crt')]);
    expect(manifests.code).toBe(0);
    kubectlOk([], ['apply', '-f', '-'], { input: manifests.stdout });
    agentApply('sync-five', NS);
    await waitFor('replica A stamped the agent’s write', async () => (await readApplication(NS, 'sync-five'))?.metadata?.annotations?.[STAMP_ANNOTATION]);
    expect(a.logs()).not.toMatch(/became the leader/);
    // A follower writes no store, and its gauge of canonical objects counted nothing for that.
    const known = async (sg: typeof a) => metricValue(parsePrometheusText(await sg.metrics()), 'spec_guard_canonical_objects', { resource: 'applications.argoproj.io' });
    await waitFor('replica A, a follower, counts the canonical objects it knows', async () => (await known(a)) >= 1, 5000);
    expect(await known(a)).toBe(await known(b));
    // alice bypasses admission: the configurations are removed first.
    unregister();
    alicePatch('sync-five', 'evil-1');
    expect(await waitForRevision(NS, 'sync-five', 'HEAD', 2000)).toBeLessThan(2000);
    await waitFor('B logged the revert', () => /drift reverted.*sync-five/.test(b.logs()), 5000);
    expect(a.logs()).not.toMatch(/drift reverted/);
    await b.stop('SIGKILL');
    await a.waitForLog(/became the leader/, 15_000);
    alicePatch('sync-five', 'evil-2');
    expect(await waitForRevision(NS, 'sync-five', 'HEAD', 2000)).toBeLessThan(2000);
    await waitFor('A logged the revert', () => /drift reverted.*sync-five/.test(a.logs()), 5000);
    await stopAll();
  });

  it('6. a trusted write racing a revert is never lost', async () => {
    const sg = await start(fileConfig, ['--no-register']);
    await sg.waitForLog(/became the leader/);
    installLayers(fileConfig, sg, LAYER_KINDS.stamp);
    await layerIntact(sg, 'stamp');
    agentApply('sync-six', NS);
    for (let i = 0; i < 8; i++) {
      const revision = `agent-${i}`;
      const alice = new Promise<void>((resolve) => {
        const child = spawn('kubectl', [...ALICE, 'patch', 'application', '-n', NS, 'sync-six', '--type=merge', '-p', JSON.stringify({ spec: { source: { targetRevision: `alice-${i}` } } })], {
          env: { ...process.env, KUBECONFIG: state().adminKubeconfig },
        });
        child.on('exit', () => resolve());
      });
      agentApply('sync-six', NS, { source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: revision, path: 'guestbook' } });
      await alice;
      // Whatever the order, once things settle the agent's write stands: either it came last,
      // or alice's came last and was reverted to the agent's.
      await waitForRevision(NS, 'sync-six', revision, 5000);
      await new Promise((r) => setTimeout(r, 300));
      expect((await readApplication(NS, 'sync-six'))!.spec.source.targetRevision).toBe(revision);
    }
  });

  it('7. the application-controller’s status writes went on throughout: never blocked, never reverted', async () => {
    controllerLoop.stop = true;
    await controllerLoop.done;
    expect(controllerLoop.failures).toEqual([]);
    expect(controllerLoop.writes).toBeGreaterThan(20);
    const app = await readApplication(NS, 'sync-status-loop');
    expect(app!.status.sync.status).toBe('Synced');
    expect(eventsFor(NS, 'sync-status-loop', 'SpecDriftReverted')).toEqual([]);
  });
});
