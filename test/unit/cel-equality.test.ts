import { describe, expect, it } from '@jest/globals';
import { equalForCel } from '../../src/guard/cel-equality.js';
import { parseJson } from '../../src/kube/json.js';

// Equality as the admission policy's CEL sees it: what it calls equal went past the policy
// unseen, so the guard layer's continuity cannot vouch for that change.
describe('equalForCel', () => {
  const spec = () => parseJson('{"source":{"repoURL":"https://git.example/a","targetRevision":"HEAD","helm":{"values":"a: 1","parameters":[{"name":"x","value":"1"}]}},"syncPolicy":{"automated":{"prune":true}}}');

  it('equal specs parsed apart are equal; any member changed, added or removed is not', () => {
    expect(equalForCel(spec(), spec())).toBe(true);
    const changed = spec() as { source: { helm: { parameters: Array<{ value: string }> } } };
    changed.source.helm.parameters[0]!.value = '2';
    expect(equalForCel(spec(), changed)).toBe(false);
    const added = spec() as Record<string, unknown>;
    added.project = 'default';
    expect(equalForCel(spec(), added)).toBe(false);
    expect(equalForCel(added, spec())).toBe(false);
    const longer = spec() as { source: { helm: { parameters: unknown[] } } };
    longer.source.helm.parameters.push({ name: 'y' });
    expect(equalForCel(spec(), longer)).toBe(false);
    expect(equalForCel({ a: undefined }, { b: undefined })).toBe(false);
  });

  it('numbers by value: an int beyond 2^53 and the double it rounds to are equal, as CEL finds them', () => {
    const int = parseJson('{"replicas":1234567890123456789}');
    const double = parseJson('{"replicas":1234567890123456789.0}');
    expect(equalForCel(int, double)).toBe(true);
    expect(equalForCel(parseJson('{"replicas":1234567890123456789}'), parseJson('{"replicas":1234567890123456790}'))).toBe(true);
    expect(equalForCel({ replicas: 1 }, { replicas: 2 })).toBe(false);
    expect(equalForCel({ replicas: 1 }, { replicas: '1' })).toBe(false);
  });
});
