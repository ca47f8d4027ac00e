/**
 * An RFC 9457 problem document as the API sends it: what the error plugin (http/plugins/errors.ts)
 * renders from a DomainError (src/domain/errors.ts), or from what Fastify itself refuses. Nothing
 * throws it: routes, plugins and use cases throw DomainError, and that plugin is the one place that
 * maps errors to HTTP. Anything else thrown becomes a 500 with no details.
 */
export interface ProblemFieldError {
  path: string;
  message: string;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errors?: ProblemFieldError[],
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }

  get title(): string {
    return TITLES[this.status] ?? 'Error';
  }

  get type(): string {
    return this.status === 500 ? 'about:blank' : `https://rewards.dev/problems/${this.title.toLowerCase().replaceAll(' ', '-')}`;
  }

  toJSON(): Record<string, unknown> {
    return { type: this.type, title: this.title, status: this.status, detail: this.detail, ...(this.errors ? { errors: this.errors } : {}) };
  }
}
