import { describe, expect, it } from '@jest/globals';
import { RevertThrottle } from '../../src/guard/revert-throttle.js';

describe('revert throttle: a controller that fights the revert', () => {
  it('reverts at once up to five times in 30 s, then backs off 1 s, 2 s, 4 s … and says so once', () => {
    const t = new RevertThrottle();
    let now = 0;
    for (let i = 0; i < 5; i++) expect(t.decide('k', (now += 100))).toEqual({ waitMs: 0, fightStarted: false });
    expect(t.decide('k', (now += 100))).toEqual({ waitMs: 0, fightStarted: true });
    expect(t.decide('k', (now += 100)).waitMs).toBe(900);
    now += 900;
    expect(t.decide('k', now)).toEqual({ waitMs: 0, fightStarted: false });
    expect(t.decide('k', now + 1).waitMs).toBe(1999);
    now += 2000;
    expect(t.decide('k', now).waitMs).toBe(0);
    expect(t.decide('k', now).waitMs).toBe(4000);
  });

  it('puts at most one revert per backoff step on the apiserver under a constant fight', () => {
    const t = new RevertThrottle();
    let reverts = 0;
    // A writer changes the spec back every 25 ms (40/s) for ten minutes.
    for (let now = 0; now < 600_000; now += 25) if (t.decide('k', now).waitMs === 0) reverts++;
    expect(reverts).toBeLessThan(20);
  });

  it('other objects are not slowed, and a settled object starts afresh', () => {
    const t = new RevertThrottle();
    for (let i = 0; i < 7; i++) t.decide('busy', i);
    expect(t.decide('busy', 10).waitMs).toBeGreaterThan(0);
    expect(t.decide('quiet', 10).waitMs).toBe(0);
    t.forget('busy');
    expect(t.decide('busy', 11).waitMs).toBe(0);
  });
});
