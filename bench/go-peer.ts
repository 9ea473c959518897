import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APISERVER } from './cluster.js';

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

/**
 * A peer reverter (`command` `args` SERVER CA CERT KEY argocd `mode`) as spec-guard's identity
 * (`selfKubeconfig`'s certificate), once it watches (its first line of output).
 */
export async function startPeerReverter(command: string, args: string[], selfKubeconfig: string, mode: string[] = []): Promise<ChildProcess> {
  const pki = join(dirname(selfKubeconfig), 'pki');
  const child = spawn(command, [...args, APISERVER, join(pki, 'ca.crt'), join(pki, 'spec-guard.crt'), join(pki, 'spec-guard.key'), 'argocd', ...mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  await firstLine(child, command);
  return child;
}

/** Resolves once `child` (stdout piped) writes its first output, rejects if it exits before. */
export function firstLine(child: ChildProcess, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}) before its first line`)));
  });
}

/** The Go reverter (from buildGoReverter) following every change and reverting none: the watch a guard keeps, apart from what it does with it. */
export const followApplications = (command: string, selfKubeconfig: string): Promise<ChildProcess> => startPeerReverter(command, [], selfKubeconfig, ['follow']);
