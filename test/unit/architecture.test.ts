import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';

const src = new URL('../../src/', import.meta.url);
const importsOf = (folder: string) =>
  readdirSync(new URL(`${folder}/`, src))
    .filter((f) => f.endsWith('.ts'))
    .flatMap((file) => [...readFileSync(new URL(`${folder}/${file}`, src), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => ({ file, from: m[1]! })));

describe('the code layout', () => {
  it('the pure core (src/guard) imports nothing that does I/O: only itself, Kubernetes types and JSON rules, config types, hashing', () => {
    const allowed = [/^\.\/[a-z-]+\.js$/, /^\.\.\/kube\/(types|json)\.js$/, /^\.\.\/config\/schema\.js$/, /^node:crypto$/];
    const outside = importsOf('guard').filter(({ from }) => !allowed.some((a) => a.test(from)));
    expect(outside).toEqual([]);
  });

  it('nothing imports upwards into webhook/ or sync/ from the core or from kube/', () => {
    for (const folder of ['guard', 'kube']) {
      expect(importsOf(folder).filter(({ from }) => /\/(webhook|sync|registration|commands|certs)\//.test(from))).toEqual([]);
    }
  });

  it('kube/ is the bottom layer: it imports only itself, the names and Kubernetes wire types', () => {
    const allowed = [/^\.\/[a-z-]+\.js$/, /^\.\.\/names\.js$/, /^kubernetes-types\//, /^@kubernetes\/client-node$/, /^node:/, /^yaml$/];
    expect(importsOf('kube').filter(({ from }) => !allowed.some((a) => a.test(from)))).toEqual([]);
  });
});
