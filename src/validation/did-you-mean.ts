/** "Did you mean …?" for a misspelt manifest field, scope or event: the closest known word, when it is close. */
import { must } from '../must.js';

/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b`, ignoring case. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const d: number[][] = Array.from({ length: x.length + 1 }, (_r, i) =>
    Array.from({ length: y.length + 1 }, (_c, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= x.length; i++) {
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      let v = Math.min(must(must(d[i - 1])[j]) + 1, must(must(d[i])[j - 1]) + 1, must(must(d[i - 1])[j - 1]) + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1])
        v = Math.min(v, must(must(d[i - 2])[j - 2]) + 1);
      must(d[i])[j] = v;
    }
  }
  return must(must(d[x.length])[y.length]);
}

/** The known word closest to `word`, if it is within a third of its length (at least 1 edit, at most 3). */
export function closest(word: string, known: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  let best: string | undefined;
  let bestD = Infinity;
  for (const k of known) {
    const dk = distance(word, k);
    if (dk < bestD) [best, bestD] = [k, dk];
  }
  return best !== undefined && bestD <= limit && best !== word ? best : undefined;
}

/** ` Did you mean "x"?` after a message, or nothing. */
export const didYouMean = (word: unknown, known: Iterable<string>): string => {
  const hit = typeof word === 'string' ? closest(word, known) : undefined;
  return hit ? `; did you mean "${hit}"?` : '';
};
