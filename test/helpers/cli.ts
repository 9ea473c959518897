import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const cliPath = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

/** Runs the built CLI to completion. */
export function runCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, [cliPath, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

export interface Daemon {
  child: ChildProcess;
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number | null>;
  logs: () => string;
  /** Resolves with the first log line matching `pattern`. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `spec-guard serve …` as a child process, collecting its logs. */
export function startCli(args: string[], env: NodeJS.ProcessEnv = {}): Daemon {
  return startProcess(process.execPath, [cliPath, ...args], env);
}

/** A configuration guarding Applications and nothing else, written to a new temporary folder. */
export function applicationsConfig(): string {
  const config = join(mkdtempSync(join(tmpdir(), 'spec-guard-config-')), 'c.yaml');
  writeFileSync(config, 'resources:\n  - group: argoproj.io\n    resource: applications\n');
  return config;
}

/** Starts `spec-guard serve --standalone` with `config` on ephemeral local ports (`extra`: more flags). */
export function startStandalone(config: string, extra: string[] = []): Daemon {
  return startCli(['serve', '--standalone', '--config', config, '--port', '0', '--metrics-port', '0', '--bind-address', '127.0.0.1', ...extra]);
}

/** Starts any program as a child process, collecting its logs (stdout and stderr). */
export function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Daemon {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const waiters: Array<() => void> = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    waiters.forEach((w) => w());
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    exited,
    logs: () => output,
    waitForLog(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = output.split('\n').find((l) => pattern.test(l));
          if (line) {
            clearTimeout(timer);
            resolve(line);
          }
        };
        const timer = setTimeout(() => reject(new Error(`no log line matching ${pattern} within ${timeoutMs} ms; logs:\n${output}`)), timeoutMs);
        waiters.push(check);
        void exited.then(() => setTimeout(() => reject(new Error(`process exited before logging ${pattern}; logs:\n${output}`)), 50));
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
