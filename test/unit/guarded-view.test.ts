import { describe, expect, it } from '@jest/globals';
import { canonicalJson, GuardedView, Stamper } from '../../src/guard/index.js';

describe('canonical JSON', () => {
  it('sorts keys and keeps null, {} and [] as values of their own', () => {
    expect(canonicalJson({ b: 1, a: { z: null, y: [] }, c: {} })).toBe('{"a":{"y":[],"z":null},"b":1,"c":{}}');
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
    expect(canonicalJson(undefined)).toBeUndefined();
    expect(canonicalJson(null)).toBe('null');
    expect(canonicalJson([{}])).toBe('[{}]');
  });

  it('tells an empty block from an absent one (automated: {} turns auto-sync on)', () => {
    const view = new GuardedView(['/spec'], []);
    expect(view.of({ spec: { syncPolicy: { automated: {} } } }).hash).not.toBe(view.of({ spec: { syncPolicy: {} } }).hash);
    expect(view.changedPointers(view.valuesOf({ spec: { syncPolicy: {} } }), { spec: { syncPolicy: { automated: {} } } })).toEqual([
      '/spec/syncPolicy/automated',
    ]);
  });

  it('keeps values that are not empty: false, 0 and ""', () => {
    expect(canonicalJson({ a: false, b: 0, c: '' })).toBe('{"a":false,"b":0,"c":""}');
  });
});

describe('guarded view', () => {
  const view = new GuardedView(['/spec', '/data'], ['/spec/ignored', '/spec/nested/skip']);

  it('hashes equal views equally and ignores ignored members', () => {
    const a = view.of({ spec: { x: 1, ignored: 'a', nested: { skip: 1, keep: 2 } } });
    const b = view.of({ spec: { nested: { keep: 2, skip: 9 }, x: 1, ignored: 'b' }, status: { any: 1 } });
    expect(a).toEqual(b);
    expect(a.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('lists the changed pointers, escaped per RFC 6901', () => {
    const before = view.valuesOf({ spec: { x: 1, 'a/b': 1, list: [1, 2] } });
    expect(view.changedPointers(before, { spec: { x: 2, 'a/b': 2, list: [1, 3] }, data: { k: 'v' } })).toEqual([
      '/spec/x',
      '/spec/a~1b',
      '/spec/list/1',
      '/data',
    ]);
  });
});

describe('stamp', () => {
  const stamper = new Stamper(Buffer.alloc(32, 1));
  const hash = 'c'.repeat(64);

  it('verifies its own stamp for the same object only', () => {
    const stamp = stamper.stamp(hash, 'g/r/ns/a', 1_700_000_000_000);
    expect(stamper.verify(stamp, 'g/r/ns/a')).toBe(hash);
    expect(stamper.read(stamp, 'g/r/ns/a')).toEqual({ hash, seq: 1_700_000_000_000 });
    expect(stamper.verify(stamp, 'g/r/ns/b')).toBeUndefined();
  });

  it('refuses another key, a tampered hash and garbage', () => {
    const stamp = stamper.stamp(hash, 'k', 5);
    expect(new Stamper(Buffer.alloc(32, 2)).verify(stamp, 'k')).toBeUndefined();
    expect(stamper.verify(stamp.replace('cc', 'dd'), 'k')).toBeUndefined();
    for (const bad of ['', 'v1', 'v2.x.y', `v1.${hash}`, 'v1.zz.zz', `v2.${hash}.5`, stamp.replace('v2.', 'v1.')]) expect(stamper.verify(bad, 'k')).toBeUndefined();
  });

  it('refuses a short key', () => {
    expect(() => new Stamper(Buffer.alloc(8))).toThrow('at least 32 bytes');
  });
});
