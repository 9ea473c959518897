import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { repoRoot } from '../helpers/cli.js';

describe('shell scripts', () => {
  it('pass shellcheck (scripts/*.sh and .ci/run, the kind script included)', () => {
    const scripts = [...readdirSync(`${repoRoot}scripts`).filter((f) => f.endsWith('.sh')).map((f) => `scripts/${f}`), '.ci/run'];
    expect(scripts).toContain('scripts/e2e-kind.sh');
    const result = spawnSync('shellcheck', scripts, { cwd: repoRoot, encoding: 'utf8' });
    if (result.error) throw new Error(`shellcheck is not installed (apt-get install shellcheck): ${result.error.message}`);
    expect(result.stdout).toBe('');
    expect(result.status).toBe(0);
  });
});
