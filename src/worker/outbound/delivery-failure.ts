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
     * policy's `ERR_CALLBACK_ADDRESS_FORBIDDEN`, or the network's own code (`ECONNREFUSED`, a TLS code…).
     */
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DeliveryFailure';
  }
}
