import { readFileSync } from 'node:fs';

/**
 * The Node.js options manifests/ gives the container (NODE_OPTIONS), as production runs
 * spec-guard: the benches run it with these, not with Node's defaults.
 */
export const SHIPPED_OPTIONS = readFileSync(new URL('../../manifests/base/deployment.yaml', import.meta.url), 'utf8')
  .match(/name: NODE_OPTIONS\s+value: (.+)/)![1]!
  .trim();

/** The command-line form of NODE_OPTIONS (no quoting: the shipped options are plain flags). */
export const shippedFlags = (options = SHIPPED_OPTIONS): string[] => options.split(/\s+/).filter(Boolean);

/** A process's resident set, in MiB, as Linux reports it (`field`: VmRSS now, VmHWM its peak). */
export const residentMb = (pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
