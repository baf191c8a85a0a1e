/**
 * What a compaction writes: the records of every table as they were at one instant, holding only
 * acknowledged commits, kept while the data file is streamed out and commits go on.
 *
 * Each table is copied as two arrays, its ids and the handles of its record texts (a text is never
 * changed, a commit stores a new one, and the arena's reader taken with the copy keeps every text
 * it names readable: text-arena.ts). That is 16 bytes a record, of exactly the size needed; a copy
 * of the table maps cost some 40–60 (hash tables sized to a power of two, in one block per table),
 * about 35 MB more at the peak of the token benchmark, where the 300,000 codes' map alone was a
 * 15 MB copy. Commits written but not yet acknowledged are undone in the view, not in the copy:
 * their records' earlier texts are kept beside it and read in their place.
 */
import type { ArenaReader } from './text-arena.js';
import { recordText, type CommitUndo, type TablesCopy } from './tables.js';
import { must } from '../must.js';

/** One table at the instant of capture: ids[i] held the text of handles[i]. */
interface TableCopy {
  ids: string[];
  handles: number[];
}

export class TableSnapshot {
  readonly #tables: Map<string, TableCopy>;
  readonly #texts: ArenaReader;
  /** Per table, id → the text before the oldest unacknowledged commit that changed it (undefined: none). */
  readonly #before = new Map<string, Map<string, string | undefined>>();

  /**
   * `copy`: each table's ids and text handles at this instant (Tables.copyEntries); `unacknowledged`:
   * the commits among them whose write may still fail, oldest first.
   */
  constructor(copy: TablesCopy, unacknowledged: readonly CommitUndo[]) {
    this.#tables = copy.tables;
    this.#texts = copy.texts;
    for (const { prev } of unacknowledged)
      for (const { table, id, json } of prev) {
        let t = this.#before.get(table);
        if (!t) this.#before.set(table, (t = new Map()));
        if (!t.has(id)) t.set(id, json); // the oldest commit's: what was acknowledged
      }
  }

  /** Done with the copy (written or failed): the texts it held are let go and the arena may sweep again. */
  release(): void {
    this.#tables.clear();
    this.#texts.release();
  }

  /** The names of the tables that may hold records, in the order their records come. */
  names(): string[] {
    const out = [...this.#tables.keys()];
    for (const name of this.#before.keys()) if (!this.#tables.has(name)) out.push(name);
    return out;
  }

  /**
   * The records of `table` as [id, JSON text], each once; its copy is let go when they have all been
   * read (a compaction writes a table once).
   */
  *records(table: string): Generator<[string, string]> {
    const copy = this.#tables.get(table);
    const before = this.#before.get(table);
    this.#tables.delete(table);
    let replaced: Set<string> | undefined;
    if (copy) {
      const { ids, handles } = copy;
      for (let i = 0; i < ids.length; i++) {
        const id = must(ids[i]);
        if (before?.has(id)) {
          (replaced ??= new Set()).add(id);
          const text = before.get(id);
          if (text !== undefined) yield [id, recordText(id, text)];
        } else yield [id, recordText(id, this.#texts.text(must(handles[i])))];
      }
    }
    // records an unacknowledged commit deleted: not in the copy, but acknowledged
    if (before)
      for (const [id, text] of before) if (text !== undefined && !replaced?.has(id)) yield [id, recordText(id, text)];
  }
}
