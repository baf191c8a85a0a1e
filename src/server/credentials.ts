/**
 * credentials.json: the local owner's management token, so the CLI on this machine works with
 * no login. Written on first start; renewed on a later start when it expired, was revoked or
 * is close to expiry.
 */
import fs from 'node:fs';
import { messageOf } from '../unknown-values.js';
import type { Logger } from '../logger.js';
import type { IdentityService } from '../services/identity.js';
import { writeFile0600 } from './data-dir.js';
import { recordOr, stringOr } from '../unknown-values.js';

export interface LocalCredentials {
  workspaceId: string;
  workspaceUserId: string;
  email: string;
  authToken: string;
}

const write = (file: string, creds: LocalCredentials) => writeFile0600(file, JSON.stringify(creds, null, 2) + '\n');

/** Bootstrap or renew; returns the credentials created on first start (null on a later start). */
export async function refreshCredentials(
  identity: IdentityService,
  file: string,
  logger: Logger,
): Promise<LocalCredentials | null> {
  const bootstrapped = await identity.bootstrap();
  if (bootstrapped) {
    write(file, bootstrapped);
    return bootstrapped;
  }
  if (!fs.existsSync(file)) {
    const owner = await identity.ownerCredentials();
    if (owner) {
      write(file, owner);
      logger.info(
        `wrote ${file} for the workspace's owner ${owner.email}: the CLI on this machine works with no login`,
        { workspaceId: owner.workspaceId },
      );
    }
    return null;
  }
  let cur: unknown;
  try {
    cur = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    logger.warn('credentials.json is unreadable; left as it is', { file, error: messageOf(e) });
    return null;
  }
  const stored = recordOr(cur);
  const renewed =
    stored &&
    (await identity.renewLocalCredentials({
      workspaceUserId: stringOr(stored.workspaceUserId),
      authToken: stringOr(stored.authToken),
    }));
  if (renewed) {
    write(file, renewed);
    logger.info(
      'renewed the management token in credentials.json (it had expired, was revoked or was close to expiry)',
      { file },
    );
  }
  return null;
}
