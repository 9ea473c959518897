import { describe, expect, it } from '@jest/globals';
import { Lifecycle, type Component } from '../../src/runtime/lifecycle.js';
import { createLogger } from '../../src/log/index.js';

describe('the runtime lifecycle (wiring)', () => {
  it('starts parts in order, stops the started ones in reverse, and a part that fails to stop does not keep the others running', async () => {
    const calls: string[] = [];
    const part = (name: string, failStop = false): Component => ({
      name,
      start: () => void calls.push(`start ${name}`),
      stop: () => {
        calls.push(`stop ${name}`);
        if (failStop) throw new Error('boom');
      },
    });
    const parts = new Lifecycle(createLogger('error'));
    parts.add(part('tls'), undefined, part('election', true));
    await parts.start();
    parts.add(part('watcher'));
    await parts.start();
    await parts.stop();
    expect(calls).toEqual(['start tls', 'start election', 'start watcher', 'stop watcher', 'stop election', 'stop tls']);
  });

  it('tells every part of leadership, also one added but not started yet (the first election round comes before the watcher starts)', async () => {
    const heard: string[] = [];
    const parts = new Lifecycle(createLogger('error'));
    parts.add({ name: 'a', setLeading: (l) => void heard.push(`a ${l}`) }, { name: 'b' }, { name: 'c', start: () => Promise.reject(new Error('no')), setLeading: (l) => void heard.push(`c ${l}`) });
    parts.setLeading(true);
    await expect(parts.start()).rejects.toThrow('no');
    parts.setLeading(false);
    expect(heard).toEqual(['a true', 'c true', 'a false', 'c false']);
  });

  it('runs a leader-only part while this replica leads: at its turn if leading, when the lease is gained later, stopped when it is lost', async () => {
    const calls: string[] = [];
    const parts = new Lifecycle(createLogger('error'));
    const leader: Component = { name: 'registration', leaderOnly: true, start: () => void calls.push('start'), stop: () => void calls.push('stop') };
    parts.add({ name: 'tls' }, leader);
    await parts.start();
    expect(calls).toEqual([]); // a follower
    parts.setLeading(true);
    await Promise.resolve();
    parts.setLeading(true); // told again: nothing new
    parts.setLeading(false);
    await Promise.resolve();
    expect(calls).toEqual(['start', 'stop']);
    parts.setLeading(true);
    await Promise.resolve();
    await parts.stop();
    expect(calls).toEqual(['start', 'stop', 'start', 'stop']);
    // Leading before its turn: started at its turn, in order.
    const order: string[] = [];
    const again = new Lifecycle(createLogger('error'));
    again.setLeading(true);
    again.add({ name: 'a', start: () => void order.push('a') }, { name: 'b', leaderOnly: true, start: () => void order.push('b') }, { name: 'c', start: () => void order.push('c') });
    await again.start();
    expect(order).toEqual(['a', 'b', 'c']);
  });
});
