import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { canonicalJson, GuardedView, Stamper } from '../../src/guard/index.js';
import { normalizers } from '../../src/guard/normalizers.js';
import jsonpatch from 'fast-json-patch';
import { parseJson } from '../../src/kube/json.js';

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

  it('hashes the same canonical text as before: stamps already in clusters keep verifying', () => {
    const application = new GuardedView(
      ['/spec', '/operation', '/metadata/finalizers', '/metadata/annotations/argocd.argoproj.io~1skip-reconcile'],
      ['/spec/source/helm/parameters'],
      normalizers['argocd-application'],
    );
    const object = {
      metadata: { finalizers: ['resources-finalizer.argocd.argoproj.io', 'foregroundDeletion'], annotations: { 'argocd.argoproj.io/skip-reconcile': 'true' } },
      spec: {
        source: { repoURL: 'https://example.com/r.git', targetRevision: 'v1', helm: { parameters: [{ name: 'a', value: '1' }], releaseName: 'x' } },
        destination: { server: 'https://kubernetes.default.svc', namespace: 'app' },
      },
    };
    const text =
      '{"/spec":{"destination":{"namespace":"app","server":"https://kubernetes.default.svc"},"project":"default","source":{"helm":{"releaseName":"x"},' +
      '"repoURL":"https://example.com/r.git","targetRevision":"v1"}},"/operation":null,"/metadata/finalizers":["resources-finalizer.argocd.argoproj.io"],' +
      '"/metadata/annotations/argocd.argoproj.io~1skip-reconcile":"true"}';
    expect(application.of(object).hash).toBe(createHash('sha256').update(text).digest('hex'));
    // The figure itself, as computed before the view's text stopped being kept.
    expect(application.of(object).hash).toBe('07b1b16d14191df45ea5c40726e0e2e70421f6df0c9b9be84b2b65e60100bd78');
    expect(new GuardedView(['/spec'], []).of({ spec: { b: 1, a: 2 } }).hash).toBe(createHash('sha256').update('{"/spec":{"a":2,"b":1}}').digest('hex'));
  });

  it('hashes the same text whether the doors come in sorted (one serialization) or not (door by door)', () => {
    const doors = new GuardedView(['/spec', '/operation', '/metadata/finalizers', '/status/operationState'], []);
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    // As the apiserver writes them: sorted keys, an integer beyond 2^53 kept exact, a door absent.
    const sorted = parseJson('{"metadata":{"finalizers":["a"]},"spec":{"a":{"b":[1,{"c":null,"d":{}}]},"z":9007199254740993},"status":{"operationState":{"phase":"Running"}}}');
    const text = '{"/spec":{"a":{"b":[1,{"c":null,"d":{}}]},"z":9007199254740993},"/operation":null,"/metadata/finalizers":["a"],"/status/operationState":{"phase":"Running"}}';
    expect(doors.of(sorted).hash).toBe(sha(text));
    // The same values with one door's keys out of order: the same text, written door by door.
    const unsorted = parseJson('{"metadata":{"finalizers":["a"]},"spec":{"z":9007199254740993,"a":{"b":[1,{"d":{},"c":null}]}},"status":{"operationState":{"phase":"Running"}}}');
    expect(doors.of(unsorted).hash).toBe(sha(text));
    // A door holding null is written as null, as an absent one.
    expect(doors.of({ spec: null }).hash).toBe(sha('{"/spec":null,"/operation":null,"/metadata/finalizers":null,"/status/operationState":null}'));
    // A pointer named twice is written twice, as it always was (stamps made with it keep verifying).
    expect(new GuardedView(['/spec', '/spec'], []).of({ spec: { a: 1 } }).hash).toBe(sha('{"/spec":{"a":1},"/spec":{"a":1}}'));
  });

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

  // JSON.parse gives every object Object.prototype: a walk that asks `key in object` or reads
  // `object[key]` finds `constructor`, `toString`, … in every one of them.
  it.each(['constructor', 'toString', 'hasOwnProperty', '__proto__'])('sees a member named %s added, changed or removed (names every object inherits)', (name) => {
    const parsed = (text: string) => JSON.parse(text) as unknown;
    const before = view.valuesOf(parsed('{"spec":{"values":{"a":1}}}'));
    expect(view.changedPointers(before, parsed(`{"spec":{"values":{"a":1,"${name}":"evil"}}}`))).toEqual([`/spec/values/${name}`]);
    const holding = view.valuesOf(parsed(`{"spec":{"values":{"a":1,"${name}":{"x":1}}}}`));
    expect(view.changedPointers(holding, parsed(`{"spec":{"values":{"a":1,"${name}":{"x":2}}}}`))).toEqual([`/spec/values/${name}/x`]);
    expect(view.changedPointers(holding, parsed('{"spec":{"values":{"a":1}}}'))).toEqual([`/spec/values/${name}`]);
  });

  it('tells apart every kind of value: a primitive from another, from null, an object from an array', () => {
    const before = view.valuesOf({ spec: { s: 'a', n: 1, b: true, z: null, o: {}, l: [], same: [{ k: 'v' }] } });
    const after = { spec: { s: 'b', n: '1', b: false, z: 0, o: [], l: {}, same: [{ k: 'v' }] } };
    expect(view.changedPointers(before, after)).toEqual(['/spec/s', '/spec/n', '/spec/b', '/spec/z', '/spec/o', '/spec/l']);
    expect(view.changedPointers(before, JSON.parse(JSON.stringify({ spec: before['/spec'] })))).toEqual([]);
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

  it('remembers what it checked, within bounds: a forged stamp stays refused, read after read, and a flood of them forgets the oldest', () => {
    const stamp = stamper.stamp(hash, 'g/r/ns/m', 7);
    const forged = stamp.slice(0, -1) + (stamp.endsWith('A') ? 'B' : 'A');
    for (let i = 0; i < 3; i++) {
      expect(stamper.read(stamp, 'g/r/ns/m')).toEqual({ hash, seq: 7 });
      expect(stamper.read(forged, 'g/r/ns/m')).toBeUndefined();
      expect(stamper.read(stamp, 'g/r/ns/other')).toBeUndefined();
    }
    const flooded = new Stamper(Buffer.alloc(32, 3));
    for (let i = 0; i < 10_050; i++) flooded.read(forged, `g/r/ns/o${i}`);
    expect((flooded as unknown as { checked: Map<string, unknown> }).checked.size).toBe(10_000);
    expect(flooded.read(stamper.stamp(hash, 'g/r/ns/o0', 1), 'g/r/ns/o0')).toBeUndefined(); // another key's stamp
    // A stamp that is not of the form is never remembered (a 256 KB annotation would fill memory).
    const before = (stamper as unknown as { checked: Map<string, unknown> }).checked.size;
    expect(stamper.read(`v2.${'x'.repeat(200_000)}`, 'g/r/ns/m')).toBeUndefined();
    expect((stamper as unknown as { checked: Map<string, unknown> }).checked.size).toBe(before);
  });

  it('refuses a short key', () => {
    expect(() => new Stamper(Buffer.alloc(8))).toThrow('at least 32 bytes');
  });
});

describe('revert operations (only the members that differ)', () => {
  const view = new GuardedView(['/spec', '/metadata/finalizers'], ['/spec/ignored', '/spec/nested/skip']);
  const big = (revision: string) => ({
    spec: {
      project: 'default',
      source: { repoURL: 'https://git.example/apps', targetRevision: revision, helm: { parameters: Array.from({ length: 200 }, (_, i) => ({ name: `p${i}`, value: `v${i}` })) } },
      ignored: 'kept',
      nested: { skip: 1, keep: 2 },
    },
    metadata: { finalizers: ['resources-finalizer.argocd.argoproj.io'] },
  });
  const applied = (object: unknown, ops: unknown[]) => jsonpatch.applyPatch(structuredClone(object), ops as jsonpatch.Operation[], true).newDocument;

  it('a one-field drift of a 200-parameter spec is reverted by one replace, not by the whole spec', () => {
    const canonical = view.valuesOf(big('HEAD'));
    const drifted = big('evil');
    expect(view.revertOps(canonical, drifted)).toEqual([{ op: 'replace', path: '/spec/source/targetRevision', value: 'HEAD' }]);
    expect(JSON.stringify(view.restoreOps(canonical, drifted)).length).toBeGreaterThan(5000);
  });

  // Each case: what the drift did; the revert must give what restoring whole gives, with ignored members kept.
  const drifts: Array<[string, (o: ReturnType<typeof big>) => void]> = [
    ['a member added', (o) => Object.assign(o.spec.source, { chart: 'evil' })],
    ['a member removed', (o) => delete (o.spec.source as Partial<typeof o.spec.source>).repoURL],
    ['an array grown', (o) => o.spec.source.helm.parameters.push({ name: 'x', value: 'y' })],
    ['an array element changed', (o) => (o.spec.source.helm.parameters[7]!.value = 'evil')],
    ['a shape changed (object to string)', (o) => ((o.spec as Record<string, unknown>).source = 'evil')],
    ['the ignored member changed, and another beside it', (o) => ((o.spec.ignored = 'changed'), (o.spec.nested.keep = 3))],
    ['a block holding an ignored member replaced by a scalar', (o) => ((o.spec as Record<string, unknown>).nested = 5)],
    ['a block holding an ignored member removed', (o) => delete (o.spec as Partial<typeof o.spec>).nested],
    ['a finalizer added', (o) => o.metadata.finalizers.push('evil')],
    ['a member named constructor added', (o) => Object.assign(o.spec.source, { constructor: 'evil' })],
    ['a member named toString added in a parameter', (o) => Object.assign(o.spec.source.helm.parameters[3]!, { toString: { evil: true } })],
    ['the finalizers removed', (o) => ((o.metadata as Record<string, unknown>).finalizers = undefined)],
    ['100 parameters changed (restored whole)', (o) => o.spec.source.helm.parameters.slice(0, 100).forEach((p) => (p.value = 'evil'))],
    ['the spec removed', (o) => delete (o as Partial<typeof o>).spec],
  ];
  it.each(drifts)('%s: the revert gives exactly what restoring whole gives', (_what, drift) => {
    const canonical = view.valuesOf(big('HEAD'));
    const drifted = structuredClone(big('HEAD'));
    drift(drifted);
    const object = JSON.parse(JSON.stringify(drifted));
    const byMembers = applied(object, view.revertOps(canonical, object));
    expect(byMembers).toEqual(applied(object, view.restoreOps(canonical, object)));
    expect(view.changedPointers(canonical, byMembers)).toEqual([]);
    expect(view.revertOps(canonical, byMembers)).toEqual([]);
  });

  it('a drift of a member named constructor beside an ignored member is reverted member by member', () => {
    const canonical = view.valuesOf(big('HEAD'));
    const drifted = JSON.parse(JSON.stringify(big('HEAD')));
    drifted.spec.constructor = 'evil';
    expect(view.revertOps(canonical, drifted)).toEqual([{ op: 'remove', path: '/spec/constructor' }]);
  });

  it('many differences in one path restore that path whole (one op, not hundreds)', () => {
    const canonical = view.valuesOf(big('HEAD'));
    const object = big('HEAD');
    object.spec.source.helm.parameters.forEach((p) => (p.value = 'evil'));
    expect(view.revertOps(canonical, object).map((op) => op.path)).toEqual(['/spec']);
  });
});
