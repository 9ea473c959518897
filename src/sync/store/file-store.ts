import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { CanonicalEntry, Tombstone } from '../cache.js';
import { TombstoneWriter } from '../tombstones.js';
import { emptySnapshot, type CanonicalStore, type Snapshot } from './types.js';

const FORMAT = 'spec-guard/canonical-state/v1';

interface FileFormat {
  format: typeof FORMAT;
  entries: Record<string, CanonicalEntry>;
  tombstones: Record<string, Tombstone>;
}

function parse(text: string): Snapshot {
  const data = JSON.parse(text) as FileFormat;
  if (data?.format !== FORMAT || typeof data.entries !== 'object' || typeof data.tombstones !== 'object') {
    throw new Error(`not a ${FORMAT} file`);
  }
  for (const [key, entry] of Object.entries(data.entries)) {
    if (typeof entry?.viewHash !== 'string' || typeof entry.valuesJson !== 'string') throw new Error(`entry ${key} is malformed`);
  }
  return { entries: new Map(Object.entries(data.entries)), tombstones: new Map(Object.entries(data.tombstones)) };
}

/**
 * One JSON file, for a single replica. Every write goes to a temporary file that is
 * fsynced and renamed over the old one, so a kill -9 leaves the old or the new state,
 * never half of one. A file that cannot be read back is moved aside, reported, and
 * never trusted.
 */
export class FileStore implements CanonicalStore {
  readonly description: string;
  private state: Snapshot = emptySnapshot();
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly report: (msg: string, fields: Record<string, unknown>) => void,
  ) {
    this.description = `file ${path}`;
  }

  async load(): Promise<Snapshot> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ...emptySnapshot() };
      throw new Error(`cannot read the state file ${this.path}: ${(err as Error).message}`);
    }
    try {
      this.state = parse(text);
    } catch (err) {
      const aside = `${this.path}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(this.path, aside);
      this.report('state file is corrupt: moved aside, starting without stored canonical values', {
        file: this.path,
        movedTo: aside,
        error: (err as Error).message,
      });
      this.state = emptySnapshot();
    }
    return { entries: new Map(this.state.entries), tombstones: new Map(this.state.tombstones) };
  }

  /** Writes the whole state atomically; writes are serialized. */
  private persist(): Promise<void> {
    const write = async () => {
      const data: FileFormat = {
        format: FORMAT,
        entries: Object.fromEntries(this.state.entries),
        tombstones: Object.fromEntries(this.state.tombstones),
      };
      await mkdir(dirname(this.path), { recursive: true });
      const tmp = `${this.path}.tmp-${process.pid}`;
      const handle = await open(tmp, 'w', 0o600);
      try {
        await handle.writeFile(JSON.stringify(data));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.path);
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }

  async saveEntries(entries: ReadonlyMap<string, CanonicalEntry>, changed: ReadonlySet<string>): Promise<void> {
    for (const key of changed) {
      const entry = entries.get(key);
      if (entry) this.state.entries.set(key, entry);
      else this.state.entries.delete(key);
    }
    await this.persist();
  }

  private readonly tombstones = new TombstoneWriter(async (change) => {
    this.state.tombstones = change(this.state.tombstones);
    await this.persist();
  });

  addTombstone(key: string, tombstone: Tombstone): Promise<void> {
    return this.tombstones.set(key, tombstone);
  }

  usage(): number {
    return 0;
  }

  removeTombstone(key: string): Promise<void> {
    return this.tombstones.set(key, null);
  }

  async readTombstones(): Promise<Map<string, Tombstone>> {
    return new Map(this.state.tombstones);
  }
}
