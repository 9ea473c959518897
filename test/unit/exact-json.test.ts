import { describe, expect, it } from '@jest/globals';
import { hasLongDigitRun, isRawNumber, parseJson } from '../../src/kube/json.js';
import { canonicalJson, GuardedView } from '../../src/guard/index.js';

describe('numbers as the apiserver stores them (int64, beyond 2^53)', () => {
  it('keeps integers beyond 2^53 exact, and writes them back verbatim', () => {
    const parsed = parseJson('{"a":9007199254740993,"b":9007199254740992,"c":12,"d":1.5,"e":"9007199254740993"}') as Record<string, unknown>;
    expect(isRawNumber(parsed.a)).toBe(true);
    expect(JSON.stringify(parsed)).toBe('{"a":9007199254740993,"b":9007199254740992,"c":12,"d":1.5,"e":"9007199254740993"}');
    expect(parsed.c).toBe(12);
    expect(parsed.e).toBe('9007199254740993');
    expect(JSON.parse('9007199254740993')).toBe(9007199254740992); // what plain JSON.parse does
  });

  it('canonical JSON and the diff tell neighbours apart, also in unsorted objects', () => {
    const before = parseJson('{"z":1,"a":{"n":9007199254740992}}');
    const after = parseJson('{"z":1,"a":{"n":9007199254740993}}');
    expect(canonicalJson(before)).toBe('{"a":{"n":9007199254740992},"z":1}');
    expect(canonicalJson(before)).not.toBe(canonicalJson(after));
    const view = new GuardedView(['/spec'], [], undefined);
    expect(view.changedPointers({ '/spec': before }, { spec: after })).toEqual(['/spec/a/n']);
    expect(view.changedPointers({ '/spec': before }, { spec: parseJson('{"z":1,"a":{"n":9007199254740992}}') })).toEqual([]);
  });

  it('finds a run of 16 digits exactly where /\\d{16}/ does (the fast scan that decides the exact parse)', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let n = 0; n < 50_000; n++) {
      const length = Math.floor(random() * 70);
      let text = '';
      for (let k = 0; k < length; k++) text += random() < 0.85 ? String(Math.floor(random() * 10)) : '",:'[Math.floor(random() * 3)];
      expect({ text, found: hasLongDigitRun(text) }).toEqual({ text, found: /\d{16}/.test(text) });
    }
    expect(hasLongDigitRun(`{"a":${'1'.repeat(16)}}`)).toBe(true);
    expect(hasLongDigitRun(`{"a":${'1'.repeat(15)}}`)).toBe(false);
  });
});
