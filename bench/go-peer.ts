import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** The trusted user the Go peer lets through, as spec-guard's bench configurations do. */
export const GO_TRUSTED_USER = 'system:serviceaccount:argocd:argocd-agent-agent';

/** Builds the minimal Go webhook (bench/go-webhook) into the ignored cache folder; a rebuild only links. */
export function buildGoWebhook(): string {
  const out = join(repoRoot, '.cache', 'bin', 'go-webhook');
  execFileSync('go', ['build', '-o', out, '.'], { cwd: join(repoRoot, 'bench', 'go-webhook'), stdio: 'inherit' });
  return out;
}
