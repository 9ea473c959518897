// bench/revert: time from a write that bypassed admission (no admission object registered) to
// spec-guard's revert being stored, through a real kube-apiserver: 200 drifts one after the
// other, then 1,000 Applications of ~5 KB drifted at once (BENCH_BURST), and again 6 s later
// (the process warm), beside the apiserver's own time for the same writes without spec-guard
// and the same bursts reverted by the smallest reverters in Node.js (with Node's default heap,
// and with spec-guard's shipped heap options) and Go; with BENCH_NODE_OPTIONS, other Node.js
// options taking turns with the shipped ones.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeClient } from '../src/kube/index.js';
import { AGENT, ALICE, APPS, adminClient, application, controlPlaneDown, controlPlanePids, controlPlaneUp, inParallel, metricsOf, percentile, releaseLease, sleep, startSpecGuard, unregister, type RunningSpecGuard } from './cluster.js';
import { bulkyApplication, CONCURRENCY, describeBurst, driftBurst, ownRevertTimes, patchMany, type BurstResult } from './burst.js';
import { buildGoReverter, startPeerReverter } from './go-peer.js';
import { barChart, cdfChart, savePicture } from './svg.js';
import { cpuByThread, processCpuMicros, threadCpuMicros } from './process-cpu.js';
import { SHIPPED_OPTIONS, shippedFlags } from './shipped-options.js';
import { benchReverterConfig } from './workload.js';

const BARE_REVERTER = fileURLToPath(new URL('./bare-reverter.js', import.meta.url));
/** node's arguments for the bare reverter: with Node's default heap, and in spec-guard's (the shipped heap options). */
const BARE_ARGS = { nodeDefaults: [BARE_REVERTER], shippedHeap: [...shippedFlags(), BARE_REVERTER] };
const DRIFTS = Number(process.env.BENCH_DRIFTS ?? 200);
const BURST = Number(process.env.BENCH_BURST ?? 1000);
const burstNames = Array.from({ length: BURST }, (_, i) => `bench-burst-${i}`);
/**
 * Node.js options to compare with the shipped ones (BENCH_NODE_OPTIONS, whole option sets
 * separated by "|"): each set and the shipped one take turns BENCH_CYCLES times, beside the
 * bare reverter, with Node's default heap and with the shipped heap options, as every cycle's
 * controls (optionsTakingTurns).
 */
const VARIANTS = (process.env.BENCH_NODE_OPTIONS ?? '').split('|').filter(Boolean);
const CYCLES = Number(process.env.BENCH_CYCLES ?? 3);
if (!Number.isInteger(CYCLES) || CYCLES < 1) throw new Error(`BENCH_CYCLES must be a whole number of at least 1, not "${process.env.BENCH_CYCLES}"`);

async function main(): Promise<void> {
  const { admin, self } = controlPlaneUp();
  const kube = await adminClient(admin);
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-revert-'));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, benchReverterConfig);
  await kube.request('DELETE', APPS).catch(() => undefined);
  await unregister(kube);
  await releaseLease(kube);
  // The agent creates the Application through spec-guard: stamped, so known canonical.
  // One Application per drift: the same one drifted again and again is a fight, which
  // spec-guard answers with growing waits between reverts (bench of its own in the e2e suite).
  const registering = await startSpecGuard(self, config);
  for (let i = 0; i < DRIFTS; i++) {
    await kube.request('POST', APPS, { body: application(`bench-revert-${i}`), headers: AGENT, query: { fieldManager: 'argocd-agent' } });
  }
  await inParallel(BURST, CONCURRENCY, async (i) => {
    await kube.request('POST', APPS, { body: bulkyApplication(burstNames[i]!, i), headers: AGENT, query: { fieldManager: 'argocd-agent' } });
  });
  await registering.stop();
  // Then no admission object at all: every drift below bypasses admission.
  await unregister(kube);
  await sleep(2000); // the apiserver drops a deleted policy at its next refresh
  await releaseLease(kube);
  // As production runs it: the shipped Node.js options (manifests/).
  const sg = await startSpecGuard(self, config, ['--no-register'], SHIPPED_OPTIONS);
  try {
    await sleep(1000); // listed and learned from its stamp
    // One watch sees both the bypassing write and the revert, in order: the latency is the
    // time between the two events.
    const drifted = new Map<number, number>();
    const reverted = new Map<number, number>();
    const abort = new AbortController();
    void kube
      .stream(
        APPS,
        { watch: '1' },
        (raw) => {
          const object = (raw as { object: { metadata?: { name?: string }; spec?: { source?: { targetRevision?: string } } } }).object;
          const i = Number(/^bench-revert-(\d+)$/.exec(object.metadata?.name ?? '')?.[1] ?? -1);
          const revision = object.spec?.source?.targetRevision;
          if (i < 0) return;
          if (revision === `drift-${i}`) drifted.set(i, performance.now());
          else if (revision === 'HEAD' && drifted.has(i) && !reverted.has(i)) reverted.set(i, performance.now());
        },
        abort.signal,
      )
      .catch(() => undefined);
    await sleep(300);
    const latencies: number[] = [];
    for (let i = 0; i < DRIFTS; i++) {
      await kube.request('PATCH', `${APPS}/bench-revert-${i}`, {
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

    await sleep(2000); // the lone drifts' Events written
    const pids = controlPlanePids(admin);
    const gcAtStart = await gcSeconds(sg);
    const cold = await measuredBurst(kube, pids, 'spec-guard', sg.child.pid!, 'evil');
    const gcAfterCold = await gcSeconds(sg);
    // spec-guard's own share, from its log: of the first burst.
    const own = ownRevertTimes(sg.logFile, burstNames);
    const warm = await warmBurst(kube, pids, 'spec-guard', sg.child.pid!, 'evil');
    const gcAfterWarm = await gcSeconds(sg);
    const ownWarm = ownRevertTimes(sg.logFile, burstNames, own.total.length);
    await sg.stop();
    // Before the writes below move the objects off their stamped value, which a new spec-guard learns from.
    const turns = VARIANTS.length ? await optionsTakingTurns(kube, admin, self, config) : undefined;
    const apiserverBefore = processCpuMicros(pids['kube-apiserver']);
    const alone = await patchMany(kube, ALICE, burstNames, 'evil-again');
    const apiserverMsPerPatch = (processCpuMicros(pids['kube-apiserver']) - apiserverBefore) / 1000 / BURST;
    // The floor: the same burst reverted by a bare Node.js watcher (bench/bare-reverter.ts)
    // that keeps 'evil-again' and does only the I/O a revert needs; then by its Go peer.
    const bare = await peerBursts(kube, admin, self, process.execPath, BARE_ARGS.nodeDefaults, 'evil-bare');
    // The same, in spec-guard's memory budget: the shipped heap options on its command line.
    const bareShipped = await peerBursts(kube, admin, self, process.execPath, BARE_ARGS.shippedHeap, 'evil-bare-shipped');
    const go = await peerBursts(kube, admin, self, buildGoReverter(), [], 'evil-go');
    const burst = cold.burst;

    const f = (n: number) => n.toFixed(1);
    console.log(`bench/revert: ${DRIFTS} Applications drifted one after the other, each reverted by spec-guard's watcher (no admission object registered)`);
    console.log(`time from the bypassing write to the stored revert: p50 ${f(percentile(latencies, 50))} ms, p99 ${f(percentile(latencies, 99))} ms, max ${f(latencies.at(-1)!)} ms`);
    console.log(`targets: p50 < 100 ms: ${percentile(latencies, 50) < 100 ? 'met' : 'NOT met'}; p99 < 500 ms: ${percentile(latencies, 99) < 500 ? 'met' : 'NOT met'}`);
    console.log(`${BURST} Applications of ~5 KB drifted at once (${CONCURRENCY} PATCHes at a time), spec-guard CPU ${cold.cpuMsPerRevert.toFixed(2)} ms per revert:\n${describeBurst(burst, BURST, own)}`);
    console.log(`the same ${BURST} drifted again ${BETWEEN_BURSTS_MS / 1000} s later (spec-guard warm): ${warm.cpuMsPerRevert.toFixed(2)} ms CPU per revert; each drift stayed p50 ${percentile(warm.burst.latencies, 50).toFixed(0)} ms, p99 ${percentile(warm.burst.latencies, 99).toFixed(0)} ms; spec-guard's own share p50 ${percentile(ownWarm.own, 50).toFixed(0)} ms, p99 ${percentile(ownWarm.own, 99).toFixed(0)} ms, of which waiting for a repair slot p99 ${percentile(ownWarm.queued, 99).toFixed(0)} ms`);
    console.log(`  spec-guard's CPU by thread, ms per revert: ${cold.byThread} in the first burst, ${warm.byThread} in the second`);
    console.log(`  of spec-guard's CPU, the collector's pauses: ${gcPerRevert(gcAtStart, gcAfterCold, cold)} in the first burst, ${gcPerRevert(gcAfterCold, gcAfterWarm, warm)} in the second`);
    console.log(`the same ${BURST} PATCHes without spec-guard: ${(alone.ms / 1000).toFixed(1)} s (${((BURST * 1000) / alone.ms).toFixed(0)}/s, p50 ${percentile(alone.latencies, 50).toFixed(0)} ms, p99 ${percentile(alone.latencies, 99).toFixed(0)} ms)`);
    console.log(`  ${apiserverFloor(apiserverMsPerPatch)}`);
    const ratio = (a: Measured, b: Measured) => `spec-guard ${(a.cpuMsPerRevert / b.cpuMsPerRevert).toFixed(2)}× that`;
    const peer = (r: { cold: Measured; warm: Measured }) =>
      `${r.cold.cpuMsPerRevert.toFixed(2)} ms CPU per revert (${ratio(cold, r.cold)}), warm ${r.warm.cpuMsPerRevert.toFixed(2)} ms (${ratio(warm, r.warm)}); ${r.cold.burst.latencies.length} of ${BURST} reverted, each drift stayed p50 ${percentile(r.cold.burst.latencies, 50).toFixed(0)} ms, p99 ${percentile(r.cold.burst.latencies, 99).toFixed(0)} ms; by thread ${r.cold.byThread}, warm ${r.warm.byThread}`;
    console.log(`the same burst reverted by the smallest watcher that reverts (list once, parse every watch event, one JSON patch and one Event per drift; no attribution, stamps, store or logs):\n  bare Node.js (bench/bare-reverter.ts, node:https): ${peer(bare)}\n  the same with spec-guard's shipped heap options (${SHIPPED_OPTIONS}): ${peer(bareShipped)}\n  Go (bench/go-reverter, encoding/json into a struct of the fields it reads, net/http over HTTP/2): ${peer(go)}`);
    if (turns) console.log(turns);
    const picture = cdfChart(`bench:revert: ${BURST} drifts at once, reverted; beside the apiserver's own PATCH latency and the smallest reverter`, 'ms', [
      { label: 'drift to revert (watch to watch)', values: burst.latencies },
      { label: "spec-guard's own share of a revert", values: own.own },
      { label: 'a PATCH, without spec-guard', values: alone.latencies },
      { label: 'drift to revert, the bare Node.js reverter', values: bare.cold.burst.latencies },
    ]);
    const bars = (pick: (r: { cold: Measured; warm: Measured }) => Measured) => [
      { label: 'spec-guard', value: pick({ cold, warm }).cpuMsPerRevert * 1000 },
      { label: 'bare Node.js', value: pick(bare).cpuMsPerRevert * 1000 },
      { label: 'bare Node.js, shipped heap', value: pick(bareShipped).cpuMsPerRevert * 1000 },
      { label: 'Go', value: pick(go).cpuMsPerRevert * 1000 },
    ];
    const cpu = barChart(`bench:revert: CPU per revert, bursts of ${BURST}, Events on`, 'CPU µs per revert', [
      { label: "a process's first burst", bars: bars((r) => r.cold) },
      { label: 'the same objects again, 6 s later', bars: bars((r) => r.warm) },
    ]);
    console.log(`pictures: ${savePicture('revert-cdf.svg', picture)}, ${savePicture('revert-cpu.svg', cpu)}`);
  } finally {
    await sg.stop();
    kube.close();
    if (!process.env.BENCH_KEEP) controlPlaneDown();
  }
}

/**
 * The apiserver's own cost of the same writes, the floor under any reverter's burst: what its
 * CPU per PATCH allows on this machine's cores, and how long the drifts and their reverts
 * keep it busy at the least.
 */
function apiserverFloor(msPerPatch: number): string {
  const cores = availableParallelism();
  const perSecond = (cores * 1000) / msPerPatch;
  return `the apiserver's CPU per PATCH: ${msPerPatch.toFixed(2)} ms, so at most ${perSecond.toFixed(0)} PATCHes/s on ${cores} cores doing nothing else; ${BURST} drifts and their ${BURST} reverts keep them busy at least ${((2 * BURST) / perSecond).toFixed(1)} s`;
}

/** The collector's pause time so far in spec-guard, by kind (prom-client's nodejs_gc_duration_seconds, from perf_hooks). */
async function gcSeconds(sg: RunningSpecGuard): Promise<Record<string, number>> {
  const seconds: Record<string, number> = {};
  for (const [, kind, value] of (await metricsOf(sg)).matchAll(/^nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)$/gm)) seconds[kind!] = Number(value);
  return seconds;
}

/** The pauses between two readings, in ms per revert of the burst: all, then by kind. */
function gcPerRevert(before: Record<string, number>, after: Record<string, number>, measured: Measured): string {
  const reverts = Math.max(1, measured.burst.latencies.length);
  const perRevert = (kind: string) => ((after[kind] ?? 0) - (before[kind] ?? 0)) * 1000 / reverts;
  const kinds = Object.keys(after).filter((kind) => perRevert(kind) > 0);
  const all = kinds.reduce((sum, kind) => sum + perRevert(kind), 0);
  return `${all.toFixed(2)} ms per revert (${kinds.map((kind) => `${kind} ${perRevert(kind).toFixed(2)}`).join(', ')})`;
}

/** After a burst, its reverter's CPU is counted this much longer: the Events it recorded are still being written. */
const AFTER_BURST_MS = 3000;
/** Between two bursts of the same objects: an Event series is written again at once 5 s after its last write. */
const BETWEEN_BURSTS_MS = 6000;

interface Measured {
  burst: BurstResult;
  cpuMsPerRevert: number;
  /** The same CPU by thread name (cpuByThread). */
  byThread: string;
}

/** The burst drifted to `revision` and reverted by the process `pid` (`name` in the cores line), its CPU from the first drift to 3 s after the last revert. */
async function measuredBurst(kube: KubeClient, pids: Record<string, number>, name: string, pid: number, revision: string): Promise<Measured> {
  const before = processCpuMicros(pid);
  const threadsBefore = threadCpuMicros(pid);
  const burst = await driftBurst(kube, ALICE, burstNames, revision, { ...pids, [name]: pid });
  await sleep(AFTER_BURST_MS);
  const reverts = Math.max(1, burst.latencies.length);
  return { burst, cpuMsPerRevert: (processCpuMicros(pid) - before) / 1000 / reverts, byThread: cpuByThread(threadsBefore, threadCpuMicros(pid), reverts) };
}

/**
 * The same objects drifted again, by the same process: warm, as a long-running reverter meets a
 * burst (its first burst also pays for compiling its code and opening its connections).
 */
async function warmBurst(kube: KubeClient, pids: Record<string, number>, name: string, pid: number, revision: string): Promise<Measured> {
  await sleep(BETWEEN_BURSTS_MS - AFTER_BURST_MS);
  return measuredBurst(kube, pids, name, pid, `${revision}-2`);
}

/**
 * The shipped Node.js options and each of VARIANTS taking turns, CYCLES times, the order rotated
 * every cycle, with the bare reverter in every cycle as the controls (Node's default heap, whose
 * V8 grows the old generation up to 4× what survived a full collection before the next, and the
 * shipped heap options, under whose 256 MB cap it grows it 1.3×): each turn a new spec-guard
 * meeting the burst twice, its options on node's command line (as an image's entrypoint would
 * give them; NODE_OPTIONS refuses most V8 flags). Options one run apart are compared with the
 * machine's drift between runs; taking turns, a difference smaller than each set's own spread
 * over its turns is the machine's.
 */
async function optionsTakingTurns(kube: KubeClient, admin: string, self: string, config: string): Promise<string> {
  const contenders: Array<{ name: string; run: (revision: string) => Promise<{ cold: Measured; warm: Measured }> }> = [
    ...[SHIPPED_OPTIONS, ...VARIANTS].map((options) => ({
      name: `spec-guard, ${options}${options === SHIPPED_OPTIONS ? ' (shipped)' : ''}`,
      run: (revision: string) => specGuardBursts(kube, admin, self, config, options, revision),
    })),
    { name: 'the bare Node.js reverter (control)', run: (revision: string) => peerBursts(kube, admin, self, process.execPath, BARE_ARGS.nodeDefaults, revision) },
    {
      name: 'the bare Node.js reverter with the shipped heap options (control)',
      run: (revision: string) => peerBursts(kube, admin, self, process.execPath, BARE_ARGS.shippedHeap, revision),
    },
  ];
  const runs = contenders.map(() => [] as Array<{ cold: Measured; warm: Measured }>);
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    for (let turn = 0; turn < contenders.length; turn++) {
      const index = (turn + cycle) % contenders.length;
      runs[index]!.push(await contenders[index]!.run(`evil-turn-${cycle}-${turn}`));
    }
  }
  const ms = (values: number[]) => `${values.map((v) => v.toFixed(2)).join(', ')} (mean ${(values.reduce((a, b) => a + b, 0) / values.length).toFixed(2)})`;
  const row = (name: string, measured: Array<{ cold: Measured; warm: Measured }>) =>
    `  ${name}: first ${ms(measured.map((m) => m.cold.cpuMsPerRevert))}; second ${ms(measured.map((m) => m.warm.cpuMsPerRevert))}`;
  return [
    `Node.js options taking turns, ${CYCLES} cycles, the order rotated each cycle (CPU ms per revert in each turn's first and second burst):`,
    ...contenders.map((c, i) => row(c.name, runs[i]!)),
  ].join('\n');
}

/** A spec-guard with `options` on node's command line, the burst drifted to `revision` and reverted by it twice (cold, then warm), stopped. */
async function specGuardBursts(kube: KubeClient, admin: string, self: string, config: string, options: string, revision: string): Promise<{ cold: Measured; warm: Measured }> {
  await releaseLease(kube);
  const sg = await startSpecGuard(self, config, ['--no-register'], '', shippedFlags(options));
  try {
    await sleep(1000); // listed and learned from its stamp
    return await firstAndSecondBurst(kube, admin, 'spec-guard', sg.child.pid!, revision);
  } finally {
    await sg.stop();
  }
}

/**
 * A peer reverter (`command` `args` SERVER CA CERT KEY NAMESPACE) as spec-guard's identity:
 * started, the burst drifted to `revision` and reverted by it twice (cold, then warm), its CPU
 * per revert counted as spec-guard's is, stopped.
 */
async function peerBursts(kube: KubeClient, admin: string, selfKubeconfig: string, command: string, args: string[], revision: string): Promise<{ cold: Measured; warm: Measured }> {
  const child = await startPeerReverter(command, args, selfKubeconfig);
  try {
    return await firstAndSecondBurst(kube, admin, 'peer', child.pid!, revision);
  } finally {
    child.kill();
  }
}

/** The burst drifted to `revision` and reverted by the process `pid` twice: its first burst, then warm. */
async function firstAndSecondBurst(kube: KubeClient, admin: string, name: string, pid: number, revision: string): Promise<{ cold: Measured; warm: Measured }> {
  const pids = controlPlanePids(admin);
  const cold = await measuredBurst(kube, pids, name, pid, revision);
  return { cold, warm: await warmBurst(kube, pids, name, pid, revision) };
}

await main();
