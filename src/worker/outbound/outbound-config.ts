import { readFileSync } from 'node:fs';
import type { Config } from '../../config.js';
import type { AttemptResult, DeliveryAttemptInput } from './deliver.js';
import type { ClientCertificate } from './http-client.js';

/**
 * What the rest of the service needs to know of outbound delivery: its configuration, the
 * certificate files read at start, and the interface the job worker calls. Apart from
 * create-outbound.ts so that the main thread, which delivers through the outbound thread, does
 * not load the HTTP client (undici) itself.
 */

export type OutboundConfig = Pick<Config, 'callbackTimeoutMs' | 'callbackAllowPrivateNetworks' | 'mtlsCertFile' | 'mtlsKeyFile' | 'mtlsCaFile'> &
  /** OUTBOUND_PROXY and its bypass list; absent: calls go out directly. */
  Partial<Pick<Config, 'outboundProxy' | 'outboundProxyBypass'>>;

/**
 * Exactly the outbound settings of a configuration (the service passes its whole Config): what the
 * outbound thread is sent, so that the proxy settings reach it and nothing else (no SECRET_KEY) does.
 */
export function outboundConfigOf(config: OutboundConfig): OutboundConfig {
  return {
    callbackTimeoutMs: config.callbackTimeoutMs,
    callbackAllowPrivateNetworks: config.callbackAllowPrivateNetworks,
    mtlsCertFile: config.mtlsCertFile,
    mtlsKeyFile: config.mtlsKeyFile,
    mtlsCaFile: config.mtlsCaFile,
    ...(config.outboundProxy ? { outboundProxy: config.outboundProxy, outboundProxyBypass: config.outboundProxyBypass ?? [] } : {}),
  };
}

export type TlsMaterial = { clientCertificate?: ClientCertificate; extraCa?: string };

/** What the job worker needs from outbound delivery; the outbound thread offers only this. */
export interface OutboundDelivery {
  /** One attempt, run inside the concurrency limits (shared fairly by account, capped per resolved address). Never rejects. */
  deliverAttempt(input: DeliveryAttemptInput): Promise<AttemptResult>;
  /** Waits for calls in flight, then closes every connection. */
  close(): Promise<void>;
}

/** An mTLS file that cannot be read: the service refuses to start (loadTlsMaterial). */
export class OutboundConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundConfigError';
  }
}

function readPem(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new OutboundConfigError(`${variable}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** Reads the mTLS files once at start, so a bad path stops the service instead of every delivery. */
export function loadTlsMaterial(config: OutboundConfig): TlsMaterial {
  const clientCertificate = config.mtlsCertFile && config.mtlsKeyFile ? { cert: readPem('MTLS_CERT_FILE', config.mtlsCertFile), key: readPem('MTLS_KEY_FILE', config.mtlsKeyFile) } : undefined;
  const extraCa = config.mtlsCaFile ? readPem('MTLS_CA_FILE', config.mtlsCaFile) : undefined;
  return { ...(clientCertificate ? { clientCertificate } : {}), ...(extraCa ? { extraCa } : {}) };
}
