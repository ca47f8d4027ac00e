/**
 * The headers of every response under `/console/` (docs/console.md, "Served by the service"):
 * the console is the one part of the service a browser renders, so it is the part that needs them.
 * API responses are JSON for programs, and `/docs` carries swagger-ui's own policy (app.ts).
 */
const CONSOLE_CONTENT_SECURITY_POLICY = [
  // Nothing is allowed unless listed below.
  "default-src 'none'",
  // Only the console's own bundles: no inline script, no eval, no third-party script.
  "script-src 'self'",
  // Only its own style sheets: no inline <style> or style="" attributes an injection could add.
  "style-src 'self'",
  // Its own images, and data: URIs for small icons the build inlines.
  "img-src 'self' data:",
  "font-src 'self'",
  // fetch() reaches the API of the same origin only: a token cannot be sent anywhere else.
  "connect-src 'self'",
  // An injected <base> cannot redirect the console's relative URLs.
  "base-uri 'none'",
  // Forms (the sign-in form) submit to the same origin only.
  "form-action 'self'",
  // No other site may frame the console (clickjacking).
  "frame-ancestors 'none'",
].join('; ');

export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': CONSOLE_CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  // The page's URL (and its path) stays out of the Referer of anything it links to.
  'referrer-policy': 'no-referrer',
  // For browsers that predate frame-ancestors.
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
});

/** Whether a request path (with or without its query) is the console's. */
export function isConsolePath(url: string): boolean {
  return url === '/console' || url.startsWith('/console/') || url.startsWith('/console?');
}
