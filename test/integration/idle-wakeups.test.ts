import { readFileSync } from 'node:fs';
import { describe, expect, it, jest } from '@jest/globals';
import { applicationsConfig, startStandalone } from '../helpers/cli.js';

jest.setTimeout(30_000);

/** How often the kernel has put a thread to sleep at its own request: each time its event loop waited for something to wake it. */
const voluntarySwitches = (pid: number): number =>
  Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))![1]);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an idle spec-guard', () => {
  // prom-client samples the event loop's delay with a timer, every 10 ms unless told: an idle
  // replica woke 100 times a second, 9 ms of CPU a second on this machine, and every review
  // at a moderate rate paid its share (docs/benchmarks.md, round 22).
  it('lets its event loop sleep: a few wakeups a second, not one every 10 ms', async () => {
    const daemon = startStandalone(applicationsConfig());
    try {
      await daemon.waitForLog(/spec-guard ready/);
      await sleep(1000);
      const pid = daemon.child.pid!;
      const before = voluntarySwitches(pid);
      await sleep(3000);
      const perSecond = (voluntarySwitches(pid) - before) / 3;
      // 100 ms sampling: about 10 a second; the old 10 ms: about 100.
      expect(perSecond).toBeGreaterThan(0);
      expect(perSecond).toBeLessThan(30);
    } finally {
      await daemon.stop();
    }
  });
});
