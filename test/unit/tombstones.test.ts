import { describe, expect, it } from '@jest/globals';
import { coalesce } from '../../src/kube/coalesce.js';
import { applyTombstoneChanges, confirms, expired, MAX_TOMBSTONES, TombstoneBudgetError } from '../../src/guard/index.js';
import { TombstoneWriter } from '../../src/sync/store/tombstone-writer.js';

const at = (ms: number) => new Date(ms).toISOString();
const NOW = Date.parse('2026-12-03T12:00:00Z');

describe('coalesce', () => {
  it('runs one at a time; calls made meanwhile share the next run', async () => {
    let runs = 0;
    let concurrent = 0;
    const work = coalesce(async () => {
      concurrent++;
      expect(concurrent).toBe(1);
      runs++;
      await new Promise((r) => setTimeout(r, 10));
      concurrent--;
    });
    await Promise.all(Array.from({ length: 50 }, () => work()));
    expect(runs).toBe(2);
  });

  it('a failed run fails its callers only; the next run goes ahead', async () => {
    let fail = true;
    const work = coalesce(async () => {
      await new Promise((r) => setTimeout(r, 5));
      if (fail) throw new Error('conflict');
    });
    const first = work();
    const second = work();
    fail = true;
    await expect(first).rejects.toThrow('conflict');
    fail = false;
    await expect(second).resolves.toBeUndefined();
  });
});

describe('tombstone rules', () => {
  it('count only for the object with their uid', () => {
    expect(confirms({ uid: 'a', at: at(NOW) }, 'a')).toBe(true);
    expect(confirms({ uid: 'a', at: at(NOW) }, 'b')).toBe(false);
    expect(confirms(undefined, 'a')).toBe(false);
  });

  it('expire 10 s after they were written when the watch ran throughout; a restarted watch keeps them', () => {
    const tombstone = { uid: 'a', at: at(NOW) };
    expect(expired(tombstone, NOW + 5_000, NOW - 60_000)).toBe(false);
    expect(expired(tombstone, NOW + 11_000, NOW - 60_000)).toBe(true);
    expect(expired(tombstone, NOW + 11_000, NOW + 1_000)).toBe(false);
    expect(expired(tombstone, NOW + 2 * 3600_000, NOW + 1_000)).toBe(true);
  });

  it('stay within the budget: one more add is refused, removals always pass', () => {
    const full = new Map(Array.from({ length: MAX_TOMBSTONES }, (_, i) => [`k${i}`, { uid: `u${i}`, at: at(NOW) }]));
    expect(() => applyTombstoneChanges(full, new Map([['extra', { uid: 'x', at: at(NOW) }]]), NOW)).toThrow(TombstoneBudgetError);
    expect(applyTombstoneChanges(full, new Map([['k1', null]]), NOW).size).toBe(MAX_TOMBSTONES - 1);
    const old = new Map([['old', { uid: 'o', at: at(NOW - 2 * 3600_000) }]]);
    expect(applyTombstoneChanges(old, new Map(), NOW).size).toBe(0);
  });

  it('the writer batches concurrent changes into few writes', async () => {
    let writes = 0;
    let state = new Map();
    const writer = new TombstoneWriter(async (change) => {
      writes++;
      await new Promise((r) => setTimeout(r, 5));
      state = change(state);
    }, () => NOW);
    await Promise.all(Array.from({ length: 100 }, (_, i) => writer.set(`k${i}`, { uid: `u${i}`, at: at(NOW) })));
    expect(state.size).toBe(100);
    expect(writes).toBeLessThanOrEqual(2);
  });
});

describe('what a tombstone vouches for', () => {
  it('one recorded without a uid (a forged review without oldObject) confirms no delete', async () => {
    const { confirms } = await import('../../src/guard/index.js');
    expect(confirms({ at: new Date().toISOString() }, 'any-uid')).toBe(false);
    expect(confirms({ uid: 'u1', at: new Date().toISOString() }, 'u1')).toBe(true);
    expect(confirms({ uid: 'u1', at: new Date().toISOString() }, 'u2')).toBe(false);
  });

  it('a deletecollection review names its object only in oldObject: the tombstone key takes that name', async () => {
    const { reviewedName } = await import('../../src/guard/index.js');
    expect(reviewedName({ name: '', oldObject: { metadata: { name: 'guestbook' } }, object: null })).toBe('guestbook');
    expect(reviewedName({ name: 'named', oldObject: { metadata: { name: 'other' } } })).toBe('named');
  });
});
