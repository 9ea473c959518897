import { readFileSync } from 'node:fs';

/**
 * The Node.js options manifests/ gives the container (NODE_OPTIONS), as production runs
 * spec-guard: the benches run it with these, not with Node's defaults.
 */
export const SHIPPED_OPTIONS = readFileSync(new URL('../../manifests/base/deployment.yaml', import.meta.url), 'utf8')
  .match(/name: NODE_OPTIONS\s+value: (.+)/)![1]!
  .trim();

/** The Node.js flags the image's entrypoint gives (those NODE_OPTIONS does not allow), before the script. */
export const ENTRYPOINT_FLAGS = (JSON.parse(/^ENTRYPOINT (.*)$/m.exec(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8'))![1]!) as string[]).filter((arg) => arg.startsWith('--'));

/** The command line's form of what the container runs with: the entrypoint's flags and NODE_OPTIONS (plain flags, no quoting). */
export const shippedFlags = (options = SHIPPED_OPTIONS): string[] => [...ENTRYPOINT_FLAGS, ...options.split(/\s+/).filter(Boolean)];

/** A process's resident set, in MiB, as Linux reports it (`field`: VmRSS now, VmHWM its peak). */
export const residentMb = (pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
