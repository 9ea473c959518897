import { describe, expect, it } from '@jest/globals';
import { coalesce } from '../../src/kube/coalesce.js';
import { applyTombstoneChanges, confirms, expired, MAX_TOMBSTONE_BYTES, MAX_TOMBSTONES, tombstoneOf } from '../../src/guard/index.js';
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

  it('stay within the budget without refusing a delete: the oldest give way, never one a finalizer holds, never the one added', () => {
    const full = new Map(Array.from({ length: MAX_TOMBSTONES }, (_, i) => [`k${i}`, { uid: `u${i}`, at: at(NOW - 5_000 + i), ...(i === 0 ? { held: true } : {}) }]));
    const added = applyTombstoneChanges(full, new Map([['extra', { uid: 'x', at: at(NOW) }]]), NOW);
    expect(added.next.size).toBe(MAX_TOMBSTONES);
    expect(added.next.get('extra')).toEqual({ uid: 'x', at: at(NOW) });
    expect(added.next.get('k0')?.held).toBe(true);
    expect(added.evicted).toEqual(['k1']);
    // A flood of new ones: each write keeps every one it adds, down to the budget.
    const flood = new Map(Array.from({ length: 300 }, (_, i) => [`f${i}`, { uid: `f${i}`, at: at(NOW) }]));
    const flooded = applyTombstoneChanges(full, flood, NOW);
    expect(flooded.next.size).toBe(MAX_TOMBSTONES);
    expect([...flood.keys()].every((k) => flooded.next.has(k))).toBe(true);
    expect(flooded.evicted).toHaveLength(300);
    expect(applyTombstoneChanges(full, new Map([['k1', null]]), NOW).next.size).toBe(MAX_TOMBSTONES - 1);
    const old = new Map([['old', { uid: 'o', at: at(NOW - 2 * 3600_000) }]]);
    expect(applyTombstoneChanges(old, new Map(), NOW).next.size).toBe(0);
  });

  it('stay within a byte budget too: a flood of 253-character names cannot outgrow the one Secret that holds them', () => {
    const long = (i: number) => `argoproj.io/applications/argocd/${String(i).padStart(6, '0')}${'n'.repeat(247)}`;
    const flood = new Map(Array.from({ length: 3000 }, (_, i) => [long(i), { uid: '0b7c6a8e-4f1e-4a53-9a45-2c1d6f3e9b10', at: at(NOW - 3000 + i) }]));
    const { next } = applyTombstoneChanges(flood, new Map([['argoproj.io/applications/argocd/real', { uid: 'r', at: at(NOW) }]]), NOW);
    expect(JSON.stringify(Object.fromEntries(next)).length).toBeLessThanOrEqual(MAX_TOMBSTONE_BYTES);
    expect(next.has('argoproj.io/applications/argocd/real')).toBe(true);
    expect(next.has(long(2999))).toBe(true);
    expect(next.has(long(0))).toBe(false);
  });

  it('age by the clock of the replica that judges them: a writer whose clock runs ahead or behind moves nothing', () => {
    const ahead = { uid: 'a', at: at(NOW + 10 * 60_000) };
    expect(expired(ahead, NOW + 5_000, NOW - 60_000, NOW)).toBe(false);
    expect(expired(ahead, NOW + 11_000, NOW - 60_000, NOW)).toBe(true);
    const behind = { uid: 'b', at: at(NOW - 10 * 60_000) };
    expect(expired(behind, NOW + 5_000, NOW - 60_000, NOW)).toBe(false);
    expect(expired(behind, NOW + 11_000, NOW - 60_000, NOW)).toBe(true);
    // A watch that restarted since (it may have missed the delete) keeps it.
    expect(expired(behind, NOW + 11_000, NOW - 2_000, NOW)).toBe(false);
    expect(expired(ahead, NOW + 11_000, NOW + 1_000, NOW)).toBe(false);
  });

  it('are recorded only for a review with an apiserver uid (a UUID): a forged long uid costs no write', () => {
    expect(tombstoneOf('0b7c6a8e-4f1e-4a53-9a45-2c1d6f3e9b10', NOW)).toEqual({ uid: '0b7c6a8e-4f1e-4a53-9a45-2c1d6f3e9b10', at: at(NOW) });
    expect(() => tombstoneOf('x'.repeat(128), NOW)).toThrow(/not from a kube-apiserver/);
    expect(() => tombstoneOf(undefined, NOW)).toThrow(/without the old object/);
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
