import { readdirSync, readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from '@jest/globals';

const src = new URL('../../src/', import.meta.url);
const importsOf = (folder: string) =>
  readdirSync(new URL(`${folder}/`, src))
    .filter((f) => f.endsWith('.ts'))
    .flatMap((file) => [...readFileSync(new URL(`${folder}/${file}`, src), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => ({ file, from: m[1]! })));

describe('the code layout', () => {
  it('the pure core (src/guard) imports nothing that does I/O: only itself, Kubernetes types and JSON rules, config types, hashing and compression (in memory)', () => {
    const allowed = [/^\.\/[a-z-]+\.js$/, /^\.\.\/kube\/(types|json)\.js$/, /^\.\.\/config\/schema\.js$/, /^node:crypto$/, /^node:zlib$/];
    const outside = importsOf('guard').filter(({ from }) => !allowed.some((a) => a.test(from)));
    expect(outside).toEqual([]);
  });

  it('nothing imports upwards into webhook/ or sync/ from the core or from kube/', () => {
    for (const folder of ['guard', 'kube']) {
      expect(importsOf(folder).filter(({ from }) => /\/(webhook|sync|registration|commands|certs)\//.test(from))).toEqual([]);
    }
  });

  it('kube/ is the bottom layer: it imports only itself, the names and Kubernetes wire types (client-node: its KubeConfig module alone)', () => {
    const allowed = [/^\.\/[a-z-]+\.js$/, /^\.\.\/names\.js$/, /^kubernetes-types\//, /^@kubernetes\/client-node\/dist\/config\.js$/, /^node:/, /^yaml$/];
    expect(importsOf('kube').filter(({ from }) => !allowed.some((a) => a.test(from)))).toEqual([]);
  });

  it('small files with one purpose, small functions: no file in src/ over 350 lines, no function over 60', () => {
    const files = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    const tooLong: string[] = [];
    for (const file of files) {
      const text = readFileSync(new URL(file, src), 'utf8');
      const lines = text.split('\n').length;
      if (lines > 351) tooLong.push(`${file}: ${lines} lines`);
      const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && 'body' in node && node.body) {
          const from = source.getLineAndCharacterOfPosition(node.getStart()).line;
          const to = source.getLineAndCharacterOfPosition(node.getEnd()).line;
          if (to - from + 1 > 60) tooLong.push(`${file}:${from + 1}: a function of ${to - from + 1} lines`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(tooLong).toEqual([]);
  });

  it('outside kube/, the API is read and written through the typed resource client (Resources) or the informers, never by raw paths', () => {
    const files = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts') && !f.startsWith('kube/'));
    const raw = files.filter((file) => /\.request[<(]/.test(readFileSync(new URL(file, src), 'utf8')));
    expect(raw).toEqual([]);
  });
});
