// Stops the control plane the suite started (SPEC_GUARD_E2E_KEEP=1 keeps it for debugging).
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export default async function globalTeardown() {
  if (!process.env.SPEC_GUARD_E2E_OWNED || process.env.SPEC_GUARD_E2E_KEEP) return;
  const script = fileURLToPath(new URL('../../scripts/control-plane.sh', import.meta.url));
  execFileSync('bash', [script, 'down'], { env: { ...process.env, CP_NAME: 'e2e' }, stdio: 'inherit' });
}
