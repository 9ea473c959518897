// Used by bench/scale: kill -9 spec-guard while its store writes every entry (the file store's
// snapshot, a new leader's write of the Secret store), restart it, and show nothing is lost.
import { readFileSync } from 'node:fs';
import type { Snapshot } from '../src/sync/index.js';
import { valuesText } from '../src/guard/index.js';
import { metricsOf, sleep, type RunningSpecGuard, type SpawnedSpecGuard } from './cluster.js';

export interface KillResult {
  ok: boolean;
  line: string;
}

/**
 * Keys missing from `after`, or whose canonical value (or object identity) differs from
 * `before`; and, apart, those whose value is newer (a later stamp's sequence, of the same
 * copy): a trusted write the stopped leader had not stored, which the start learned from
 * its stamp. A cut write cannot make one of those.
 */
function compare(before: Snapshot, after: Snapshot): { problems: Array<{ key: string; what: 'missing' | 'changed' }>; learned: number } {
  const problems: Array<{ key: string; what: 'missing' | 'changed' }> = [];
  let learned = 0;
  for (const [key, entry] of before.entries) {
    const now = after.entries.get(key);
    // Values compare by their text: a store packs each entry as it reads it (two reads, two packed objects).
    const same = now && valuesText(now.valuesJson) === valuesText(entry.valuesJson) && now.viewHash === entry.viewHash && now.uid === entry.uid;
    if (!now) problems.push({ key, what: 'missing' });
    else if (!same && now.uid === entry.uid && (now.seq ?? 0) > (entry.seq ?? 0)) learned++;
    else if (!same) problems.push({ key, what: 'changed' });
  }
  return { problems, learned };
}

const metric = (metrics: string, pattern: RegExp) => [...metrics.matchAll(pattern)].reduce((n, m) => n + Number(m[1]), 0);

/**
 * Starts spec-guard (`start`), kills it -9 as soon as `writing()` says its store is in the
 * middle of the write (from the spawn on: a start's own writes count), then reads the store (`load`) and compares it with `before`; finally
 * starts it again (`restart`) and checks it knows every object and reverts or recreates none.
 */
export async function killDuringWrite(o: {
  store: string;
  /** What `writing()` looks for, for the report. */
  during: string;
  before: Snapshot;
  start: () => Promise<SpawnedSpecGuard>;
  writing: () => Promise<boolean>;
  load: () => Promise<Snapshot>;
  /** What loading the store reported (a cut write set aside, a corrupt file moved aside). */
  reported: string[];
  restart: () => Promise<RunningSpecGuard>;
  /** For a failed check: what the live object and the two stores say of a key that differs. */
  explain?: (key: string, before: Snapshot, after: Snapshot) => Promise<string>;
}): Promise<KillResult> {
  const run = await o.start();
  run.ready.catch(() => undefined); // killed before ready, as likely as not
  const started = Date.now();
  let caught = false;
  for (; Date.now() - started < 300_000; await sleep(5)) {
    if (await o.writing()) {
      caught = true;
      break;
    }
  }
  run.child.kill('SIGKILL');
  await new Promise((resolve) => (run.child.exitCode !== null || run.child.signalCode !== null ? resolve(undefined) : run.child.once('exit', resolve)));
  if (!caught) return { ok: false, line: `${o.store} store: no whole-state write seen within 300 s of the start; nothing was killed mid-write (its log: ${run.logFile})` };
  const killedAfter = Date.now() - started;

  const after = await o.load();
  const { problems, learned } = compare(o.before, after);
  const again = await o.restart();
  await sleep(3000);
  const metrics = await metricsOf(again);
  await again.stop();
  const logs = readFileSync(again.logFile, 'utf8').split('\n');
  const loaded = logs.find((l) => l.includes('"canonical state loaded"'));
  const known = loaded ? (JSON.parse(loaded) as { entries: number }).entries : 0;
  const reverts = metric(metrics, /^spec_guard_reverts_total\{[^}]*\} (\S+)$/gm);
  const recreates = metric(metrics, /^spec_guard_recreates_total\{[^}]*\} (\S+)$/gm);
  const ok = problems.length === 0 && known === o.before.entries.size && reverts === 0 && recreates === 0;
  const detail = problems.length ? ` (${problems.slice(0, 3).map((p) => `${p.key}: ${p.what}`).join('; ')}${problems.length > 3 ? ', …' : ''})` : '';
  const reverted = logs.filter((l) => l.includes('"drift reverted"')).map((l) => (JSON.parse(l) as { key: string }).key);
  const explain = (keys: string[]) => Promise.all(keys.map((key) => o.explain!(key, o.before, after)));
  const explained =
    ok || !o.explain ? [] : [...(await explain(problems.slice(0, 3).map((p) => p.key))), ...(await explain(reverted.slice(0, 3))).map((e) => `reverted by the restart: ${e}`)];
  return {
    ok,
    line: `${o.store} store, kill -9 ${(killedAfter / 1000).toFixed(1)} s after the start, ${o.during}; of ${o.before.entries.size} entries ${problems.length} lost or changed${detail} (${learned} newer: trusted writes learned since); restarted: ${known} loaded, ${reverts} reverts, ${recreates} recreates; loading it reported: ${o.reported.length ? o.reported.join('; ') : 'nothing'} — ${ok ? 'nothing lost' : 'FAILED'}${explained.map((e) => `\n  ${e}`).join('')}`,
  };
}
