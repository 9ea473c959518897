import { readFileSync } from 'node:fs';
import type { Logger } from '../log/index.js';
import { pairProblem } from './inspect.js';
import type { ServingMaterial } from './tls-secret.js';

export interface TlsFiles {
  cert: string;
  key: string;
  /** CA bundle for the webhook configurations; absent: caBundle is left to a CA injector. */
  ca?: string;
}

/**
 * Certificates from files (cert-manager and the like), polled for changes. Polling, not
 * fs.watch: a mounted Secret is updated by swapping a symlink, which file watches miss.
 * A broken or half-written update is logged and the previous certificate kept.
 */
export class TlsFileSource {
  private timer?: NodeJS.Timeout;
  private last?: string;
  private lastProblem?: string;

  constructor(
    private readonly files: TlsFiles,
    private readonly logger: Logger,
    private readonly onChange: (material: ServingMaterial) => void,
    private readonly intervalMs = 2000,
  ) {}

  /** The material now on disk; throws an error naming the file when it cannot be served. */
  load(): ServingMaterial {
    const read = (what: string, file: string) => {
      try {
        return readFileSync(file, 'utf8');
      } catch (err) {
        throw new Error(`cannot read the ${what} file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
    };
    const material = {
      cert: read('TLS certificate', this.files.cert),
      key: read('TLS key', this.files.key),
      caBundle: this.files.ca ? read('CA bundle', this.files.ca) : '',
    };
    const problem = pairProblem(material);
    if (problem) throw new Error(`the TLS files ${this.files.cert} and ${this.files.key} cannot be served: ${problem}`);
    this.last = JSON.stringify(material);
    return material;
  }

  start(): void {
    this.timer = setInterval(() => this.poll(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private poll(): void {
    let material: ServingMaterial;
    const previous = this.last;
    try {
      material = this.load();
    } catch (err) {
      const problem = (err as Error).message;
      if (problem !== this.lastProblem) this.logger.error(`${problem}; still serving the previous certificate`);
      this.lastProblem = problem;
      return;
    }
    this.lastProblem = undefined;
    if (this.last === previous) return;
    this.logger.info('serving certificate reloaded from files', { cert: this.files.cert });
    this.onChange(material);
  }
}
