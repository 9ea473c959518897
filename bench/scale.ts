// bench/scale: 10,000 Applications of ~5 KB (BENCH_OBJECTS) in a real kube-apiserver. Prints
// spec-guard's start time to ready (every object listed) and to every object classified,
// its RSS and heap per object, the file store's bytes written for 1,000 changed objects, the
// time 1,000 objects drifted at once stay drifted, admission p99 with that cache side by side
// with an empty one, and, for both stores, a kill -9 in the middle of their largest write.
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { AGENT, ALICE, APPS, adminClient, apiserverClientCert, controlPlaneDown, controlPlanePids, controlPlaneUp, freePort, inParallel, metricsOf, percentile, releaseLease, restartApiserver, sleep, spawnSpecGuard, startSpecGuard, unregister, type RunningSpecGuard } from './cluster.js';
import { spawn } from 'node:child_process';
import { FileStore, SecretStore } from '../src/sync/index.js';
import { valuesText, type CanonicalEntry } from '../src/guard/index.js';
import type { KeyPair } from '../src/certs/index.js';
import { killDuringWrite } from './kill.js';
import { bulkyApplication, CONCURRENCY, describeBurst, driftBurst, OBJECT_BYTES, ownRevertTimes, patchMany } from './burst.js';
import { fileURLToPath } from 'node:url';
import { lineChart, savePicture } from './svg.js';
import { residentMb, SHIPPED_OPTIONS } from './shipped-options.js';

const COUNT = Number(process.env.BENCH_OBJECTS ?? 10_000);
/**
 * The shipped Node.js options are sized for 10,000 objects. Past that they follow the sizing
 * rule (docs/operations.md): a heap limit of 128 MB + 8 KB per object and a 32 MiB young generation.
 */
const shippedFor = (count: number) =>
  count <= 10_000 ? SHIPPED_OPTIONS : SHIPPED_OPTIONS.replace(/--max-old-space-size=\d+/, `--max-old-space-size=${Math.ceil(128 + (count * 8) / 1024)}`).replace(/--max-semi-space-size=\d+/, '--max-semi-space-size=32');
const SHIPPED = shippedFor(COUNT);
/** The counts at which a start is timed and its memory read, for the picture: a tenth, a quarter, a half (the whole is the main measurement). */
const STAGES = [...new Set([COUNT / 10, COUNT / 4, COUNT / 2].map(Math.round).filter((n) => n >= 500))];
/** Objects changed (by the agent) and drifted (by alice, behind admission) at once. */
const BATCH = Math.min(1000, COUNT);
const batchNames = Array.from({ length: BATCH }, (_, i) => `scale-${i}`);
/** Further settings to compare with the shipped ones, separated by "|" (BENCH_NODE_OPTIONS). */
const VARIANTS = [SHIPPED, ...(process.env.BENCH_NODE_OPTIONS ?? '').split('|').filter(Boolean)];

/** `/validate` at 500 reviews/s, each connection presenting `client` (the apiserver's certificate). */
async function p99(port: number, body: string, client: KeyPair): Promise<{ p50: number; p99: number; errors: number }> {
  const r = await autocannon({ url: `https://127.0.0.1:${port}/validate`, method: 'POST', body, headers: { 'content-type': 'application/json' }, tlsOptions: { cert: client.cert, key: client.key }, connections: 4, overallRate: 500, duration: 5 });
  return { p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

/** The state file and its log, in bytes; and when the snapshot was last rewritten. */
function storeFiles(path: string): { snapshot: number; log: number; rewritten: number } {
  const size = (f: string) => { try { return statSync(f); } catch { return undefined; } };
  const snapshot = size(path);
  return { snapshot: snapshot?.size ?? 0, log: size(`${path}.log`)?.size ?? 0, rewritten: snapshot?.mtimeMs ?? 0 };
}

const counter = (metrics: string, series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0);

/** The state Secrets (index, shards, tombstones, continuity): name → resourceVersion and data bytes. */
async function stateSecrets(kube: Awaited<ReturnType<typeof adminClient>>): Promise<Map<string, { rv: string; bytes: number }>> {
  const list = await kube.request<{ items: Array<{ metadata: { name: string; resourceVersion: string }; data?: Record<string, string> }> }>('GET', '/api/v1/namespaces/spec-guard/secrets');
  return new Map(
    list.items
      .filter((secret) => secret.metadata.name.startsWith('spec-guard-state'))
      .map((secret) => [secret.metadata.name, { rv: secret.metadata.resourceVersion, bytes: Object.values(secret.data ?? {}).reduce((n, v) => n + (v.length * 3) / 4, 0) }]),
  );
}

/** The state Secrets' names, metadata only (cheap enough to poll at 100,000 objects). */
async function stateSecretNames(kube: Awaited<ReturnType<typeof adminClient>>): Promise<string[]> {
  const list = await kube.request<{ items: Array<{ metadata: { name: string } }> }>('GET', '/api/v1/namespaces/spec-guard/secrets', {
    headers: { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' },
  });
  return list.items.map((item) => item.metadata.name).filter((name) => name.startsWith('spec-guard-state'));
}

/** Waits until the state Secrets stop changing for a second. */
async function secretsSettled(kube: Awaited<ReturnType<typeof adminClient>>): Promise<Map<string, { rv: string; bytes: number }>> {
  let last = '';
  let secrets = new Map<string, { rv: string; bytes: number }>();
  for (let stable = 0; stable < 4; ) {
    await sleep(250);
    secrets = await stateSecrets(kube);
    const now = JSON.stringify([...secrets]);
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  return secrets;
}

/**
 * Until no work queue of `run` holds a key (its metrics say), for at most 2 minutes: every
 * watch event it was sent is learned. A stop drops what is queued (a restart relists it), so
 * a store read after a stop holds all that was sent only once this returned.
 */
async function queuesIdle(run: RunningSpecGuard): Promise<void> {
  for (let waited = 0; waited < 120_000; waited += 250) {
    const depths = [...(await metricsOf(run)).matchAll(/^spec_guard_work_queue_depth\{[^}]*\} (\S+)$/gm)].map((m) => Number(m[1]));
    if (depths.length && depths.every((d) => d === 0)) return;
    await sleep(250);
  }
}

/** The Applications spec-guard knows canonical (classified), from its metrics. */
const canonicalKnown = (metrics: string) => Number(/spec_guard_canonical_objects\{resource="applications.argoproj.io"\} (\d+)/.exec(metrics)?.[1] ?? 0);

/** ms from spawn until every object is known canonical (its metrics say), polled for at most 2 minutes. */
async function everyObjectClassified(run: RunningSpecGuard): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < 120_000) {
    if (canonicalKnown(await metricsOf(run)) >= COUNT) break;
    await sleep(200);
  }
  return run.startMs + (Date.now() - started);
}

/** The admission layers spec-guard relies on are in force (its metrics say). */
async function layersIn(run: RunningSpecGuard): Promise<boolean> {
  const metrics = await metricsOf(run);
  return /spec_guard_admission_layer_intact\{layer="guard"\} 1/.test(metrics) && /spec_guard_admission_layer_intact\{layer="stamp"\} 1/.test(metrics);
}

/** The file store's log: its bytes, and the touches it holds (what a relist stores). */
function logged(path: string): { bytes: number; touches: number } {
  const log = existsSync(`${path}.log`) ? readFileSync(`${path}.log`, 'utf8') : '';
  return { bytes: Buffer.byteLength(log), touches: log.split('\n').filter((line) => line.startsWith('{"touch"')).length };
}

/** A Secret store's shard (`-g<generation>-<i>`) or journal (`-g<generation>-j<i>`), by its name. */
const SHARD_OR_JOURNAL = /-g\d+-j?\d+$/;

/** The lines of the file store's log past `offset` that hold `text`: how many, and their bytes. */
function logLinesSince(path: string, offset: number, text: string): { lines: number; bytes: number } {
  const file = `${path}.log`;
  const size = existsSync(file) ? statSync(file).size : 0;
  if (size <= offset) return { lines: 0, bytes: 0 };
  const tail = Buffer.alloc(size - offset);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, tail, 0, tail.length, offset);
  } finally {
    closeSync(fd);
  }
  const matching = tail.toString('utf8').split('\n').filter((line) => line.includes(text));
  return { lines: matching.length, bytes: matching.reduce((n, line) => n + Buffer.byteLength(line) + 1, 0) };
}

/** Waits until the file store's files have not changed for `quietMs`. */
async function settled(path: string, quietMs = 1000): Promise<void> {
  let last = '';
  for (let stable = 0; stable < quietMs / 250; ) {
    await sleep(250);
    const now = JSON.stringify(storeFiles(path));
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
}

/**
 * Leaves the file store as a run killed before its fold would: every entry written again, the
 * first 40 % twice, appended and never folded (the floor of this writer is infinite), so that
 * the superseded lines outweigh the live state and the next start folds at once. A first
 * start no longer folds what only grew: this gives the kill below the store's largest write.
 */
async function outweighLiveState(path: string): Promise<void> {
  const store = new FileStore(path, () => undefined, Infinity);
  const { entries } = await store.load();
  const keys = [...entries.keys()];
  const part = Math.ceil(keys.length * 0.4);
  for (const changed of [keys.slice(0, part), keys.slice(part, 2 * part), keys.slice(2 * part), keys.slice(0, part)]) await store.saveEntries(entries, new Set(changed));
}

async function main(): Promise<void> {
  const { admin, self } = controlPlaneUp();
  const kube = await adminClient(admin);
  const dir = mkdtempSync(join(tmpdir(), 'spec-guard-bench-scale-'));
  const config = (store: string) => {
    const file = join(dir, `${store}.yaml`);
    const where = store === 'secret' ? '' : `\n  path: ${join(dir, 'state.json')}`;
    writeFileSync(file, `resources:\n  - group: argoproj.io\n    resource: applications\n    namespaces: [argocd]\n    normalizer: argocd-application\nstore:\n  type: ${store}${where}\n`);
    return file;
  };
  await kube.request('DELETE', APPS).catch(() => undefined);
  await releaseLease(kube);
  for (const name of (await stateSecrets(kube).catch(() => new Map())).keys()) await kube.request('DELETE', `/api/v1/namespaces/spec-guard/secrets/${name}`);
  /**
   * The floor of a start: the apiserver's pages of every object (500 at a time, as spec-guard
   * lists), read and parsed by this process and nothing else done with them. Seconds.
   */
  const listAlone = async (): Promise<number> => {
    const started = Date.now();
    let token: string | undefined;
    do {
      const page = await kube.request<{ metadata?: { continue?: string } }>('GET', APPS, { query: { limit: '500', continue: token } });
      token = page.metadata?.continue || undefined;
    } while (token);
    return (Date.now() - started) / 1000;
  };
  /**
   * A new apiserver on the same etcd before a timed start at full size, as a start in production
   * meets one (not one grown by every list of the run), with its first list (which fills its
   * watch cache) done before: seconds of that first list, then of the pages alone just before the start.
   */
  const freshApiserver = async (): Promise<{ firstListS: number; listS: number }> => {
    restartApiserver();
    let firstListS: number | undefined;
    for (let attempt = 1; firstListS === undefined; attempt++) {
      try {
        firstListS = await listAlone();
      } catch (err) {
        // A connection kept from the old process: refused once, then a new one is opened.
        if (attempt === 5) throw err;
        await sleep(1000);
      }
    }
    return { firstListS, listS: await listAlone() };
  };
  /** A first start at `count` objects (a fresh file store, no registration): ready time, RSS at ready and 5 s later; and the list alone. */
  const timedStart = async (count: number) => {
    const file = join(dir, `curve-${count}.yaml`);
    writeFileSync(file, readFileSync(config('file'), 'utf8').replace('state.json', `curve-${count}.json`));
    const run = await startSpecGuard(self, file, ['--no-register'], shippedFor(count));
    const rssReady = residentMb(run.child.pid!);
    await sleep(5000);
    const rssSteady = residentMb(run.child.pid!);
    await run.stop();
    await releaseLease(kube);
    return { count, readyS: run.startMs / 1000, rssReady, rssSteady, listS: await listAlone() };
  };
  try {
    // Fill the cluster through admission, so every Application is stamped as in production;
    // at each stage on the way, a start (file store, fresh, as shipped) is timed to ready and
    // its memory read: the points of the picture before the whole.
    let filler = await startSpecGuard(self, config('memory'));
    let fillMs = 0;
    let filled = 0;
    const curve: Array<{ count: number; readyS: number; rssReady: number; rssSteady: number; listS: number }> = [];
    for (const stage of [...STAGES, COUNT]) {
      const started = Date.now();
      await inParallel(stage - filled, CONCURRENCY, async (k) => {
        const i = filled + k;
        await kube.request('POST', APPS, { body: bulkyApplication(`scale-${i}`, i), headers: AGENT, query: { fieldManager: 'argocd-agent' } }).catch((err: Error) => {
          if (!/409/.test(err.message)) throw err;
        });
      });
      fillMs += Date.now() - started;
      filled = stage;
      await filler.stop();
      await releaseLease(kube);
      if (stage === COUNT) break;
      curve.push(await timedStart(stage));
      filler = await startSpecGuard(self, config('memory'));
    }
    console.log(`bench/scale: created ${COUNT} Applications of ~${OBJECT_BYTES} bytes through admission in ${(fillMs / 1000).toFixed(1)} s`);

    // Memory, per Node.js setting: the same stored state, the same 10,000 objects.
    const memory: string[] = [];
    for (const options of VARIANTS.slice(1)) {
      const run = await startSpecGuard(self, config('file'), ['--no-register'], options);
      const ready = residentMb(run.child.pid!);
      await sleep(5000);
      memory.push(`  ${options.padEnd(56)} ready in ${(run.startMs / 1000).toFixed(1)} s, RSS ready ${ready.toFixed(0)} MB, steady ${residentMb(run.child.pid!).toFixed(0)} MB`);
      await run.stop();
      await releaseLease(kube);
    }
    const NODE_OPTIONS = SHIPPED;
    const statePath = join(dir, 'state.json');
    const fileApiserver = await freshApiserver();
    // Registered (stamp webhook, policy): the agent's writes below are stamped, as in production.
    const sgSpawned = Date.now();
    const sg = await startSpecGuard(self, config('file'), [], NODE_OPTIONS);
    const rssReady = residentMb(sg.child.pid!);
    // Ready means listed and serving; the objects listed are classified by the work queue, which may still run.
    const classifiedMs = await everyObjectClassified(sg);
    await sleep(Math.max(0, 5000 - (classifiedMs - sg.startMs))); // leadership, store written, steady state
    const rssSteady = residentMb(sg.child.pid!);
    const metrics = await metricsOf(sg);
    const canonical = canonicalKnown(metrics);
    const heapUsedMb = Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(metrics)?.[1]) / 1024 / 1024;
    // Registered, its layers come into force and (unless the store's continuity record already
    // holds them) a relist stores every object's raised revision, a touch each: not the cost of
    // a change, so waited for before measuring one.
    for (let waited = 0; !/spec_guard_admission_layer_intact\{layer="guard"\} 1/.test(await metricsOf(sg)) && waited < 60_000; waited += 500) await sleep(500);
    // Every object written once (a first start writes all it learns): the files alone cannot
    // tell, a snapshot being written shows as no file (one run measured its changes before it).
    for (let waited = 0; counter(await metricsOf(sg), 'spec_guard_store_entries') < COUNT && waited < 300_000; waited += 500) await sleep(500);
    const writtenAllS = (Date.now() - sgSpawned) / 1000;
    await settled(statePath, 5000);
    const stateBytes = storeFiles(statePath).snapshot + storeFiles(statePath).log;

    // The store's cost of change: the agent changes BATCH objects (stamped, learned, stored).
    const before = storeFiles(statePath);
    await patchMany(kube, AGENT, batchNames, 'agent-v2');
    // The watcher's writes wait twice as long as the last one took, and the last may have been
    // the whole state's: wait until every change is in the log (or the log was folded into a
    // new snapshot), then for quiet. Any other write (a touch) is no sign of them: at 100,000
    // the bench once measured 0.0 MB that way, the changes written later.
    let changes = { lines: 0, bytes: 0 };
    for (let waited = 0; waited < 300_000; waited += 500) {
      changes = logLinesSince(statePath, before.log, 'agent-v2');
      if (changes.lines >= BATCH || storeFiles(statePath).rewritten !== before.rewritten) break;
      await sleep(500);
    }
    await settled(statePath);
    const after = storeFiles(statePath);
    const folded = after.rewritten !== before.rewritten;
    // The changes' own lines; anything else appended meanwhile (touches of a relist still
    // running at 100,000) is reported apart.
    if (!folded) changes = logLinesSince(statePath, before.log, 'agent-v2');
    const written = folded ? after.snapshot + after.log : changes.bytes;
    const otherWritten = folded ? 0 : after.log - before.log - changes.bytes;

    // kill -9 in the middle of the file store's largest write: the snapshot a start folds a log
    // of superseded lines into. What the store held is read from a copy: loading folds too.
    await queuesIdle(sg);
    await sg.stop();
    await releaseLease(kube);
    await unregister(kube);
    await outweighLiveState(statePath);
    const fileReported: string[] = [];
    const fileStore = (path = statePath) => new FileStore(path, (msg) => fileReported.push(msg));
    const copy = join(mkdtempSync(join(tmpdir(), 'spec-guard-bench-state-')), 'state.json');
    copyFileSync(statePath, copy);
    copyFileSync(`${statePath}.log`, `${copy}.log`);
    const fileKill = await killDuringWrite({
      store: 'file',
      during: `the snapshot its start folds a ${(storeFiles(statePath).log / 1024 / 1024).toFixed(1)} MB log (superseded lines outweighing the live state) into being written`,
      before: await fileStore(copy).load(),
      start: () => spawnSpecGuard(self, config('file'), [], NODE_OPTIONS),
      writing: async () => readdirSync(dir).some((f) => f.startsWith('state.json.tmp-')),
      load: () => fileStore().load(),
      reported: fileReported,
      restart: () => startSpecGuard(self, config('file'), ['--no-register'], NODE_OPTIONS),
    });
    await releaseLease(kube);

    // The end of a blind window (no admission object since the kill above): once spec-guard
    // registers them and they are in force, a relist raises the revision every object in
    // sync is known canonical at. Stored as touches, not entries.
    // The start folds the log into the snapshot first: the log then holds what was written
    // since, which is the relist's touches once every object has one (it may begin before ready).
    const relisting = await startSpecGuard(self, config('file'), [], NODE_OPTIONS);
    for (let waited = 0; logged(statePath).touches < COUNT && waited < 300_000; waited += 1000) await sleep(1000);
    await settled(statePath);
    const { bytes: relistWritten, touches: touchLines } = logged(statePath);
    await relisting.stop();
    await releaseLease(kube);

    // The Secret store (the one several replicas share), the same objects: a new leader
    // writes it all once; then the cost of BATCH changed objects.
    const sharedApiserver = await freshApiserver();
    const shared = await startSpecGuard(self, config('secret'), [], NODE_OPTIONS);
    const sharedReadyRss = residentMb(shared.child.pid!);
    // Written once every object is classified and the store has been written (its usage gauge
    // is set after each write), then quiet.
    const storedAll = async () => {
      const metrics = await metricsOf(shared);
      return canonicalKnown(metrics) >= COUNT && Number(/^spec_guard_store_usage_ratio (\S+)/m.exec(metrics)?.[1] ?? 0) > 0;
    };
    // Also once the admission layers are in force: that relists and stores every object's
    // raised revision, which is not the cost of a change.
    for (let waited = 0; !((await storedAll()) && (await layersIn(shared))) && waited < 300_000; waited += 500) await sleep(500);
    await sleep(3000);
    const fullWrite = await secretsSettled(kube);
    const sharedSteadyRss = residentMb(shared.child.pid!);
    const sharedBytes = [...fullWrite.values()].reduce((n, s) => n + s.bytes, 0);
    await patchMany(kube, AGENT, batchNames, 'agent-v3');
    // The changes' own write, up to 300 s (one after the whole state's may wait twice as long
    // as that took: store-writer.ts); the line says so when none came, instead of "0.00 MB".
    const changeWaitMs = 300_000;
    let changeWritten = false;
    for (let waited = 0; !changeWritten && waited < changeWaitMs; waited += 250) {
      // A shard or journal new or rewritten: the continuity record's Secret (`-continuity`)
      // changes every 10 s on its own.
      changeWritten = [...(await stateSecrets(kube))].some(([name, secret]) => SHARD_OR_JOURNAL.test(name) && fullWrite.get(name)?.rv !== secret.rv);
      if (!changeWritten) await sleep(250);
    }
    const afterChange = await secretsSettled(kube);
    const sharedWritten = [...afterChange].filter(([name, s]) => fullWrite.get(name)?.rv !== s.rv).reduce((n, [, s]) => n + s.bytes, 0);
    const shards = [...afterChange.keys()].filter((name) => /-g\d+-\d+$/.test(name)).length;
    // kill -9 in the middle of its largest write: a new leader's, every entry into a new
    // generation of shards. Secrets quiet for a second is no proof that the last changes are
    // learned (at 100,000 a write waits twice as long as the last took): the queues are.
    await queuesIdle(shared);
    await shared.stop();
    await releaseLease(kube);
    await unregister(kube);
    const secretStore = () => new SecretStore(kube, 'spec-guard', 'spec-guard-state');
    // Shards and journals (`-g<generation>-<i>`, `-g<generation>-j<i>`): a new one is a write
    // in progress, before the index that would count it.
    const pieces = async () => new Set((await stateSecretNames(kube)).filter((name) => SHARD_OR_JOURNAL.test(name)));
    const piecesBefore = await pieces();
    const secretKill = await killDuringWrite({
      store: 'secret',
      during: 'a new shard or journal Secret written, not yet counted by the index',
      before: await secretStore().load(),
      start: () => spawnSpecGuard(self, config('secret'), [], NODE_OPTIONS),
      writing: async () => [...(await pieces())].some((name) => !piecesBefore.has(name)),
      load: () => secretStore().load(),
      reported: [],
      restart: () => startSpecGuard(self, config('secret'), ['--no-register'], NODE_OPTIONS),
      explain: async (key, before, after) => {
        const live = await kube.request<Record<string, any>>('GET', `${APPS}/${key.split('/').at(-1)}`);
        const value = (e: CanonicalEntry | undefined) => (e ? `${/agent-v\d/.exec(valuesText(e.valuesJson))?.[0] ?? '?'} rv ${e.resourceVersion} knownAt ${e.knownAt ?? '-'} seq ${e.seq}` : 'none');
        const writes = (live.metadata.managedFields ?? []).map((f: Record<string, string>) => `${f.manager} ${f.operation} ${f.time}`).join(', ');
        const guard = before.continuity?.ValidatingAdmissionPolicy;
        return `${key}: before ${value(before.entries.get(key))}; after ${value(after.entries.get(key))}; live ${live.spec.source.targetRevision} rv ${live.metadata.resourceVersion} stamp seq ${String(live.metadata.annotations?.['spec-guard.io/stamp'] ?? '').split('.')[2] ?? 'none'} (${writes}); the stored policy record ${JSON.stringify(guard)}`;
      },
    });
    await releaseLease(kube);
    // A restart reads it all back.
    const reread = await startSpecGuard(self, config('secret'), ['--no-register'], NODE_OPTIONS);
    const rereadMs = reread.startMs;
    await reread.stop();
    await releaseLease(kube);
    const secretLine = `secret store: ${shards} shards, ${(sharedBytes / 1024 / 1024).toFixed(1)} MB compressed in Secrets (${(sharedBytes / COUNT).toFixed(0)} bytes per object); first start to ready ${(shared.startMs / 1000).toFixed(1)} s, RSS ${sharedReadyRss.toFixed(0)} MB ready, ${sharedSteadyRss.toFixed(0)} MB once written; ${BATCH} changed objects wrote ${changeWritten ? `${(sharedWritten / 1024 / 1024).toFixed(2)} MB (journal and index)` : `nothing within ${changeWaitMs / 1000} s`}; restart to ready (reading the shards back) ${(rereadMs / 1000).toFixed(1)} s`;
    const sgAgain = await startSpecGuard(self, config('file'), [], NODE_OPTIONS);
    await sleep(5000); // leadership, the changes made meanwhile learned and stored: steady state
    // The relist that follows the layers coming into force classifies every object again (at
    // 100,000, tens of seconds of one busy thread): measured after it, not during it.
    for (let waited = 0; !(await layersIn(sgAgain)) && waited < 300_000; waited += 500) await sleep(500);
    await settled(statePath, 5000);

    // Admission with this cache (the object is one of the 10,000), then with an empty one.
    const stored = await kube.request<Record<string, any>>('GET', `${APPS}/scale-42`);
    const changed = structuredClone(stored);
    changed.spec.source.targetRevision = 'evil';
    const review = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'bench', kind: { group: 'argoproj.io', version: 'v1alpha1', kind: 'Application' },
        resource: { group: 'argoproj.io', version: 'v1alpha1', resource: 'applications' },
        name: 'scale-42', namespace: 'argocd', operation: 'UPDATE', userInfo: { username: 'alice', groups: ['developers'] },
        object: changed, oldObject: stored,
      },
    });
    const apiserverCert = apiserverClientCert(admin);
    const full = await p99(sgAgain.port, review, apiserverCert);
    await sgAgain.stop();

    // Reverts: BATCH objects drifted at once behind admission (no admission objects at all: a
    // blind window, whose changes are reverted by default).
    await unregister(kube);
    await releaseLease(kube);
    await sleep(2000); // the apiserver drops the deleted policy
    const watcher = await startSpecGuard(self, config('file'), ['--no-register'], NODE_OPTIONS);
    await sleep(3000);
    const cpuBefore = counter(await metricsOf(watcher), 'process_cpu_seconds_total');
    const burst = await driftBurst(kube, ALICE, batchNames, 'evil', { ...controlPlanePids(admin), 'spec-guard': watcher.child.pid! });
    await sleep(3000); // the Events the burst recorded, written
    const cpuPerRevertMs = ((counter(await metricsOf(watcher), 'process_cpu_seconds_total') - cpuBefore) * 1000) / Math.max(1, burst.latencies.length);
    const own = ownRevertTimes(watcher.logFile, batchNames);
    // The same writes without spec-guard (stopped below): the apiserver's own rate for them, the floor under any revert burst.
    await watcher.stop();
    const bare = await patchMany(kube, ALICE, batchNames, 'evil-again');
    const emptyPort = await freePort();
    const empty = spawn(process.execPath, [fileURLToPath(new URL('../src/cli.js', import.meta.url)), 'serve', '--standalone', '--config', config('memory'), '--port', String(emptyPort), '--metrics-port', '0', '--bind-address', '127.0.0.1', '--client-ca-file', apiserverCert.caFile, '--log-level', 'warn'], { stdio: 'ignore' });
    await sleep(2000);
    const none = await p99(emptyPort, review, apiserverCert);
    empty.kill();

    console.log(`start to ready with ${COUNT} objects (${VARIANTS.length > 1 ? "file store as the settings above left it" : "first start, file store"}; every object listed): ${(sg.startMs / 1000).toFixed(1)} s (target ≤ ${COUNT <= 10_000 ? 15 : 30} s); every object classified (canonical): ${(classifiedMs / 1000).toFixed(1)} s; every object written to the store by ${writtenAllS.toFixed(1)} s`);
    console.log(`canonical objects known: ${canonical}; with NODE_OPTIONS=${NODE_OPTIONS} (shipped): RSS at ready ${rssReady.toFixed(0)} MB, steady ${rssSteady.toFixed(0)} MB; V8 heap in use ${heapUsedMb.toFixed(0)} MB`);
    console.log(`memory per guarded object: canonical state ${(stateBytes / COUNT / 1024).toFixed(1)} KB stored, ${((heapUsedMb * 1024) / COUNT).toFixed(1)} KB of V8 heap in use (all of it, base included), ${((rssSteady * 1024) / COUNT).toFixed(1)} KB of RSS`);
    console.log(`the apiserver before each timed start at ${COUNT} (restarted on the same etcd; its first list fills its watch cache, then the pages alone): file store ${fileApiserver.firstListS.toFixed(1)} s, then ${fileApiserver.listS.toFixed(1)} s; Secret store ${sharedApiserver.firstListS.toFixed(1)} s, then ${sharedApiserver.listS.toFixed(1)} s; the same pages alone at the end of the run, from the apiserver that served everything since: ${(await listAlone()).toFixed(1)} s`);
    curve.push({ count: COUNT, readyS: sg.startMs / 1000, rssReady, rssSteady, listS: fileApiserver.listS });
    console.log(`memory and ready time against object count (first start, file store; RSS at ready / 5 s later; the apiserver's pages of every object read and parsed alone): ${curve.map((p) => `${p.count}: ready ${p.readyS.toFixed(1)} s (list alone ${p.listS.toFixed(1)} s), RSS ${p.rssReady.toFixed(0)} / ${p.rssSteady.toFixed(0)} MiB`).join('; ')}`);
    const byCount = (value: (p: (typeof curve)[number]) => number): Array<[number, number]> => curve.map((p) => [p.count, value(p)]);
    const targets = COUNT >= 100_000 ? { rss: 700, ready: 30 } : undefined;
    console.log(`pictures: ${savePicture('scale-memory.svg', lineChart(`bench:scale: spec-guard's memory against the objects it guards (~${OBJECT_BYTES} B each)`, 'guarded objects', 'RSS, MiB', [{ label: 'RSS at ready', points: byCount((p) => p.rssReady) }, { label: 'RSS 5 s later', points: byCount((p) => p.rssSteady) }], targets && { label: 'target at 100,000: 700 MiB', value: targets.rss }))}, ${savePicture('scale-ready.svg', lineChart("bench:scale: start to ready against the objects it guards (state loaded, all listed)", 'guarded objects', 'seconds', [{ label: 'start to ready', points: byCount((p) => p.readyS) }, { label: "the apiserver's pages alone", points: byCount((p) => p.listS) }], targets && { label: 'target at 100,000: 30 s', value: targets.ready }))}`);
    if (memory.length) console.log(`other Node.js settings, same state and objects:\n${memory.join('\n')}`);
    console.log(`file store: ${(written / 1024 / 1024).toFixed(1)} MB written for ${BATCH} changed objects (${(written / BATCH / 1024).toFixed(1)} KB each; state ${(stateBytes / 1024 / 1024).toFixed(0)} MB${folded ? '; the log folded into a new snapshot meanwhile' : ''}${!folded && changes.lines < BATCH ? `; only ${changes.lines} of them written within 300 s` : ''}${otherWritten > 0 ? `; ${(otherWritten / 1024).toFixed(0)} KB of other lines meanwhile` : ''}); the relist at the end of a blind window: ${(relistWritten / 1024 / 1024).toFixed(1)} MB written, ${touchLines} touches (${(relistWritten / Math.max(1, touchLines)).toFixed(0)} bytes each)`);
    console.log(`reverts, ${BATCH} of the ${COUNT} drifted at once (${CONCURRENCY} PATCHes at a time), spec-guard CPU ${cpuPerRevertMs.toFixed(2)} ms per revert:\n${describeBurst(burst, BATCH, own)}`);
    console.log(`the same ${BATCH} PATCHes without spec-guard: ${(bare.ms / 1000).toFixed(1)} s (${((BATCH * 1000) / bare.ms).toFixed(0)}/s, p50 ${percentile(bare.latencies, 50).toFixed(0)} ms, p99 ${percentile(bare.latencies, 99).toFixed(0)} ms)`);
    console.log(secretLine);
    for (const kill of [fileKill, secretKill]) console.log(kill.line);
    if (!fileKill.ok || !secretKill.ok) process.exitCode = 1;
    console.log(`admission /validate at 500 req/s: with ${COUNT} cached p50 ${full.p50} ms p99 ${full.p99} ms; empty cache p50 ${none.p50} ms p99 ${none.p99} ms (errors ${full.errors + none.errors})`);
  } finally {
    kube.close();
    if (!process.env.BENCH_KEEP) controlPlaneDown();
  }
}

await main();
