/**
 * The one retry policy: the wait before retry `failures` (1, 2, …) doubles from 200 ms to a
 * cap of 30 s, with ±20 % jitter so that replicas and keys do not retry in step.
 */
const BACKOFF_BASE_MS = 200;
const BACKOFF_MAX_MS = 30_000;

export function backoffMs(failures: number, random: () => number = Math.random): number {
  const exact = Math.min(BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1), BACKOFF_MAX_MS);
  return Math.round(exact * (0.8 + 0.4 * random()));
}
