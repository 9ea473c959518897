import { describe, expect, it } from '@jest/globals';
import { layerPeriods, succeeding, verifiedUpTo, type LayerRecord } from '../../src/guard/index.js';

const record = (since: string, verifiedAt?: string, earlier?: LayerRecord['earlier']): LayerRecord => ({ uid: `u${since}`, resourceVersion: since, since, sinceTime: Number(since), ...(verifiedAt ? { verifiedAt } : {}), ...(earlier ? { earlier } : {}) });

describe('verified periods of the admission layers', () => {
  it('a version is verified up to a later revision only; a record stored before verifiedAt existed covers its start alone', () => {
    const r = record('100');
    expect(layerPeriods([r])).toEqual([{ since: '100', sinceTime: 100, until: '100' }]);
    const v = verifiedUpTo(r, '150');
    expect(v.verifiedAt).toBe('150');
    expect(verifiedUpTo(v, '140')).toBe(v);
    expect(verifiedUpTo(v, undefined)).toBe(v);
    expect(verifiedUpTo(v, 'x')).toBe(v);
    // Compared as numbers, not text.
    expect(verifiedUpTo(record('99', '99'), '100').verifiedAt).toBe('100');
  });

  it('a new version ends the period of the one it replaces, keeping a bounded number of ended ones, newest first', () => {
    let r = verifiedUpTo(record('10'), '20');
    for (const since of ['30', '50', '70', '90']) r = succeeding({ uid: `u${since}`, resourceVersion: since, since, sinceTime: Number(since) }, verifiedUpTo(r, String(Number(since) - 5)));
    expect(r.verifiedAt).toBe('90');
    expect(r.earlier).toEqual([
      { since: '70', sinceTime: 70, until: '85' },
      { since: '50', sinceTime: 50, until: '65' },
      { since: '30', sinceTime: 30, until: '45' },
    ]);
    expect(succeeding({ uid: 'a', resourceVersion: '1', since: '1', sinceTime: 1 }, undefined).earlier).toBeUndefined();
  });

  it('a layer of several objects was in force where all of their periods overlap; nothing when one has no record', () => {
    const policy = record('100', '200', [{ since: '10', sinceTime: 10, until: '60' }]);
    const binding = record('120', '180', [{ since: '40', sinceTime: 40, until: '90' }]);
    expect(layerPeriods([policy, binding])).toEqual([
      { since: '120', sinceTime: 120, until: '180' },
      { since: '40', sinceTime: 40, until: '60' },
    ]);
    expect(layerPeriods([policy, undefined])).toEqual([]);
    expect(layerPeriods([])).toEqual([]);
    expect(layerPeriods([record('5', '9'), record('10', '20')])).toEqual([]);
  });
});
