import { constants, createReadStream } from 'node:fs';
import { access, mkdir, open, rename } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { dirname } from 'node:path';
import type { ContinuityRecord } from '../../guard/attribution.js';
import type { CanonicalEntry, Tombstone } from '../../guard/index.js';
import { MemoryStore } from './memory-store.js';
import { emptySnapshot, type Snapshot } from './types.js';

const FORMAT = 'spec-guard/canonical-state/v2';
/** The format before v2: one JSON document (read, never written). */
const FORMAT_V1 = 'spec-guard/canonical-state/v1';
/** Characters written per write call. */
const CHUNK_CHARS = 64 * 1024;

interface Header {
  format: typeof FORMAT;
  tombstones: Record<string, Tombstone>;
  continuity?: ContinuityRecord;
}

function checkEntry(key: unknown, entry: CanonicalEntry | undefined): void {
  if (typeof key !== 'string' || typeof entry?.viewHash !== 'string' || typeof entry.valuesJson !== 'string') throw new Error(`entry ${String(key)} is malformed`);
}

/**
 * Reads the state line by line (v2: a header, one `[key, entry]` per line, a trailer with
 * the count), so that loading holds one entry at a time besides the result, never the
 * whole file as one string. A v1 file is one JSON document on one line.
 */
async function readState(path: string): Promise<Snapshot> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  const snapshot = emptySnapshot();
  let header: Header | undefined;
  let count: number | undefined;
  for await (const line of lines) {
    if (!line) continue;
    if (count !== undefined) throw new Error('content after the trailer');
    const value = JSON.parse(line) as unknown;
    if (!header) {
      const first = value as Omit<Partial<Header>, 'format'> & { format?: string; entries?: Record<string, CanonicalEntry> };
      if (first?.format === FORMAT_V1 && typeof first.entries === 'object' && typeof first.tombstones === 'object') {
        for (const [key, entry] of Object.entries(first.entries)) checkEntry(key, entry);
        return { entries: new Map(Object.entries(first.entries)), tombstones: new Map(Object.entries(first.tombstones)), continuity: first.continuity };
      }
      if (first?.format !== FORMAT || typeof first.tombstones !== 'object') throw new Error(`not a ${FORMAT} file`);
      header = first as Header;
      continue;
    }
    if (Array.isArray(value)) {
      const [key, entry] = value as [string, CanonicalEntry];
      checkEntry(key, entry);
      snapshot.entries.set(key, entry);
    } else {
      count = (value as { entries?: number }).entries;
      if (count !== snapshot.entries.size) throw new Error(`the trailer counts ${String(count)} entries, the file has ${snapshot.entries.size}`);
    }
  }
  if (!header || count === undefined) throw new Error('the file ends early (no trailer)');
  return { entries: snapshot.entries, tombstones: new Map(Object.entries(header.tombstones)), continuity: header.continuity };
}

/**
 * One file, for a single replica (JSON lines). Every write goes to a temporary file that is
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
    try {
      await access(this.path, constants.R_OK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ...emptySnapshot() };
      throw new Error(`cannot read the state file ${this.path}: ${(err as Error).message}`);
    }
    try {
      this.state = await readState(this.path);
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
   * Writes the whole state atomically; writes are serialized. One line per entry, written in
   * chunks of about 64 KB: one string of the whole state (60 MB at 10,000 objects
   * of 5 KB), and its copy as a Buffer, would be the process's largest allocations.
   */
  protected override persist(): Promise<void> {
    const write = async () => {
      await mkdir(dirname(this.path), { recursive: true });
      const tmp = `${this.path}.tmp-${process.pid}`;
      const handle = await open(tmp, 'w', 0o600);
      try {
        const header: Header = { format: FORMAT, tombstones: Object.fromEntries(this.state.tombstones), ...(this.state.continuity ? { continuity: this.state.continuity } : {}) };
        let chunk = `${JSON.stringify(header)}\n`;
        let count = 0;
        for (const [key, entry] of this.state.entries) {
          chunk += `${JSON.stringify([key, entry])}\n`;
          count++;
          if (chunk.length >= CHUNK_CHARS) {
            await handle.write(chunk);
            chunk = '';
          }
        }
        await handle.write(`${chunk}${JSON.stringify({ entries: count })}\n`);
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
