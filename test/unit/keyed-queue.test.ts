import { describe, expect, it } from '@jest/globals';
import { KeyedQueue } from '../../src/kube/keyed-queue.js';

describe('keyed queue', () => {
  it('runs one task per key at a time and keeps only the newest waiting one', async () => {
    const log: string[] = [];
    const queue = new KeyedQueue(() => {});
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    queue.push('a', async () => {
      log.push('a1 start');
      await gate;
      log.push('a1 end');
    });
    queue.push('a', async () => void log.push('a2'));
    queue.push('a', async () => void log.push('a3'));
    queue.push('b', async () => void log.push('b1'));
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['a1 start', 'b1']);
    release();
    await new Promise((r) => setTimeout(r, 10));
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a3']);
    expect(queue.busy).toBe(0);
  });

  it('reports a failing task and goes on', async () => {
    const errors: string[] = [];
    const queue = new KeyedQueue((key, err) => errors.push(`${key}: ${(err as Error).message}`));
    const done: string[] = [];
    queue.push('k', async () => {
      throw new Error('boom');
    });
    queue.push('k', async () => void done.push('after'));
    await new Promise((r) => setTimeout(r, 10));
    expect(errors).toEqual(['k: boom']);
    expect(done).toEqual(['after']);
  });
});
