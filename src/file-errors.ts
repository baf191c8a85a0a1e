import { errnoOf, messageOf } from './unknown-values.js';

/**
 * Why a file could not be read, in words ("no such file"), not the system's code (ENOENT): one wording for the CLI's
 * options and appreg test's suite files.
 */
export function unreadable(e: unknown): string {
  const code = errnoOf(e);
  return (code && UNREADABLE[code]) ?? code ?? messageOf(e);
}

const UNREADABLE: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a folder, not a file',
  ENOTDIR: 'a part of its path is not a folder',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
};
