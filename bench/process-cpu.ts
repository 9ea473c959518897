import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** CPU time (user + system) a process has used so far, in µs. CPU per request holds on a busy machine where wall times do not. */
export function processCpuMicros(pid: number): number {
  return cpuMicrosOf(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** user + system time of one /proc stat line, in µs. */
function cpuMicrosOf(stat: string): number {
  // Fields after the parenthesized command name, which may itself hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1_000_000) / TICKS_PER_SECOND;
}

/**
 * CPU time so far of a process's threads, in µs, summed by thread name: Node.js names its
 * main thread after the process (`node`, `MainThread`), V8's collector and compiler helpers
 * `V8Worker`, libuv's pool `libuv-worker`. Threads that ended are not counted.
 */
export function threadCpuMicros(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    byName.set(name, (byName.get(name) ?? 0) + cpuMicrosOf(stat));
  }
  return byName;
}

/** CPU between two readings of threadCpuMicros, in ms per unit of work (`per`), by thread name, the busiest first. */
export function cpuByThread(before: Map<string, number>, after: Map<string, number>, per: number): string {
  return [...after]
    .map(([name, micros]) => [name, (micros - (before.get(name) ?? 0)) / 1000 / per] as const)
    .filter(([, ms]) => ms >= 0.005)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${ms.toFixed(2)}`)
    .join(', ');
}
