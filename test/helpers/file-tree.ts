/** Every file under a directory, for "byte-for-byte unchanged" checks over a whole data directory. */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** Every file under `dir` (sub-directories too), path → sha-256; each sub-directory as `name/` → 'dir'. */
export function tree(dir: string, prefix = ''): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) Object.assign(out, tree(p, `${prefix}${e.name}/`), { [`${prefix}${e.name}/`]: 'dir' });
    else out[prefix + e.name] = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
  }
  return out;
}
