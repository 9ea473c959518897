import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { argocdApplication, GuardedView } from '../../src/guard/index.js';
import { AGENT, review, type FixtureName } from '../helpers/admission.js';
import { startServer, type RunningServer } from '../helpers/server.js';

// A structure-aware fuzz test of the webhook port: 20,000 reviews generated from the real
// captures by a seeded generator (wrong types, missing fields, deep and huge bodies,
// duplicate keys, unicode). Never a 5xx, never a crash, never an untrusted guarded change
// allowed, and the server still healthy afterwards.
jest.setTimeout(300_000);

const COUNT = Number(process.env.FUZZ_REVIEWS ?? 20_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261203);

/** mulberry32: small, seeded, reproducible. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let server: RunningServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('fuzzing the webhook port', () => {
  it(`${COUNT} generated reviews: no 5xx, no crash, no untrusted guarded change allowed`, async () => {
    const rnd = random(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
    const fixtures: FixtureName[] = ['agent-create', 'alice-update-spec', 'controller-update-status', 'alice-update-spec-dryrun', 'alice-delete'];
    const strangeValues = () => [null, 0, -1, 1e308, true, false, '', 'ü🙂\u0000\u202e', 'x'.repeat(70_000), [], [1, 'a'], {}, { a: { b: null } }, pick(['CREATE', 'UPDATE', 'DELETE'])];

    /** Every path to a member of `value` (objects and arrays), to pick a mutation point from. */
    const paths = (value: unknown, at: string[] = [], out: string[][] = [], depth = 0): string[][] => {
      if (depth > 6 || typeof value !== 'object' || value === null) return out;
      for (const key of Object.keys(value)) {
        out.push([...at, key]);
        paths((value as Record<string, unknown>)[key], [...at, key], out, depth + 1);
      }
      return out;
    };
    const parentOf = (root: any, path: string[]) => path.slice(0, -1).reduce((node, key) => node?.[key], root);

    function generate(): { body: string; oracle: any } {
      const r = review(pick(fixtures)) as any;
      const mutations = 1 + Math.floor(rnd() * 3);
      for (let m = 0; m < mutations; m++) {
        const all = paths(r);
        const path = pick(all);
        const parent = parentOf(r, path);
        if (typeof parent !== 'object' || parent === null) continue;
        const key = path[path.length - 1]!;
        const kind = rnd();
        if (kind < 0.3) delete parent[key];
        else if (kind < 0.8) parent[key] = pick(strangeValues());
        else if (kind < 0.9) parent[key] = { [`k${Math.floor(rnd() * 1e6)}`]: pick(strangeValues()) };
        else if (typeof r.request?.object?.spec === 'object' && r.request.object.spec !== null) r.request.object.spec.nested = { a: { b: { c: pick(strangeValues()) } } };
      }
      let body = JSON.stringify(r);
      const special = rnd();
      if (special < 0.01) body = body.replace('"spec":{', `"spec":{"deep":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)},`);
      else if (special < 0.015) body = body.replace('"spec":{', `"spec":{"huge":"${'h'.repeat(400_000)}",`);
      // A duplicate key: JSON.parse keeps the last one, as the server does; so does the oracle.
      else if (special < 0.05) body = body.replace('"request":{', '"request":{"uid":"duplicate","operation":"CREATE",');
      else if (special < 0.06) body = body.slice(0, Math.floor(rnd() * body.length));
      let oracle: any;
      try {
        oracle = JSON.parse(body);
      } catch {
        oracle = undefined;
      }
      return { body, oracle };
    }

    /** An untrusted UPDATE of a guarded Application whose spec differs from the stored one, as Argo CD sees it. */
    const view = new GuardedView(['/spec'], [], argocdApplication);
    function untrustedGuardedChange(o: any): boolean {
      const q = o?.request;
      if (!q || q.operation !== 'UPDATE' || q.subResource || q.userInfo?.username === AGENT) return false;
      if (q.resource?.group !== 'argoproj.io' || q.resource?.resource !== 'applications') return false;
      if (typeof q.object !== 'object' || typeof q.oldObject !== 'object' || !q.object || !q.oldObject) return false;
      try {
        return view.of(q.object).hash !== view.of(q.oldObject).hash;
      } catch {
        return true;
      }
    }

    const statuses = new Map<number, number>();
    let allowedChanges = 0;
    const path = () => pick(['/validate', '/mutate']);
    for (let i = 0; i < COUNT; i++) {
      const { body, oracle } = generate();
      const reply = await server.request('POST', path(), body);
      statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
      if (reply.status >= 500) throw new Error(`review ${i} answered ${reply.status}: ${reply.body.slice(0, 300)}`);
      if (reply.status === 200 && untrustedGuardedChange(oracle) && reply.json<any>().response.allowed) allowedChanges++;
    }
    expect(allowedChanges).toBe(0);
    expect(statuses.get(200)).toBeGreaterThan(COUNT / 10);
    expect(statuses.get(400)).toBeGreaterThan(COUNT / 10);
    // Still answering, and still right.
    const valid = review('alice-update-spec');
    const after = await server.request('POST', '/validate', JSON.stringify(valid));
    expect(after.json<any>().response.allowed).toBe(false);
  });
});
