import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Executor } from '../storage/database.js';
import { insertSigningKey, listUsableSigningKeys, retireSigningKeys } from '../storage/repositories/signing-keys.js';
import type { SecretBox } from '../domain/crypto/secret-box.js';
import { iso } from '../domain/time.js';

export const TOKEN_ALGORITHM = 'EdDSA';
export const KEY_PURPOSE = 'signing-key';
/** Keys can be rotated by another process (`rewards keys rotate`): re-read them this often. */
const RELOAD_INTERVAL_MS = 30_000;
/** An unknown `kid` triggers a reload at most this often, so forged kids cannot hammer the database. */
const UNKNOWN_KID_RELOAD_MS = 1_000;

export type JWK = JsonWebKey & { kid: string; alg: string; use: string };

export interface PublicKeyEntry {
  kid: string;
  jwk: JWK;
  key: KeyObject;
}

interface LoadedKeys {
  signer: { kid: string; key: KeyObject } | undefined;
  verifiers: Map<string, PublicKeyEntry>;
  loadedAt: number;
}

/**
 * The service's token signing keys: Ed25519 as node:crypto KeyObjects (signing through WebCrypto
 * cost more per token, and tokens are signed on the busiest route), private halves encrypted at
 * rest with SECRET_KEY.
 * The newest unretired key signs; every unexpired key verifies and is published in the JWKS.
 */
export class KeyStore {
  #loaded: LoadedKeys | undefined;
  #loading: Promise<LoadedKeys> | undefined;
  #lastUnknownKidReload = 0;

  constructor(
    private readonly db: Executor,
    private readonly box: SecretBox,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Creates the first key when there is none. */
  async ensureSigningKey(): Promise<void> {
    const keys = await this.#load(true);
    if (!keys.signer) {
      await createSigningKey(this.db, this.box, this.clock());
      await this.#load(true);
    }
  }

  async signer(): Promise<{ kid: string; key: KeyObject }> {
    const keys = await this.#current();
    if (!keys.signer) throw new Error('no signing key: run `rewards migrate` or start the service once');
    return keys.signer;
  }

  async verifier(kid: string): Promise<PublicKeyEntry | undefined> {
    let keys = await this.#current();
    const entry = keys.verifiers.get(kid);
    if (entry) return entry;
    const now = this.clock();
    if (now - this.#lastUnknownKidReload < UNKNOWN_KID_RELOAD_MS) return undefined;
    this.#lastUnknownKidReload = now;
    keys = await this.#load(true);
    return keys.verifiers.get(kid);
  }

  /** The kid new tokens are signed with, from what is loaded (no database read). */
  loadedSignerKid(): string | undefined {
    return this.#loaded?.signer?.kid;
  }

  /** Whether `kid` is still a verifying key, from what is loaded (no database read). */
  isLoadedVerifier(kid: string): boolean {
    return this.#loaded?.verifiers.has(kid) ?? false;
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    const keys = await this.#current();
    return { keys: [...keys.verifiers.values()].map((entry) => entry.jwk) };
  }

  /** Rotation: a new key signs from now; older keys verify until their last token expires. */
  async rotate(tokenTtlMs: number): Promise<{ kid: string }> {
    const now = this.clock();
    const kid = await createSigningKey(this.db, this.box, now);
    await retireSigningKeys(this.db, kid, now, now + tokenTtlMs);
    await this.#load(true);
    return { kid };
  }

  async #current(): Promise<LoadedKeys> {
    const loaded = this.#loaded;
    if (loaded && this.clock() - loaded.loadedAt < RELOAD_INTERVAL_MS) return loaded;
    return this.#load(false);
  }

  #load(force: boolean): Promise<LoadedKeys> {
    if (this.#loading && !force) return this.#loading;
    const loading = this.#read().finally(() => {
      if (this.#loading === loading) this.#loading = undefined;
    });
    this.#loading = loading;
    return loading;
  }

  async #read(): Promise<LoadedKeys> {
    const now = this.clock();
    const rows = await listUsableSigningKeys(this.db, now);
    const verifiers = new Map<string, PublicKeyEntry>();
    let signer: LoadedKeys['signer'];
    for (const row of rows) {
      const jwk = JSON.parse(row.public_jwk) as JWK;
      const previous = this.#loaded?.verifiers.get(row.kid);
      verifiers.set(row.kid, previous ?? { kid: row.kid, jwk, key: createPublicKey({ key: jwk, format: 'jwk' }) });
      if (!signer && row.retired_at === null) {
        const key = this.#loaded?.signer?.kid === row.kid ? this.#loaded.signer.key : createPrivateKey(decryptSigningKey(this.box, row.private_key_encrypted));
        signer = { kid: row.kid, key };
      }
    }
    const loaded = { signer, verifiers, loadedAt: now };
    this.#loaded = loaded;
    return loaded;
  }
}

function decryptSigningKey(box: SecretBox, sealed: string): string {
  try {
    return box.decrypt(sealed, KEY_PURPOSE);
  } catch {
    throw new Error('cannot decrypt the token signing key: SECRET_KEY is not the key this database was created with');
  }
}

async function createSigningKey(db: Executor, box: SecretBox, now: number): Promise<string> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const kid = `${iso(now).slice(0, 10)}-${randomBytes(6).toString('base64url')}`;
  const jwk: JWK = { ...publicKey.export({ format: 'jwk' }), kid, alg: TOKEN_ALGORITHM, use: 'sig' };
  await insertSigningKey(db, {
    kid,
    algorithm: TOKEN_ALGORITHM,
    public_jwk: JSON.stringify(jwk),
    private_key_encrypted: box.encrypt(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, KEY_PURPOSE),
    created_at: now,
    retired_at: null,
    expires_at: null,
  });
  return kid;
}
