import { hash, randomBytes } from 'node:crypto';

/** The token endpoint's grant that exchanges a console link's code (docs/console.md). */
export const CONSOLE_LINK_GRANT_TYPE = 'urn:rewards:params:oauth:grant-type:console-link';

/** Like a client secret's `rrs_cs_`: a leaked code is recognisable to people and secret scanners. */
const CONSOLE_LINK_CODE_PREFIX = 'rrs_cl_';

/** `client_id` and `sub` of the tokens a console link grants: they belong to no OAuth client. */
export const CONSOLE_LINK_CLIENT_PREFIX = 'console-link:';

/** 256 random bits, base64url, with the prefix. */
export function generateConsoleLinkCode(): string {
  return CONSOLE_LINK_CODE_PREFIX + randomBytes(32).toString('base64url');
}

/** What is stored and looked up: the code is high-entropy, so a plain SHA-256 is enough (as for client secrets). */
export function hashConsoleLinkCode(code: string): string {
  return hash('sha256', code, 'hex');
}
