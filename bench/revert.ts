// bench/revert: time from a write that bypassed admission (no webhook registered) to
// spec-guard's revert being stored, over 200 drifts, through a real kube-apiserver.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT, ALICE, APPS, adminClient, application, controlPlaneDown, controlPlaneUp, percentile, sleep, startSpecGuard } from './cluster.js';

const DRIFTS = Number(process.env.BENCH_DRIFTS ?? 200);

async function main(): Promise<void> {
  const { admin, self } = controlPlaneUp();
  const kube = await adminClient(admin);
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-revert-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, 'resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    normalizer: argocd-application\nstore:\n  type: memory\n');
  await kube.request('DELETE', APPS).catch(() => undefined);
  await kube.request('DELETE', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/spec-guard').catch(() => undefined);
  await kube.request('DELETE', '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/spec-guard').catch(() => undefined);
  await kube.request('DELETE', '/apis/coordination.k8s.io/v1/namespaces/spec-guard/leases/spec-guard').catch(() => undefined);
  const sg = await startSpecGuard(self, config, ['--no-register']);
  try {
    await kube.request('POST', APPS, { body: application('bench-revert'), headers: AGENT, query: { fieldManager: 'argocd-agent' } });
    await sleep(1000); // learned and re-stamped
    // One watch sees both the bypassing write and the revert, in order: the latency is the
    // time between the two events.
    const drifted = new Map<number, number>();
    const reverted = new Map<number, number>();
    let last = -1;
    const abort = new AbortController();
    void kube
      .stream(
        APPS,
        { watch: '1', fieldSelector: 'metadata.name=bench-revert' },
        (raw) => {
          const revision = (raw as { object: { spec?: { source?: { targetRevision?: string } } } }).object.spec?.source?.targetRevision;
          const match = /^drift-(\d+)$/.exec(revision ?? '');
          if (match) {
            last = Number(match[1]);
            drifted.set(last, performance.now());
          } else if (revision === 'HEAD' && last >= 0 && !reverted.has(last)) {
            reverted.set(last, performance.now());
          }
        },
        abort.signal,
      )
      .catch(() => undefined);
    await sleep(300);
    const latencies: number[] = [];
    for (let i = 0; i < DRIFTS; i++) {
      await kube.request('PATCH', `${APPS}/bench-revert`, {
        body: { spec: { source: { targetRevision: `drift-${i}` } } },
        contentType: 'application/merge-patch+json',
        headers: ALICE,
      });
      const deadline = Date.now() + 5000;
      while (!reverted.has(i) && Date.now() < deadline) await sleep(1);
      if (!reverted.has(i)) throw new Error(`drift ${i} not reverted within 5 s`);
      latencies.push(reverted.get(i)! - drifted.get(i)!);
    }
    abort.abort();
    latencies.sort((a, b) => a - b);
    const f = (n: number) => n.toFixed(1);
    console.log(`bench/revert: ${DRIFTS} drifts of one Application, each reverted by spec-guard's watcher (no webhook registered)`);
    console.log(`time from the bypassing write to the stored revert: p50 ${f(percentile(latencies, 50))} ms, p99 ${f(percentile(latencies, 99))} ms, max ${f(latencies.at(-1)!)} ms`);
    console.log(`targets: p50 < 100 ms: ${percentile(latencies, 50) < 100 ? 'met' : 'NOT met'}; p99 < 500 ms: ${percentile(latencies, 99) < 500 ? 'met' : 'NOT met'}`);
  } finally {
    await sg.stop();
    kube.close();
    if (!process.env.BENCH_KEEP) controlPlaneDown();
  }
}

await main();
