import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * Authenticated encryption (AES-256-GCM) of secrets at rest with SECRET_KEY.
 * Output: `v1.<iv>.<ciphertext>.<tag>`, base64url parts. The associated data binds a
 * ciphertext to its purpose, so a value copied into another column does not decrypt.
 */
export class SecretBox {
  readonly #key: Buffer;

  constructor(keyBase64: string) {
    this.#key = Buffer.from(keyBase64, 'base64');
    if (this.#key.length !== 32) throw new Error('SECRET_KEY must be 32 bytes');
  }

  encrypt(plaintext: string, purpose: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(purpose));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv.toString('base64url'), body.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  decrypt(sealed: string, purpose: string): string {
    const [version, iv, body, tag] = sealed.split('.');
    if (version !== VERSION || iv === undefined || body === undefined || tag === undefined) {
      throw new Error('not a sealed secret');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}
