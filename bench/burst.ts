// Shared by bench/scale and bench/revert: Applications of ~5 KB, PATCHed many at once, and the
// time each drift stayed in the apiserver, as a watch of our own sees it.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { APPS, application, inParallel, percentile, type adminClient } from './cluster.js';
import { processCpuMicros } from './process-cpu.js';

type Kube = Awaited<ReturnType<typeof adminClient>>;

export const OBJECT_BYTES = 5000;
/** Writers at once, for the drift as for any bulk write. */
export const CONCURRENCY = 32;

/** An Application of about OBJECT_BYTES of JSON (Helm parameters). */
export function bulkyApplication(name: string, i: number) {
  const parameters: Array<{ name: string; value: string }> = [];
  const app = application(name, { source: { repoURL: 'https://github.com/argoproj/argocd-example-apps.git', targetRevision: 'HEAD', path: 'guestbook', helm: { parameters } } });
  for (let p = 0; JSON.stringify(app).length < OBJECT_BYTES; p++) parameters.push({ name: `component${p}.replicas`, value: `${i}-${p}-${'x'.repeat(20)}` });
  return app;
}

/** PATCHes `names`' targetRevision, CONCURRENCY at a time: the time it took and each PATCH's latency (sorted, ms). */
export async function patchMany(kube: Kube, who: Record<string, string>, names: string[], revision: string): Promise<{ ms: number; latencies: number[] }> {
  const latencies: number[] = [];
  const started = Date.now();
  await inParallel(names.length, CONCURRENCY, async (i) => {
    const t = performance.now();
    await kube.request('PATCH', `${APPS}/${names[i]}`, { body: { spec: { source: { targetRevision: revision } } }, contentType: 'application/merge-patch+json', headers: who, query: { fieldManager: 'bench' } });
    latencies.push(performance.now() - t);
  });
  return { ms: Date.now() - started, latencies: latencies.sort((a, b) => a - b) };
}

export interface BurstResult {
  /** How long the drifting PATCHes took, all of them. */
  driftMs: number;
  /** Each drifting PATCH's latency (sorted, ms): the apiserver's latency for a write during the burst. */
  driftLatencies: number[];
  /** Per drifted object, ms from the watch showing its drift to the watch showing it gone (sorted). */
  latencies: number[];
  /** Drifts never seen reverted within the wait. */
  unreverted: number;
  /** From the last drift's PATCH response to the last revert seen. */
  afterLastMs: number;
  /** Per process (and `bench`, this one), the cores it kept busy on average from the first drift to the last revert. */
  cores: Record<string, number>;
}

/** CPU time of the given processes and of this one (µs), for the cores each used over a span. */
function cpuNow(pids: Record<string, number>): Record<string, number> {
  const usage = process.cpuUsage();
  return { ...Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, processCpuMicros(pid)])), bench: usage.user + usage.system };
}

/**
 * Drifts `names` at once (as `who`, to `revision`) and measures, per object, how long the
 * drift stayed: a watch (from the collection's current revision, so no initial list of
 * every object) notes when each object first shows `revision` and when it first shows
 * another one afterwards.
 */
export async function driftBurst(kube: Kube, who: Record<string, string>, names: string[], revision: string, pids: Record<string, number>, waitMs = 120_000): Promise<BurstResult> {
  const wanted = new Set(names);
  const driftSeen = new Map<string, number>();
  const revertSeen = new Map<string, number>();
  const { metadata } = await kube.request<{ metadata: { resourceVersion: string } }>('GET', APPS, { query: { limit: '1' } });
  const abort = new AbortController();
  // The apiserver closes a watch that falls behind: watch again from the last revision seen.
  let from = metadata.resourceVersion;
  const watching = (async () => {
    while (!abort.signal.aborted) {
      await kube
        .stream(APPS, { watch: '1', resourceVersion: from, allowWatchBookmarks: 'false' }, (raw) => {
          const now = performance.now();
          const object = (raw as { object: { metadata?: { name?: string; resourceVersion?: string }; spec?: { source?: { targetRevision?: string } } } }).object;
          from = object.metadata?.resourceVersion ?? from;
          const name = object.metadata?.name ?? '';
          if (!wanted.has(name)) return;
          if (object.spec?.source?.targetRevision === revision) {
            if (!driftSeen.has(name)) driftSeen.set(name, now);
          } else if (driftSeen.has(name) && !revertSeen.has(name)) revertSeen.set(name, now);
        }, abort.signal)
        .catch(() => undefined);
    }
  })();
  const cpuBefore = cpuNow(pids);
  const started = performance.now();
  const drift = await patchMany(kube, who, names, revision);
  const driftEnded = performance.now();
  for (const deadline = Date.now() + waitMs; revertSeen.size < names.length && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
  const cpuAfter = cpuNow(pids);
  const spanMicros = (performance.now() - started) * 1000;
  abort.abort();
  await watching;
  const last = Math.max(...revertSeen.values());
  return {
    driftMs: drift.ms,
    driftLatencies: drift.latencies,
    latencies: [...revertSeen].map(([name, at]) => at - driftSeen.get(name)!).sort((a, b) => a - b),
    unreverted: names.length - revertSeen.size,
    afterLastMs: last - driftEnded,
    cores: Object.fromEntries(Object.keys(cpuAfter).map((name) => [name, (cpuAfter[name]! - cpuBefore[name]!) / spanMicros])),
  };
}

/**
 * spec-guard's part of each revert of `names`, from its log (ms, each sorted): from its watch
 * event to the revert stored; of that, what was not the apiserver answering the PATCH, and
 * the wait for a repair slot. `skip`: the reverts of `names` logged before (an earlier burst).
 */
export function ownRevertTimes(logFile: string, names: string[], skip = 0): { total: number[]; own: number[]; queued: number[] } {
  const wanted = new Set(names);
  const entries = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"drift reverted"'))
    .map((line) => JSON.parse(line) as { key: string; ms: number; patchMs: number; queuedMs: number })
    .filter((entry) => wanted.has(entry.key.slice(entry.key.lastIndexOf('/') + 1)))
    .slice(skip);
  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  return { total: sorted(entries.map((e) => e.ms)), own: sorted(entries.map((e) => e.ms - e.patchMs)), queued: sorted(entries.map((e) => e.queuedMs)) };
}

export function describeBurst(r: BurstResult, of: number, part: ReturnType<typeof ownRevertTimes>): string {
  const f = (ms: number) => ms.toFixed(0);
  const q = (sorted: number[]) => `p50 ${f(percentile(sorted, 50))} ms, p99 ${f(percentile(sorted, 99))} ms`;
  return [
    `${of - r.unreverted} of ${of} reverted, the last ${(r.afterLastMs / 1000).toFixed(1)} s after the last drifting PATCH returned`,
    `  how long each drift stayed, as a watch sees it: ${q(r.latencies)}, max ${f(r.latencies.at(-1) ?? NaN)} ms`,
    `  spec-guard's part (its watch event to its revert stored, from its log): ${q(part.total)}, max ${f(part.total.at(-1) ?? NaN)} ms; of that, not waiting for the apiserver's answer to the revert: ${q(part.own)}, of which waiting for one of the repair slots: ${q(part.queued)}`,
    `  the apiserver meanwhile: the ${of} drifting PATCHes took ${(r.driftMs / 1000).toFixed(1)} s, each ${q(r.driftLatencies)}; the rest of the watch-to-watch time is its watch delivery`,
    `  cores kept busy from the first drift to the last revert (of ${availableParallelism()}): ${Object.entries(r.cores).map(([name, cores]) => `${name} ${cores.toFixed(2)}`).join(', ')}; all ${Object.values(r.cores).reduce((a, b) => a + b, 0).toFixed(2)}`,
  ].join('\n');
}
