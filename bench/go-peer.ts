import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The trusted user the Go peer lets through, as spec-guard's bench configurations do. */
export const GO_TRUSTED_USER = 'system:serviceaccount:argocd:argocd-agent-agent';

/** Builds a Go peer (bench/<name>, its own module) into the ignored cache folder; a rebuild only links. */
function buildGoPeer(name: string): string {
  const out = join(repoRoot, '.cache', 'bin', name);
  execFileSync('go', ['build', '-o', out, '.'], { cwd: join(repoRoot, 'bench', name), stdio: 'inherit' });
  return out;
}

/** The minimal Go webhook (bench/go-webhook). */
export const buildGoWebhook = (): string => buildGoPeer('go-webhook');

/** The minimal Go reverter (bench/go-reverter). */
export const buildGoReverter = (): string => buildGoPeer('go-reverter');
