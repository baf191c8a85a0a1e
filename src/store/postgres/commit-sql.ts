/**
 * The commit functions of schema version 4 (migrations.ts), in PostgreSQL's own language.
 *
 * An expectation arrives in one of three shapes: {table, id, v} (the record is still the row
 * version `v` the daemon read: its xmin, the id of the transaction that wrote it, which any
 * rewrite changes), {table, id, value} (still equal to value as jsonb: a record the daemon built
 * itself), or {table, id} (still absent).
 */
import { CONFLICT_SQLSTATE } from './errors.js';

const conflict = (x: string) => `RAISE EXCEPTION 'store conflict' USING ERRCODE = '${CONFLICT_SQLSTATE}',
        DETAIL = jsonb_build_object('table', ${x}->'table', 'id', ${x}->'id')::text`;

/**
 * appreg_commit(expects, changes, prelocked): one commit. The records expected present are locked
 * in one sorted order (unless the caller already holds their locks) and then compared in one
 * statement; a lock waits for a concurrent writer and the comparison then sees its result. Each
 * expected-absent record is INSERTed as a placeholder without ON CONFLICT, so of two concurrent
 * commits expecting the same absence one waits and then fails on the unique key. Placeholders no
 * change wrote are removed before the end; nobody else ever sees them. A change that writes what
 * the record already holds is skipped: the row keeps its version, so commits that each make the
 * same idempotent change (revoking what one reused code issued, say) do not conflict.
 */
export const COMMIT_FUNCTION_V4 = `
DROP FUNCTION IF EXISTS appreg_commit(jsonb, jsonb);
CREATE FUNCTION appreg_commit(expects jsonb, changes jsonb, prelocked boolean DEFAULT false) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  e jsonb;
BEGIN
  IF NOT prelocked THEN
    PERFORM 1 FROM appreg_records r
      WHERE (r.tbl, r.id) IN (SELECT x->>'table', x->>'id' FROM jsonb_array_elements(expects) AS t(x) WHERE x ? 'v' OR x ? 'value')
      ORDER BY r.tbl COLLATE "C", r.id COLLATE "C" FOR UPDATE;
  END IF;
  SELECT x INTO e FROM jsonb_array_elements(expects) AS t(x)
    LEFT JOIN appreg_records r ON r.tbl = x->>'table' AND r.id = x->>'id'
    WHERE (x ? 'v' OR x ? 'value')
      AND (r.id IS NULL OR CASE WHEN x ? 'v' THEN r.xmin::text <> x->>'v' ELSE r.data IS DISTINCT FROM x->'value' END)
    LIMIT 1;
  IF e IS NOT NULL THEN
    ${conflict('e')};
  END IF;
  FOR e IN SELECT x FROM jsonb_array_elements(expects) AS t(x) WHERE NOT (x ? 'v' OR x ? 'value') LOOP
    BEGIN
      INSERT INTO appreg_records (tbl, id, data) VALUES (e->>'table', e->>'id', 'null'::jsonb);
    EXCEPTION WHEN unique_violation THEN
      ${conflict('e')};
    END;
  END LOOP;
  INSERT INTO appreg_records (tbl, id, data)
    SELECT c->>'table', c->>'id', c->'value' FROM jsonb_array_elements(changes) AS t(c)
    WHERE jsonb_typeof(c->'value') = 'object'
    ON CONFLICT (tbl, id) DO UPDATE SET data = EXCLUDED.data WHERE appreg_records.data IS DISTINCT FROM EXCLUDED.data;
  DELETE FROM appreg_records r USING jsonb_array_elements(changes) AS t(c)
    WHERE jsonb_typeof(c->'value') = 'null' AND r.tbl = c->>'table' AND r.id = c->>'id';
  DELETE FROM appreg_records r USING jsonb_array_elements(expects) AS t(x)
    WHERE NOT (x ? 'v' OR x ? 'value') AND r.tbl = x->>'table' AND r.id = x->>'id' AND r.data = 'null'::jsonb;
END
$fn$`;

/**
 * appreg_commit_many(commits): commits is a JSON array of [expects, changes] pairs. First it locks
 * every record any commit expects present, in one sorted order (so two batches never wait on each
 * other in opposite orders), then runs appreg_commit on each pair in a subtransaction. Answers a
 * JSON array: null for a commit that landed, {table, id} for one whose expectation failed (it
 * wrote nothing).
 */
export const COMMIT_MANY_FUNCTION = `
CREATE OR REPLACE FUNCTION appreg_commit_many(commits jsonb) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  c jsonb;
  d text;
  out jsonb := '[]'::jsonb;
BEGIN
  PERFORM 1 FROM appreg_records r
    WHERE (r.tbl, r.id) IN (
      SELECT e->>'table', e->>'id' FROM jsonb_array_elements(commits) AS p(x), jsonb_array_elements(p.x->0) AS q(e) WHERE e ? 'v' OR e ? 'value')
    ORDER BY r.tbl COLLATE "C", r.id COLLATE "C" FOR UPDATE;
  FOR c IN SELECT x FROM jsonb_array_elements(commits) AS t(x) LOOP
    BEGIN
      PERFORM appreg_commit(c->0, c->1, true);
      out := out || jsonb_build_array(NULL::jsonb);
    EXCEPTION WHEN SQLSTATE '${CONFLICT_SQLSTATE}' THEN
      GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
      out := out || jsonb_build_array(d::jsonb);
    END;
  END LOOP;
  RETURN out;
END
$fn$`;

/**
 * appreg_commit_batch(commits) (schema version 5): the commits of one batch, [expects, changes]
 * pairs as for appreg_commit_many, in a few set-based statements instead of a subtransaction and
 * half a dozen statements each. It is the same as running them one after another only because the
 * daemon never puts into one batch a commit that expects a record an earlier commit of the batch
 * writes (batched-ops.ts cuts the batch there): so every expectation is decided against the
 * records as they were before the batch, and a commit that fails changes no other's outcome.
 *
 * 1. Lock every record expected present, in one sorted order, and compare each as locked (a lock
 *    that waited for another writer sees its result); one expected absent must not be there.
 * 2. Placeholders for the records the remaining commits expect absent, sorted, ON CONFLICT DO
 *    NOTHING: a concurrent insert of one is waited for, and if it committed, the commits expecting
 *    that record absent fail.
 * 3. The remaining commits' changes, the last one per record: upserts that skip no-op writes (the
 *    row keeps its version), deletes; then the placeholders no change wrote are removed.
 * Answers a JSON array: null per commit that landed, {table, id} per commit that failed.
 */
export const COMMIT_BATCH_FUNCTION = `
CREATE OR REPLACE FUNCTION appreg_commit_batch(commits jsonb) RETURNS jsonb LANGUAGE plpgsql AS $fn$
DECLARE
  failed jsonb;
  absent boolean;
  lost jsonb;
  k record;
BEGIN
  -- Every statement reaches records by key, one by one (IN over a function's rows, correlated
  -- EXISTS, a loop): the planner cannot know how few keys a batch names, and a join it costs for
  -- thousands of them scans the whole table. The records expected present are locked and compared
  -- in one statement: FOR UPDATE answers each row as locked (after waiting for a concurrent
  -- writer, its result); one expected absent must not be there.
  WITH locked AS MATERIALIZED (
    SELECT r.tbl, r.id, r.xmin::text AS v, r.data FROM appreg_records r
    WHERE (r.tbl, r.id) IN (
      SELECT e->>'table', e->>'id' FROM jsonb_array_elements(commits) AS p(x), jsonb_array_elements(p.x->0) AS q(e) WHERE e ? 'v' OR e ? 'value')
    ORDER BY r.tbl COLLATE "C", r.id COLLATE "C" FOR UPDATE),
  e AS (
    SELECT p.i, q.x FROM jsonb_array_elements(commits) WITH ORDINALITY AS p(c, i), jsonb_array_elements(p.c->0) AS q(x))
  SELECT (SELECT jsonb_object_agg(m.i::text, jsonb_build_object('table', m.tbl, 'id', m.id))
          FROM (SELECT DISTINCT ON (e.i) e.i, e.x->>'table' AS tbl, e.x->>'id' AS id FROM e
                WHERE CASE
                  WHEN e.x ? 'v' THEN NOT EXISTS (SELECT 1 FROM locked l WHERE l.tbl = e.x->>'table' AND l.id = e.x->>'id' AND l.v = e.x->>'v')
                  WHEN e.x ? 'value' THEN NOT EXISTS (SELECT 1 FROM locked l WHERE l.tbl = e.x->>'table' AND l.id = e.x->>'id' AND l.data = e.x->'value')
                  ELSE EXISTS (SELECT 1 FROM appreg_records r WHERE r.tbl = e.x->>'table' AND r.id = e.x->>'id') END
                ORDER BY e.i, 2, 3) m),
         EXISTS (SELECT 1 FROM e WHERE NOT (e.x ? 'v' OR e.x ? 'value'))
    INTO failed, absent;
  failed := coalesce(failed, '{}'::jsonb);
  IF absent THEN
    WITH want AS (
      SELECT p.i, q.x->>'table' AS tbl, q.x->>'id' AS id
      FROM jsonb_array_elements(commits) WITH ORDINALITY AS p(c, i), jsonb_array_elements(p.c->0) AS q(x)
      WHERE NOT failed ? p.i::text AND NOT (q.x ? 'v' OR q.x ? 'value')),
    made AS (
      INSERT INTO appreg_records (tbl, id, data)
        SELECT tbl, id, 'null'::jsonb FROM (SELECT DISTINCT tbl, id FROM want) AS d ORDER BY tbl COLLATE "C", id COLLATE "C"
        ON CONFLICT DO NOTHING RETURNING tbl, id)
    SELECT jsonb_object_agg(m.i::text, jsonb_build_object('table', m.tbl, 'id', m.id)) INTO lost
    FROM (SELECT DISTINCT ON (w.i) w.i, w.tbl, w.id FROM want w
          WHERE NOT EXISTS (SELECT 1 FROM made WHERE made.tbl = w.tbl AND made.id = w.id)
          ORDER BY w.i, w.tbl, w.id) m;
    failed := failed || coalesce(lost, '{}'::jsonb);
  END IF;
  -- the last change per record of the commits that hold: upserts at once, deletes one by one
  FOR k IN
    WITH w AS (
      SELECT DISTINCT ON (q.c->>'table', q.c->>'id') q.c->>'table' AS tbl, q.c->>'id' AS id, q.c->'value' AS value
      FROM jsonb_array_elements(commits) WITH ORDINALITY AS p(x, i), jsonb_array_elements(p.x->1) WITH ORDINALITY AS q(c, o)
      WHERE NOT failed ? p.i::text
      ORDER BY q.c->>'table', q.c->>'id', p.i DESC, q.o DESC),
    up AS (
      INSERT INTO appreg_records (tbl, id, data) SELECT tbl, id, value FROM w WHERE jsonb_typeof(value) = 'object'
      ON CONFLICT (tbl, id) DO UPDATE SET data = EXCLUDED.data WHERE appreg_records.data IS DISTINCT FROM EXCLUDED.data)
    SELECT tbl, id FROM w WHERE jsonb_typeof(value) = 'null'
  LOOP
    DELETE FROM appreg_records WHERE tbl = k.tbl AND id = k.id;
  END LOOP;
  IF absent THEN
    FOR k IN SELECT DISTINCT q.x->>'table' AS tbl, q.x->>'id' AS id FROM jsonb_array_elements(commits) AS p(c), jsonb_array_elements(p.c->0) AS q(x)
        WHERE NOT (q.x ? 'v' OR q.x ? 'value') LOOP
      DELETE FROM appreg_records WHERE tbl = k.tbl AND id = k.id AND data = 'null'::jsonb;
    END LOOP;
  END IF;
  RETURN (SELECT jsonb_agg(failed->(i::text) ORDER BY i) FROM generate_series(1, jsonb_array_length(commits)) AS g(i));
END
$fn$`;
