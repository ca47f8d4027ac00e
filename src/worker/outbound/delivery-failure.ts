/**
 * The one error of the outbound side: why a delivery attempt, or the OAuth2 token request made for
 * it, failed. Its message is what the delivery log records as the attempt's error (deliver.ts), so
 * it carries no secret and no stack; `code` tells the failures apart.
 */
export class DeliveryFailure extends Error {
  constructor(
    message: string,
    /**
     * `TIMEOUT`, `BAD_URL`, `MTLS_NOT_CONFIGURED`, `BAD_CREDENTIAL` (the callback's stored
     * authorization cannot be used), `TOKEN_REQUEST` (the OAuth2 token request failed), the SSRF
     * policy's `ERR_CALLBACK_ADDRESS_FORBIDDEN`, the egress proxy's `PROXY_UNREACHABLE` and
     * `PROXY_REFUSED` (proxy-connector.ts), or the network's own code (`ECONNREFUSED`, a TLS code…).
     */
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DeliveryFailure';
  }
}

/**
 * Failures on the service's side of the call, not at the endpoint: its egress proxy, its own mTLS
 * settings, a stored credential or URL it cannot use. They fail the attempt like any other, but the
 * endpoint's circuit breaker does not count them (docs/delivery.md, "Circuit breaker"): a proxy
 * outage must not open the circuit of every endpoint at once.
 */
const NOT_THE_ENDPOINT: ReadonlySet<string> = new Set(['PROXY_UNREACHABLE', 'PROXY_REFUSED', 'MTLS_NOT_CONFIGURED', 'BAD_CREDENTIAL', 'BAD_URL']);

export const failedBeforeTheEndpoint = (error: unknown): boolean => error instanceof DeliveryFailure && NOT_THE_ENDPOINT.has(error.code);
