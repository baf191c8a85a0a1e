/**
 * A wrong secret.key (another valid 32-byte key) is refused at start by the key-check value;
 * a data directory made before the check gets one only once the key is verified (a sealed
 * value, else the credentials.json token's signature), else by trust on first use.
 */
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSealer, deriveKey, signJwt } from '../../src/crypto.js';
import { checkMasterKey } from '../../src/server/key-check.js';
import { StartupError } from '../../src/server/data-dir.js';
import { createMemoryStore } from '../../src/store/memory-store.js';
import { openEmbeddedStore } from '../../src/store/embedded-store.js';
import type { Store } from '../../src/store/types.js';
import { engineOf } from '../helpers/test-tables.js';

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'appreg-key-check-'));
t.teardown(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
const keyA = crypto.randomBytes(32);
const keyB = crypto.randomBytes(32);
const keyFile = '/data/secret.key';

async function refused(t: Tap.Test, p: Promise<unknown>, why: RegExp) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  t.type(err, StartupError);
  t.equal((err as StartupError | null)?.reason, 'key');
  t.match((err as Error | null)?.message, why);
  t.match((err as Error | null)?.message, /secret\.key/);
}
const withWorkspace = async (store: Store) =>
  store.commit([{ table: 'workspaces', id: 'ws_1', value: { id: 'ws_1', name: 'w', createdAt: '' } }]);

t.test(
  'first start records the check; the same key matches on every later start, another key is refused',
  async (t) => {
    const dir = path.join(tmpRoot, 'fresh');
    const store = await openEmbeddedStore({ dir, compactIdleMs: 0 });
    t.same(await checkMasterKey(store, keyA, { keyFile }), { how: 'new' });
    await store.close();
    const again = await openEmbeddedStore({ dir, compactIdleMs: 0 });
    t.same(
      await checkMasterKey(again, keyA, { keyFile }),
      { how: 'matched' },
      'kept in the data file across a restart',
    );
    await refused(t, checkMasterKey(again, keyB, { keyFile }), /key-check value does not match/);
    const rec = await again.get('meta', 'keyCheck');
    t.ok(rec && 'value' in rec && !rec.value.includes(keyA.toString('base64url')), 'the value is not the key');
    await again.close();
  },
);

t.test(
  'an older data directory with sealed secrets: verified by opening one before the check is written',
  async (t) => {
    const store = createMemoryStore();
    await withWorkspace(store);
    const sealed = createSealer(deriveKey(keyA, 'seal')).seal('{"clientSecret":"x"}');
    // records of an older appreg: only what the check reads of them
    await engineOf(store).commit([{ table: 'apps', id: 'app_1', value: { id: 'app_1', sealedSecrets: sealed } }]);
    await refused(t, checkMasterKey(store, keyB, { keyFile }), /cannot open the secrets sealed/);
    t.equal(await store.get('meta', 'keyCheck'), undefined, 'nothing written for a wrong key');
    t.same(await checkMasterKey(store, keyA, { keyFile }), { how: 'sealed-value' });
    await refused(t, checkMasterKey(store, keyB, { keyFile }), /does not match/);
    // a bot token sealed in an installation serves too
    const s2 = createMemoryStore();
    await engineOf(s2).commit([
      {
        table: 'oauthInstallations',
        id: 'i',
        value: { sealedBotToken: createSealer(deriveKey(keyA, 'seal')).seal('abt_x') },
      },
    ]);
    await refused(t, checkMasterKey(s2, keyB, { keyFile }), /cannot open/);
  },
);

t.test(
  'an older data directory without sealed values: verified by the credentials.json token, else trust on first use',
  async (t) => {
    const credentialsFile = path.join(tmpRoot, 'credentials.json');
    const token = signJwt({ sub: 'wu_1', ws: 'ws_1', jti: 'tok_1', iat: 1, exp: 2 }, deriveKey(keyA, 'jwt')); // expired: the signature still tells
    fs.writeFileSync(credentialsFile, JSON.stringify({ authToken: token }));
    const store = createMemoryStore();
    await withWorkspace(store);
    await refused(
      t,
      checkMasterKey(store, keyB, { keyFile, credentialsFile }),
      /did not sign the management token in credentials\.json/,
    );
    t.same(await checkMasterKey(store, keyA, { keyFile, credentialsFile }), { how: 'credentials-token' });

    const tofu = createMemoryStore();
    await withWorkspace(tofu);
    t.same(await checkMasterKey(tofu, keyB, { keyFile, credentialsFile: path.join(tmpRoot, 'none.json') }), {
      how: 'trust-on-first-use',
    });
    await refused(t, checkMasterKey(tofu, keyA, { keyFile }), /does not match/);
  },
);
