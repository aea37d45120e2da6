/**
 * A small HTTP client for the dashboard's API in tests: keeps cookies like a browser, sends the
 * CSRF token it was given, and says where the request comes from (Sec-Fetch-Site) like one.
 */
import type { Dashboard } from '../../src/server/dashboard.js';

// biome-ignore lint/suspicious/noExplicitAny: a test reads an answer's body field by field, whatever the route
export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Leave out the CSRF header. */
  noCsrf?: boolean;
}

export class ApiClient {
  readonly #cookies = new Map<string, string>();
  #csrf: string | undefined;

  /** `target` is a dashboard (called in-process) or the base URL of a running one. */
  constructor(
    readonly target: Dashboard | string,
    readonly origin = 'http://127.0.0.1:8787',
    readonly base = '',
  ) {}

  async session(): Promise<Answer> {
    const a = await this.call('GET', '/api/session');
    if (a.status === 200) this.#csrf = a.body.csrfToken;
    return a;
  }

  get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
    return this.call('GET', path, { headers });
  }

  post(path: string, body?: unknown, opts: Omit<CallOptions, 'body'> = {}): Promise<Answer> {
    return this.call('POST', path, { ...opts, body });
  }

  async call(method: string, path: string, opts: CallOptions = {}): Promise<Answer> {
    const origin = typeof this.target === 'string' ? this.target.replace(/\/$/, '') : this.origin;
    // fetch sets Host itself (and refuses one given); in-process, it is given like a browser would.
    const headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' };
    if (typeof this.target !== 'string') headers.host = new URL(origin).host;
    if (method !== 'GET') headers.origin = origin;
    if (this.#cookies.size > 0) headers.cookie = [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    if (this.#csrf && !opts.noCsrf && method !== 'GET') headers['x-csrf-token'] = this.#csrf;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, opts.headers);
    for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
    const url = `${origin}${this.base}${path}`;
    const init: RequestInit = { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) };
    const res = typeof this.target === 'string' ? await fetch(url, init) : await this.target.fetch(new Request(url, init));
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const value = pair!.slice(i + 1);
      if (value === '' || /max-age=0/i.test(c)) this.#cookies.delete(pair!.slice(0, i));
      else this.#cookies.set(pair!.slice(0, i), value);
    }
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (pages, metrics)
    }
    return { status: res.status, body, headers: res.headers };
  }
}
