import { describe, expect, it } from '@jest/globals';
import { PackedValues, packValues, valuesText } from '../../src/guard/packed-values.js';

const text = (revision: string) => JSON.stringify({ '/spec': { source: { repoURL: 'https://example.com/repo.git', targetRevision: revision } } });

describe('packed values', () => {
  it('keep the text: read back as written, and written as JSON text by JSON.stringify', () => {
    const packed = packValues(text('HEAD'));
    expect(valuesText(packed)).toBe(text('HEAD'));
    expect(JSON.stringify({ valuesJson: packed })).toBe(JSON.stringify({ valuesJson: text('HEAD') }));
  });

  it('the same text again is the known copy; another text is packed anew, with a digest that recognises it in turn', () => {
    const known = packValues(text('HEAD'));
    expect(packValues(text('HEAD'), known)).toBe(known);
    const other = packValues(text('v2'), known);
    expect(other).not.toBe(known);
    expect(valuesText(other)).toBe(text('v2'));
    expect(packValues(text('v2'), other)).toBe(other);
    expect(other.digest).toBe(PackedValues.of(text('v2')).digest);
    expect(other.digest).not.toBe(known.digest);
  });
});
