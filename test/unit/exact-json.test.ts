import { describe, expect, it } from '@jest/globals';
import { isRawNumber, mayHoldLongInteger, parseJson } from '../../src/kube/json.js';
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

  it('only a parsed long integer is an exact number: an object written to look like one is not', () => {
    const posing = parseJson('{"n":{"rawJSON":"9007199254740993"},"m":12}') as Record<string, unknown>;
    expect(isRawNumber(posing.n)).toBe(false);
    expect(isRawNumber(posing.m)).toBe(false);
    const exact = (parseJson('{"a":9007199254740993}') as Record<string, unknown>).a;
    expect(isRawNumber(exact)).toBe(true);
    expect(isRawNumber(posing.n)).toBe(false);
    expect(isRawNumber({ rawJSON: '9007199254740993' })).toBe(false);
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

  it('finds every run of 16 digits that can be an integer token, exactly where a regular expression does (the fast scan that decides the exact parse)', () => {
    // A whole run of 16 digits or more, after the start, `:`, `,`, `[`, `-` or a space, and before the end, `,`, `}`, `]` or a space.
    const integerToken = /(?:^|[:,[\-\s])\d{16,}(?=$|[,}\]\s])/;
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const others = '",:a.-}] [e';
    for (let n = 0; n < 50_000; n++) {
      const length = Math.floor(random() * 70);
      let text = '';
      for (let k = 0; k < length; k++) text += random() < 0.85 ? String(Math.floor(random() * 10)) : others[Math.floor(random() * others.length)];
      expect({ text, found: mayHoldLongInteger(text) }).toEqual({ text, found: integerToken.test(text) });
    }
    expect(mayHoldLongInteger(`{"a":${'1'.repeat(16)}}`)).toBe(true);
    expect(mayHoldLongInteger(`{"a":[1,-${'1'.repeat(40)}]}`)).toBe(true);
    expect(mayHoldLongInteger(`{"a":${'1'.repeat(15)}}`)).toBe(false);
    expect(mayHoldLongInteger(`{"a":0.${'1'.repeat(20)}}`)).toBe(false);
  });

  it('a stamp whose hash holds 16 digits in a row (one object in 100) does not send the object down the slow exact parse; a long integer beside it still parses exact', () => {
    const stamp = `v2.ab${'7'.repeat(20)}${'c'.repeat(42)}.1796429301992.jA6XcJ0OjTgmalCtR_25GiWRgYmKerDFt-RlwfgdxzI`;
    const object = `{"metadata":{"annotations":{"spec-guard.io/stamp":"${stamp}"},"uid":"d79b29bf-a20c-4e17-ba48-d2a06c7dd434"},"spec":{"n":5}}`;
    expect(mayHoldLongInteger(object)).toBe(false);
    const withLong = object.replace('"n":5', '"n":9007199254740993');
    expect(mayHoldLongInteger(withLong)).toBe(true);
    expect(JSON.stringify(parseJson(withLong))).toBe(withLong);
  });

  it('scans a long run of digits once: a 2 MB string of digits is read in linear time', () => {
    const text = `{"a":"${'1'.repeat(2_000_000)}x"}`;
    const started = process.cpuUsage();
    expect(mayHoldLongInteger(text)).toBe(false);
    const { user, system } = process.cpuUsage(started);
    expect(user + system).toBeLessThan(1_000_000);
  });
});
