import { revision, type LayerRecord, type Period } from './attribution.js';

/** How many ended periods each admission object's record keeps: enough to outlast a blind window and a restart. */
export const EARLIER_PERIODS = 3;

/** The period a record's version has been verified over so far (a record stored before `verifiedAt` existed: its start alone). */
export const periodOf = (record: LayerRecord): Period => ({ since: record.since, sinceTime: record.sinceTime, until: record.verifiedAt ?? record.since });

/** Every period a record knows of, its own first. */
export const periodsOf = (record: LayerRecord): Period[] => [periodOf(record), ...(record.earlier ?? [])];

/** The record's version verified in force up to `asOf`, when that is later than it was (else the same record). */
export function verifiedUpTo(record: LayerRecord, asOf: string | undefined): LayerRecord {
  const at = revision(asOf);
  const until = revision(periodOf(record).until);
  return at !== undefined && until !== undefined && at > until ? { ...record, verifiedAt: asOf } : record;
}

/** A new version's record: the one it replaces ends its period, kept among the earlier ones. */
export const succeeding = (next: Omit<LayerRecord, 'earlier' | 'verifiedAt'>, replaced: LayerRecord | undefined): LayerRecord => ({
  ...next,
  verifiedAt: next.since,
  ...(replaced ? { earlier: periodsOf(replaced).slice(0, EARLIER_PERIODS) } : {}),
});

/** Where two periods overlap (both objects of a layer in force), if they do. */
function overlap(a: Period, b: Period): Period | undefined {
  const [as, bs, au, bu] = [a.since, b.since, a.until, b.until].map(revision);
  if (as === undefined || bs === undefined || au === undefined || bu === undefined) return undefined;
  const [since, from] = as >= bs ? [a.since, as] : [b.since, bs];
  const [until, to] = au <= bu ? [a.until, au] : [b.until, bu];
  if (from > to) return undefined;
  return { since, sinceTime: Math.max(a.sinceTime, b.sinceTime), until };
}

/**
 * The periods a layer made of several admission objects was verified in force: where every
 * object's periods overlap. Nothing when an object has no record.
 */
export function layerPeriods(records: Array<LayerRecord | undefined>): Period[] {
  if (records.length === 0 || records.some((r) => !r)) return [];
  return (records as LayerRecord[]).map(periodsOf).reduce((acc, periods) => acc.flatMap((a) => periods.flatMap((b) => overlap(a, b) ?? [])));
}
