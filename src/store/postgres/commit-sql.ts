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
