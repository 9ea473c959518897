import { constants, createReadStream } from 'node:fs';
import { access, mkdir, open, readdir, rename, stat, truncate, unlink } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { basename, dirname, join } from 'node:path';
import type { ContinuityRecord } from '../../guard/attribution.js';
import { packEntry, type CanonicalEntry, type Tombstone } from '../../guard/index.js';
import { MemoryStore, type StateChange } from './memory-store.js';
import { applyTouch, isTouch, type Touch } from './touch.js';
import { emptySnapshot, type Snapshot, type StoreReport } from './types.js';
import { FoldAccount } from './fold-account.js';

const FORMAT = 'spec-guard/canonical-state/v2';
/** The format before v2: one JSON document (read, never written). */
const FORMAT_V1 = 'spec-guard/canonical-state/v1';
/** Characters written per write call. */
const CHUNK_CHARS = 64 * 1024;
/** The dead weight below which the log is never folded (fold-account.ts says when it is). */
const COMPACT_MIN_BYTES = 16 * 1024 * 1024;

/** One line of the log: a change to one entry (whole, or its revisions alone) or tombstone, the continuity record, or the end of a write. */
type LogRecord =
  | { set: [string, CanonicalEntry] }
  | { touch: [string, Touch] }
  | { del: string }
  | { tomb: [string, Tombstone] }
  | { untomb: string }
  | { continuity: ContinuityRecord }
  | { commit: number };

/** A line of the log, and the entry it sets (the entry's newest line) or deletes. */
interface LogLine {
  text: string;
  entry?: { key: string; deleted: boolean };
}

/** The log lines of a change, one at a time: a change of every entry is the size of the state. */
function* logLines(change: StateChange): Generator<LogLine> {
  for (const [key, entry] of change.entries ?? []) yield { text: JSON.stringify(entry ? { set: [key, entry] } : { del: key }), entry: { key, deleted: !entry } };
  for (const [key, touch] of change.touches ?? []) yield { text: JSON.stringify({ touch: [key, touch] }) };
  for (const [key, tombstone] of change.tombstones ?? []) yield { text: JSON.stringify(tombstone ? { tomb: [key, tombstone] } : { untomb: key }) };
  if (change.continuity) yield { text: JSON.stringify({ continuity: change.continuity }) };
}

/**
 * Replays the log onto `snapshot`: each write's records count only with the commit line that
 * ends them. Returns the length of the log up to the last commit, how many records a write
 * cut short (a kill during an append) left after it (those were never acknowledged), and how
 * many touches found another value than theirs (not applied: the entry keeps its older
 * revisions, which attribute less, never more).
 */
async function replayLog(path: string, snapshot: Snapshot, account: FoldAccount): Promise<{ committedBytes: number; committedChars: number; uncommitted: number; strayTouches: number }> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  /** The records of the write being read, each with the length of its line. */
  let pending: Array<[LogRecord, number]> = [];
  let bytes = 0;
  let committedBytes = 0;
  let chars = 0;
  let committedChars = 0;
  let strayTouches = 0;
  for await (const line of lines) {
    bytes += Buffer.byteLength(line) + 1;
    chars += line.length + 1;
    if (!line) continue;
    let record: LogRecord;
    try {
      record = JSON.parse(line) as LogRecord;
    } catch {
      // A torn last line; anything after it would make it corruption, which the caller sees as records left over.
      pending.push([{ commit: -1 }, 0]);
      continue;
    }
    if (!('commit' in record)) {
      pending.push([record, line.length + 1]);
      continue;
    }
    if (record.commit !== pending.length || pending.some(([r]) => 'commit' in r)) throw new Error(`the log's write ending at byte ${bytes} is malformed`);
    for (const [r, size] of pending) {
      if ('set' in r) {
        checkEntry(r.set[0], r.set[1]);
        snapshot.entries.set(r.set[0], packEntry(r.set[1]));
        account.line(r.set[0], size);
      } else if ('touch' in r) {
        const [key, touch] = r.touch;
        if (typeof key !== 'string' || !isTouch(touch)) throw new Error(`touch of ${String(key)} is malformed`);
        const touched = applyTouch(snapshot.entries.get(key), touch);
        if (touched) snapshot.entries.set(key, touched);
        else strayTouches++;
      } else if ('del' in r) {
        snapshot.entries.delete(r.del);
        account.line(r.del, undefined);
      } else if ('tomb' in r) snapshot.tombstones.set(r.tomb[0], r.tomb[1]);
      else if ('untomb' in r) snapshot.tombstones.delete(r.untomb);
      else if ('continuity' in r) snapshot.continuity = r.continuity;
    }
    pending = [];
    committedBytes = bytes;
    committedChars = chars;
  }
  return { committedBytes, committedChars, uncommitted: pending.length, strayTouches };
}

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
async function readState(path: string, account: FoldAccount): Promise<{ snapshot: Snapshot; chars: number; legacy: boolean }> {
  const lines = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  const snapshot = emptySnapshot();
  let header: Header | undefined;
  let count: number | undefined;
  let chars = 0;
  for await (const line of lines) {
    chars += line.length + 1;
    if (!line) continue;
    if (count !== undefined) throw new Error('content after the trailer');
    const value = JSON.parse(line) as unknown;
    if (!header) {
      const first = value as Omit<Partial<Header>, 'format'> & { format?: string; entries?: Record<string, CanonicalEntry> };
      if (first?.format === FORMAT_V1 && typeof first.entries === 'object' && typeof first.tombstones === 'object') {
        for (const [key, entry] of Object.entries(first.entries)) {
          checkEntry(key, entry);
          packEntry(entry);
        }
        const entries = new Map(Object.entries(first.entries));
        return { snapshot: { entries, tombstones: new Map(Object.entries(first.tombstones)), continuity: first.continuity }, chars, legacy: true };
      }
      if (first?.format !== FORMAT || typeof first.tombstones !== 'object') throw new Error(`not a ${FORMAT} file`);
      header = first as Header;
      continue;
    }
    if (Array.isArray(value)) {
      const [key, entry] = value as [string, CanonicalEntry];
      checkEntry(key, entry);
      snapshot.entries.set(key, packEntry(entry));
      account.line(key, line.length + 1);
    } else {
      count = (value as { entries?: number }).entries;
      if (count !== snapshot.entries.size) throw new Error(`the trailer counts ${String(count)} entries, the file has ${snapshot.entries.size}`);
    }
  }
  if (!header || count === undefined) throw new Error('the file ends early (no trailer)');
  return { snapshot: { entries: snapshot.entries, tombstones: new Map(Object.entries(header.tombstones)), continuity: header.continuity }, chars, legacy: false };
}

/**
 * For a single replica: a snapshot file (JSON lines) and a log beside it (`<path>.log`).
 * A write appends what changed to the log and fsyncs it (its cost follows what changed, not
 * the state's size); once the lines they supersede outweigh the live ones (fold-account.ts),
 * both files are folded into a new snapshot, written to a temporary file, fsynced and renamed
 * over the old one. A kill -9
 * leaves a state that loads: the log's last write counts only if its commit line made it
 * (an unfinished write was never acknowledged), and replaying a log already folded into the
 * snapshot changes nothing. A snapshot or log that cannot be read back is moved aside,
 * reported, and never trusted.
 */
export class FileStore extends MemoryStore {
  override readonly description: string;
  private writing: Promise<void> = Promise.resolve();
  private readonly logPath: string;
  private readonly account: FoldAccount;
  /** The last append did not finish: the log may end in part of it. */
  private appendFailed = false;

  constructor(
    private readonly path: string,
    report: StoreReport,
    foldFloorBytes = COMPACT_MIN_BYTES,
  ) {
    super(report);
    this.description = `file ${path}`;
    this.logPath = `${path}.log`;
    this.account = new FoldAccount(foldFloorBytes);
  }

  override async load(): Promise<Snapshot> {
    await this.removeUnfinishedSnapshots();
    const hasSnapshot = await readable(this.path);
    const hasLog = (await readable(this.logPath)) && (await stat(this.logPath)).size > 0;
    this.account.reset();
    try {
      let legacy = false;
      if (hasSnapshot) {
        const read = await readState(this.path, this.account);
        this.state = read.snapshot;
        legacy = read.legacy;
        this.account.folded(read.chars);
      } else this.state = emptySnapshot();
      if (hasLog) {
        const { committedBytes, committedChars, uncommitted, strayTouches } = await replayLog(this.logPath, this.state, this.account);
        if (strayTouches) this.report('the state log touches entries whose value differs from the touch (not applied: those keep their older revisions)', { file: this.logPath, touches: strayTouches });
        if (uncommitted) {
          this.report('the state log ends in a write cut short (never acknowledged): set aside', { file: this.logPath, records: uncommitted });
          await truncate(this.logPath, committedBytes);
        }
        this.account.wrote(committedChars);
      }
      // A log of what only grew is kept as it is (replaying it costs what reading it folded would).
      if (legacy || this.account.foldDue) await this.compact();
    } catch (err) {
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      for (const file of [this.path, this.logPath]) if (await readable(file)) await rename(file, `${file}.corrupt-${stamp}`);
      this.report('state file is corrupt: moved aside, starting without stored canonical values', {
        file: this.path,
        movedTo: `${this.path}.corrupt-${stamp}`,
        error: (err as Error).message,
      });
      this.state = emptySnapshot();
      this.account.reset();
    }
    return { entries: new Map(this.state.entries), tombstones: new Map(this.state.tombstones), continuity: this.state.continuity };
  }

  /** A kill during a compaction leaves its temporary file: the snapshot and log beside it are whole without it. */
  private async removeUnfinishedSnapshots(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(dirname(this.path));
    } catch {
      return;
    }
    const prefix = `${basename(this.path)}.tmp-`;
    await Promise.all(names.filter((n) => n.startsWith(prefix)).map((n) => unlink(join(dirname(this.path), n))));
  }

  /** Appends the change, and its commit line, to the log; writes are serialized. */
  protected override persist(change: StateChange): Promise<void> {
    const write = async () => {
      const records = (change.entries?.size ?? 0) + (change.touches?.size ?? 0) + (change.tombstones?.size ?? 0) + (change.continuity ? 1 : 0);
      if (records === 0) return;
      // Written as a snapshot instead of appended:
      // - when most entries changed (a first write): appended, they would be written twice,
      //   to the log and then by the compaction they bring about (touches, the revisions a
      //   relist raises, are a small fraction of an entry: appended);
      // - after a failed append (a full disk): the log may end in part of that write, and
      //   records after it would share its commit count, making the log unreadable. The
      //   state in memory holds every change, that one included.
      if (this.appendFailed || (change.entries?.size ?? 0) * 2 > this.state.entries.size) return this.compact();
      await mkdir(dirname(this.path), { recursive: true });
      const handle = await open(this.logPath, 'a', 0o600);
      this.appendFailed = true;
      try {
        let chunk = '';
        const append = async ({ text, entry }: LogLine) => {
          chunk += `${text}\n`;
          this.account.wrote(text.length + 1);
          if (entry) this.account.line(entry.key, entry.deleted ? undefined : text.length + 1);
          if (chunk.length < CHUNK_CHARS) return;
          await handle.write(chunk);
          chunk = '';
        };
        // Serialized as written, a chunk at a time: the event loop (admission) runs in between.
        for (const line of logLines(change)) await append(line);
        await append({ text: JSON.stringify({ commit: records }) });
        await handle.write(chunk);
        await handle.sync();
        this.appendFailed = false;
      } finally {
        await handle.close();
      }
      if (this.account.foldDue) await this.compact();
    };
    this.writing = this.writing.then(write, write);
    return this.writing;
  }

  /**
   * Writes the whole state as a new snapshot, atomically, then empties the log. One line per
   * entry, written in chunks of about 64 KB: one string of the whole state (60 MB at 10,000
   * objects of 5 KB), and its copy as a Buffer, would be the process's largest allocations.
   */
  private async compact(): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const tmp = `${this.path}.tmp-${process.pid}`;
    const handle = await open(tmp, 'w', 0o600);
    let chars = 0;
    this.account.reset();
    try {
      const header: Header = { format: FORMAT, tombstones: Object.fromEntries(this.state.tombstones), ...(this.state.continuity ? { continuity: this.state.continuity } : {}) };
      let chunk = `${JSON.stringify(header)}\n`;
      let count = 0;
      for (const [key, entry] of this.state.entries) {
        const line = JSON.stringify([key, entry]);
        chunk += `${line}\n`;
        this.account.line(key, line.length + 1);
        count++;
        if (chunk.length >= CHUNK_CHARS) {
          chars += chunk.length;
          await handle.write(chunk);
          chunk = '';
        }
      }
      chunk += `${JSON.stringify({ entries: count })}\n`;
      chars += chunk.length;
      await handle.write(chunk);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, this.path);
    // A kill here leaves the log beside a snapshot that already holds it: replaying it changes nothing.
    if (await readable(this.logPath)) await truncate(this.logPath, 0);
    this.account.folded(chars);
    this.appendFailed = false;
  }
}

async function readable(path: string): Promise<boolean> {
  try {
    await access(path, constants.R_OK);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new Error(`cannot read the state file ${path}: ${(err as Error).message}`);
  }
}
