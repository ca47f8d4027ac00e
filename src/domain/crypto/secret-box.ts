import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';

function keyOf(base64: string, name: string): Buffer {
  const key = Buffer.from(base64, 'base64');
  if (key.length !== 32) throw new Error(`${name} must be 32 bytes`);
  return key;
}

/**
 * Authenticated encryption (AES-256-GCM) of secrets at rest with SECRET_KEY.
 * Output: `v1.<iv>.<ciphertext>.<tag>`, base64url parts. The associated data binds a
 * ciphertext to its purpose, so a value copied into another column does not decrypt.
 *
 * Key rotation: secrets are always sealed with the current key; `previous` keys
 * (SECRET_KEY_PREVIOUS) still open what they sealed, so a new key can be rolled out without
 * downtime, and `reseal` moves a value to the current key (`rewards secrets reencrypt`).
 */
export class SecretBox {
  readonly #key: Buffer;
  readonly #previous: Buffer[];

  constructor(keyBase64: string, previousBase64: readonly string[] = []) {
    this.#key = keyOf(keyBase64, 'SECRET_KEY');
    this.#previous = previousBase64.map((key) => keyOf(key, 'each SECRET_KEY_PREVIOUS key'));
  }

  encrypt(plaintext: string, purpose: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(purpose));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  decrypt(sealed: string, purpose: string): string {
    return this.#open(sealed, purpose).plaintext;
  }

  /** The value sealed with the current key, or undefined when it already is. Throws when no key opens it. */
  reseal(sealed: string, purpose: string): string | undefined {
    const { plaintext, current } = this.#open(sealed, purpose);
    return current ? undefined : this.encrypt(plaintext, purpose);
  }

  #open(sealed: string, purpose: string): { plaintext: string; current: boolean } {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== VERSION || iv === undefined || body === undefined || tag === undefined) {
      throw new Error('not a sealed secret');
    }
    let failure: unknown;
    for (const key of [this.#key, ...this.#previous]) {
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(purpose));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        const plaintext = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
        return { plaintext, current: key === this.#key };
      } catch (error) {
        failure = error; // a wrong key fails GCM's authentication: try the next one
      }
    }
    throw failure;
  }
}
