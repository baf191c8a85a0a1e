/**
 * A field the edge leaves open (a browser form's or query's, where no schema runs, or one a schema
 * lets be anything) as the one string the services take: a missing, repeated or nested one, or one
 * of another type, is undefined.
 */
export const textField = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
