import { describe, expect, it } from '@jest/globals';
import { Slots } from '../../src/kube/index.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

describe('the repairs’ call slots', () => {
  it('runs at most `size` calls at once, the others in the order they asked', async () => {
    const slots = new Slots(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const call = (i: number) =>
      slots.use(async () => {
        started.push(i);
        most = Math.max(most, ++running);
        await tick(5);
        running--;
        return i;
      });
    const results = await Promise.all([0, 1, 2, 3, 4, 5].map(call));
    expect(results).toEqual([0, 1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('frees the slot of a call that fails, and tells when a waiting call got one', async () => {
    const slots = new Slots(1);
    const failing = slots.use(async () => {
      await tick(5);
      throw new Error('apiserver said no');
    });
    let slotAt: number | undefined;
    const asked = Date.now();
    const next = slots.use(async () => 'done', () => (slotAt = Date.now()));
    await expect(failing).rejects.toThrow('apiserver said no');
    await expect(next).resolves.toBe('done');
    expect(slotAt! - asked).toBeGreaterThanOrEqual(4);
    // The slot is free again: a third call does not wait.
    await expect(slots.use(async () => 3)).resolves.toBe(3);
  });
});
