import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { ContinuityRecord } from '../../guard/attribution.js';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import { MemoryStore } from './memory-store.js';
import { emptySnapshot, type Snapshot } from './types.js';

const FORMAT = 'spec-guard/canonical-state/v1';
/** Characters written per write call. */
const CHUNK_CHARS = 64 * 1024;

interface FileFormat {
  format: typeof FORMAT;
  entries: Record<string, CanonicalEntry>;
  tombstones: Record<string, Tombstone>;
  continuity?: ContinuityRecord;
}

function parse(text: string): Snapshot {
  const data = JSON.parse(text) as FileFormat;
  if (data?.format !== FORMAT || typeof data.entries !== 'object' || typeof data.tombstones !== 'object') {
    throw new Error(`not a ${FORMAT} file`);
  }
  for (const [key, entry] of Object.entries(data.entries)) {
    if (typeof entry?.viewHash !== 'string' || typeof entry.valuesJson !== 'string') throw new Error(`entry ${key} is malformed`);
  }
  return { entries: new Map(Object.entries(data.entries)), tombstones: new Map(Object.entries(data.tombstones)), continuity: data.continuity };
}

/**
 * One JSON file, for a single replica. Every write goes to a temporary file that is
 * fsynced and renamed over the old one, so a kill -9 leaves the old or the new state,
 * never half of one. A file that cannot be read back is moved aside, reported, and
 * never trusted.
 */
export class FileStore extends MemoryStore {
  override readonly description: string;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly path: string,
    private readonly report: (msg: string, fields: Record<string, unknown>) => void,
  ) {
    super();
    this.description = `file ${path}`;
  }

  override async load(): Promise<Snapshot> {
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
    return { entries: new Map(this.state.entries), tombstones: new Map(this.state.tombstones), continuity: this.state.continuity };
  }

  /**
   * Writes the whole state atomically; writes are serialized. The JSON is written entry by
   * entry in chunks of about 64 KB: one string of the whole state (60 MB at 10,000 objects
   * of 5 KB), and its copy as a Buffer, would be the process's largest allocations.
   */
  protected override persist(): Promise<void> {
    const write = async () => {
      await mkdir(dirname(this.path), { recursive: true });
      const tmp = `${this.path}.tmp-${process.pid}`;
      const handle = await open(tmp, 'w', 0o600);
      try {
        let chunk = `{"format":${JSON.stringify(FORMAT)},"tombstones":${JSON.stringify(Object.fromEntries(this.state.tombstones))}`;
        if (this.state.continuity) chunk += `,"continuity":${JSON.stringify(this.state.continuity)}`;
        chunk += ',"entries":{';
        let first = true;
        for (const [key, entry] of this.state.entries) {
          chunk += `${first ? '' : ','}${JSON.stringify(key)}:${JSON.stringify(entry)}`;
          first = false;
          if (chunk.length >= CHUNK_CHARS) {
            await handle.write(chunk);
            chunk = '';
          }
        }
        await handle.write(`${chunk}}}`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.path);
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }
}
