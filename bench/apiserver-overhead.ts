// bench/apiserver-overhead: latency of Application UPDATEs through a real kube-apiserver
// at 20 concurrent writers, without and with spec-guard registered, in one run.
//   agent spec update     trusted: goes through the stamping webhook
//   controller status     untrusted but not a guarded change: matchConditions skip the webhook
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient } from '../src/kube/index.js';
import { AGENT, APPS, adminClient, application, controlPlaneDown, controlPlaneUp, percentile, sleep, startSpecGuard } from './cluster.js';

const WRITERS = 20;
const UPDATES_PER_WRITER = Number(process.env.BENCH_UPDATES ?? 100);
const CONTROLLER = { 'Impersonate-User': 'system:serviceaccount:argocd:argocd-application-controller' };

/** Each writer updates its own Application; `paceMs` > 0 spaces a writer's updates (open loop). */
async function run(kube: KubeClient, label: string, body: (writer: number, n: number) => object, headers: Record<string, string>, paceMs = 0) {
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const t0 = performance.now() + (paceMs * w) / WRITERS;
      for (let n = 0; n < UPDATES_PER_WRITER; n++) {
        if (paceMs) await sleep(Math.max(0, t0 + n * paceMs - performance.now()));
        const started = performance.now();
        await kube.request('PATCH', `${APPS}/overhead-${w}`, { body: body(w, n), contentType: 'application/merge-patch+json', headers, query: { fieldManager: headers === AGENT ? 'argocd-agent' : undefined } });
        latencies.push(performance.now() - started);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return { label, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function main(): Promise<void> {
  const { admin, self } = controlPlaneUp();
  const kube = await adminClient(admin);
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-overhead-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, 'resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    normalizer: argocd-application\nstore:\n  type: memory\n');
  for (const kind of ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations']) {
    await kube.request('DELETE', `/apis/admissionregistration.k8s.io/v1/${kind}/spec-guard`).catch(() => undefined);
  }
  await kube.request('DELETE', APPS).catch(() => undefined);
  for (let w = 0; w < WRITERS; w++) {
    await kube.request('POST', APPS, { body: application(`overhead-${w}`), headers: AGENT, query: { fieldManager: 'argocd-agent' } });
  }
  const spec = (w: number, n: number) => ({ spec: { source: { targetRevision: `rev-${w}-${n}-${Math.random()}` } } });
  const status = (_w: number, n: number) => ({ status: { reconciledAt: `n-${n}-${Math.random()}` } });
  const cases = [
    { name: 'agent spec update, closed loop', body: spec, headers: AGENT, paceMs: 0 },
    { name: 'status update, closed loop', body: status, headers: CONTROLLER, paceMs: 0 },
    { name: 'agent spec update, 100/s total', body: spec, headers: AGENT, paceMs: 200 },
  ];
  try {
    await run(kube, 'warm-up', spec, AGENT);
    const without: Array<{ label: string; p50: number; p99: number }> = [];
    for (const c of cases) without.push(await run(kube, c.name, c.body, c.headers, c.paceMs));
    const sg = await startSpecGuard(self, config, [], process.env.BENCH_SG_NODE_OPTIONS ?? '');
    await sleep(1000);
    const withGuard: Array<{ label: string; p50: number; p99: number }> = [];
    for (const c of cases) withGuard.push(await run(kube, c.name, c.body, c.headers, c.paceMs));
    const calls = (await (await fetch(`http://127.0.0.1:${sg.metricsPort}/metrics`)).text())
      .split('\n')
      .filter((l) => l.startsWith('spec_guard_admission_requests_total{'));
    await sg.stop();
    console.log(`bench/apiserver-overhead: ${WRITERS} concurrent writers × ${UPDATES_PER_WRITER} UPDATEs each, real kube-apiserver + etcd on this machine`);
    console.log(`${'case'.padEnd(32)} | without p50 / p99 ms | with spec-guard p50 / p99 ms | p99 ratio`);
    console.log(`webhook calls made by the apiserver during the run with spec-guard (the apiserver re-runs admission when a PATCH meets a stale cache):\n  ${calls.join('\n  ')}`);
    cases.forEach((c, i) => {
      const a = without[i]!;
      const b = withGuard[i]!;
      console.log(`${c.name.padEnd(32)} | ${a.p50.toFixed(1).padStart(7)} / ${a.p99.toFixed(1).padStart(6)}      | ${b.p50.toFixed(1).padStart(7)} / ${b.p99.toFixed(1).padStart(6)}              | ${(b.p99 / a.p99).toFixed(2)} (target < 1.10)`);
    });
  } finally {
    kube.close();
    if (!process.env.BENCH_KEEP) controlPlaneDown();
  }
}

await main();
