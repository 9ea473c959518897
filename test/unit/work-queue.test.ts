import { describe, expect, it } from '@jest/globals';
import { backoffMs, WorkQueue } from '../../src/kube/index.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe('the work queue', () => {
  it('runs one at a time per key; adds during a run make exactly one more run, which sees the newest state', async () => {
    const state = new Map<string, number>();
    const seen: number[] = [];
    let concurrent = 0;
    let most = 0;
    const queue = new WorkQueue(async (key) => {
      concurrent++;
      most = Math.max(most, concurrent);
      seen.push(state.get(key)!);
      await tick(20);
      concurrent--;
    });
    state.set('a', 1);
    const first = queue.addAndWait('a');
    await tick(5);
    for (let v = 2; v <= 5; v++) {
      state.set('a', v);
      queue.add('a');
    }
    await first;
    await queue.addAndWait('a');
    expect(most).toBe(1);
    expect(seen).toEqual([1, 5, 5]);
  });

  it('bounds the runs across keys', async () => {
    let concurrent = 0;
    let most = 0;
    const queue = new WorkQueue(async () => {
      most = Math.max(most, ++concurrent);
      await tick(5);
      concurrent--;
    }, { concurrency: 3 });
    await Promise.all(Array.from({ length: 20 }, (_, i) => queue.addAndWait(`k${i}`)));
    expect(most).toBe(3);
  });

  it('retries a failing key with the backoff policy, then succeeds; addAndWait() resolves with the success', async () => {
    let calls = 0;
    const errors: Array<number | undefined> = [];
    const queue = new WorkQueue(async () => {
      if (++calls < 3) throw new Error(`fail ${calls}`);
    }, { onError: (_k, _e, retryIn) => errors.push(retryIn) });
    const started = Date.now();
    await queue.addAndWait('x');
    expect(calls).toBe(3);
    expect(errors).toHaveLength(2);
    expect(errors[0]!).toBeGreaterThanOrEqual(160);
    expect(errors[1]!).toBeGreaterThanOrEqual(320);
    expect(Date.now() - started).toBeGreaterThanOrEqual(450);
  });

  it('gives a key up after maxRetries, reporting it; adding it again starts over', async () => {
    let calls = 0;
    const reports: Array<number | undefined> = [];
    const queue = new WorkQueue(async () => {
      calls++;
      throw new Error('always');
    }, { maxRetries: 1, onError: (_k, _e, retryIn) => reports.push(retryIn) });
    await expect(queue.addAndWait('y')).rejects.toThrow('always');
    expect(calls).toBe(2);
    expect(reports.at(-1)).toBeUndefined();
    await expect(queue.addAndWait('y')).rejects.toThrow('always');
    expect(calls).toBe(4);
  });

  it('stop() runs nothing more and waits for the running', async () => {
    let finished = 0;
    const queue = new WorkQueue(async () => {
      await tick(30);
      finished++;
    });
    void queue.addAndWait('a');
    queue.addAfter('b', 10);
    await tick(5);
    await queue.stop();
    expect(finished).toBe(1);
    await tick(30);
    expect(finished).toBe(1);
  });

  it('backoff doubles from 200 ms to a 30 s cap, with jitter of ±20 %', () => {
    expect([1, 2, 3, 10, 20].map((n) => backoffMs(n, () => 0.5))).toEqual([200, 400, 800, 30_000, 30_000]);
    expect(backoffMs(1, () => 0)).toBe(160);
    expect(backoffMs(1, () => 1)).toBe(240);
  });

  it('carries the newest item of each key: items added while a run goes on make one more run with the last of them', async () => {
    const handled: string[] = [];
    let release!: () => void;
    const queue = new WorkQueue<string>(async (key, item) => {
      handled.push(`${key}=${item}`);
      if (item === 'v1') await new Promise<void>((r) => (release = r));
    });
    queue.add('k', 'v1');
    await tick();
    queue.add('k', 'v2');
    queue.add('k', 'v3');
    release();
    await tick(10);
    expect(handled).toEqual(['k=v1', 'k=v3']);
    await queue.stop();
    // offer() (a run asking to be handled again) keeps an item added meanwhile: it is newer.
    const runs: string[] = [];
    const requeuing = new WorkQueue<string>(async (key, item) => {
      runs.push(item);
      if (item !== 'first') return;
      requeuing.add(key, 'newer');
      requeuing.offer(key, 'stale');
    });
    requeuing.add('j', 'first');
    await tick(10);
    expect(runs).toEqual(['first', 'newer']);
    requeuing.offer('j', 'again');
    await tick(10);
    expect(runs).toEqual(['first', 'newer', 'again']);
    await requeuing.stop();
  });

  it('retries a failed run with its own item (as retryWith makes it) unless a newer one came; reports depth, retries and keys given up', async () => {
    const reports = { depth: [] as number[], retried: 0, givenUp: 0 };
    const tries: number[] = [];
    const queue = new WorkQueue<{ attempt: number }>(
      async (_key, item) => {
        tries.push(item.attempt);
        throw new Error('fails');
      },
      {
        maxRetries: 2,
        retryWith: (item) => ({ attempt: item.attempt + 1 }),
        metrics: { depth: (n) => reports.depth.push(n), retried: () => reports.retried++, givenUp: () => reports.givenUp++ },
      },
    );
    queue.add('x', { attempt: 0 });
    await tick(1500);
    expect(tries).toEqual([0, 1, 2]);
    expect(reports.retried).toBe(2);
    expect(reports.givenUp).toBe(1);
    expect(reports.depth.at(-1)).toBe(0);
    expect(Math.max(...reports.depth)).toBe(1);
    await queue.stop();
  });
});
