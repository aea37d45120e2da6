/**
 * Who may read and who may write, and the checks every state-changing request passes:
 * authentication (a bearer token, a session cookie from the login form, or the host app's
 * authorize hook), a same-origin check (Sec-Fetch-Site, else Origin), a CSRF token bound to a
 * signed cookie, and a Host check against DNS rebinding when nothing else guards the server.
 */
import type { IncomingMessage } from 'node:http';
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { logSafely, type Logger } from '../logger.js';
import { hostRequest } from './host-request.js';
import { Refusal } from './route.js';
import { clientKey, WrongTokenCost, type WrongTokenCostOptions } from './wrong-token-cost.js';

export { Refusal };

export type Action = 'read' | 'write';

/** What the authorize hook is told besides the web Request: the host framework's own request. */
export interface AuthorizeContext {
  /**
   * The host framework's request, where its login put the user: Express's `req` (`req.user`),
   * Fastify's `request` (mounted with fastifyPlugin), or the Node request under `node:http`.
   * Undefined when the dashboard is called as `dashboard.fetch(request)` without a Node request.
   */
  req: unknown;
  /**
   * What the request does, by the API route's stable code (`job.get`, `queue.pause`,
   * `group.limit`…; the audit line's `action`, the OpenAPI document's `x-delayq-code`), for a rule
   * finer than read and write. Undefined for the session, the live stream, the OpenAPI document
   * and /metrics (reads), and when the page asks whether to show its actions at all.
   */
  operation: string | undefined;
}

/**
 * The host app's access rule: called on every request with the action it needs, and the host
 * framework's request (`context.req`, e.g. Express's `req` with `req.user`). Return true to
 * allow, or a non-empty user name to allow and name the user in the audit log. Anything else
 * refuses: false, but also '', undefined and null (a lookup that found nobody), and a throw
 * (which is logged).
 */
export type AuthorizeHook = (request: Request, action: Action, context: AuthorizeContext) => boolean | string | Promise<boolean | string>;

export interface SecurityOptions {
  /** A shared secret: accepted as `Authorization: Bearer <token>` and by the login form. */
  token?: string;
  authorize?: AuthorizeHook;
  /** Signs session and CSRF cookies. @default random per process (sessions end with it) */
  secret?: string;
  /** Origins besides the request's own that may send writes (e.g. behind a proxy that rewrites Host). */
  allowedOrigins?: string[];
  /** Cookie path: where the dashboard is mounted. */
  cookiePath: string;
  /** Where a throwing authorize hook is reported. */
  logger?: Logger | undefined;
  /** Tells clients apart for the wrong-token cost; undefined: the TCP peer's address. */
  clientAddress?: ((request: Request) => string | undefined) | undefined;
  /** What a wrong token costs (wrong-token-cost.ts). */
  wrongToken: WrongTokenCostOptions;
}

const CSRF_COOKIE = 'dq_csrf';
const SESSION_COOKIE = 'dq_session';
const SESSION_TTL_MS = 12 * 3600 * 1000;
const CSRF_HEADER = 'x-csrf-token';

/** Host names that only this machine can reach: the whole 127/8, ::1 and localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/** The host part of a Host header ("127.0.0.1:8080", "[::1]:80"). */
function hostName(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const i = header.lastIndexOf(':');
  return i === -1 ? header : header.slice(0, i);
}

/** Compares secrets in constant time (hashing first makes the lengths equal). */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export class Security {
  readonly #token: string | undefined;
  readonly #authorize: AuthorizeHook | undefined;
  readonly #secret: Buffer;
  readonly #allowedOrigins: Set<string>;
  readonly #cookiePath: string;
  readonly #logger: Logger | undefined;
  readonly #clientAddress: ((request: Request) => string | undefined) | undefined;
  readonly #cost: WrongTokenCost;

  constructor(opts: SecurityOptions) {
    if (opts.token !== undefined && (typeof opts.token !== 'string' || opts.token.length < 16)) {
      throw new TypeError('token must be a string of at least 16 characters (e.g. `openssl rand -hex 24`)');
    }
    this.#token = opts.token;
    this.#authorize = opts.authorize;
    this.#secret = opts.secret === undefined ? randomBytes(32) : Buffer.from(opts.secret);
    this.#allowedOrigins = new Set(opts.allowedOrigins ?? []);
    this.#cookiePath = opts.cookiePath;
    this.#logger = opts.logger;
    this.#clientAddress = opts.clientAddress;
    this.#cost = new WrongTokenCost(opts.wrongToken);
  }

  /** True when requests must prove who they are (a token or a hook is set). */
  get authenticates(): boolean {
    return this.#token !== undefined || this.#authorize !== undefined;
  }

  /** True when the login form applies (a token is set). */
  get usesLogin(): boolean {
    return this.#token !== undefined;
  }

  #sign(text: string): string {
    return createHmac('sha256', this.#secret).update(text).digest('base64url');
  }

  #verifySigned(value: string | undefined, purpose: string): string | undefined {
    if (!value) return undefined;
    const dot = value.lastIndexOf('.');
    if (dot <= 0) return undefined;
    const body = value.slice(0, dot);
    return sameSecret(this.#sign(`${purpose}:${body}`), value.slice(dot + 1)) ? body : undefined;
  }

  #secure(c: Context): boolean {
    return new URL(c.req.url).protocol === 'https:';
  }

  /**
   * Without authentication the server trusts being reachable only from this machine, so the
   * Host header must name this machine too: a page on evil.example that rebinds its name to
   * 127.0.0.1 would otherwise be same-origin with the dashboard.
   */
  checkHost(c: Context): void {
    if (this.authenticates) return;
    const host = c.req.header('host');
    if (host !== undefined && !isLoopbackHost(hostName(host))) {
      throw new Refusal(421, 'host', `the dashboard has no authentication and answers only to a loopback host name (got Host: ${host})`);
    }
  }

  /**
   * The client a request comes from, for the wrong-token cost: the host app's `clientAddress`
   * when given (behind a proxy), else the TCP peer (@hono/node-server passes the Node request as
   * `env.incoming`). A host that gives neither puts every client in one line.
   */
  #client(c: Context): string {
    return clientKey(this.clientAddress(c));
  }

  /**
   * The address a request comes from as the dashboard knows it (for the wrong-token cost and the
   * audit log): `clientAddress` when the host gave it, else the TCP peer. Never a header the
   * client could have written itself (X-Forwarded-For) unless the host said to trust it.
   */
  clientAddress(c: Context): string | undefined {
    if (this.#clientAddress) return this.#clientAddress(c.req.raw);
    const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined;
    return env?.incoming?.socket?.remoteAddress;
  }

  /**
   * Checks a presented credential in the client's turn (see WrongTokenCost): every way a token
   * can come (a bearer header of any scheme, a session cookie, the sign-in form) goes through
   * here, so each wrong one costs the same.
   */
  #checkPresented(c: Context, verify: () => boolean): Promise<boolean> {
    return this.#cost.check(this.#client(c), verify);
  }

  /**
   * Checks who the request is: the bearer token, else the session cookie. A request that
   * presents neither is refused at once (it guessed nothing); one that presents a wrong one is
   * refused after the wrong-token cost.
   */
  async #authenticate(c: Context): Promise<{ user: string; viaBearer: boolean }> {
    const token = this.#token!;
    const header = c.req.header('authorization');
    if (header !== undefined) {
      const m = /^Bearer\s+(.+)$/i.exec(header);
      if (!(await this.#checkPresented(c, () => m !== null && sameSecret(m[1]!.trim(), token)))) {
        throw new Refusal(401, 'unauthorized', 'the bearer token is wrong');
      }
      return { user: 'token', viaBearer: true };
    }
    const cookie = getCookie(c, SESSION_COOKIE);
    if (!cookie) throw new Refusal(401, 'unauthorized', 'sign in with the dashboard token (or send Authorization: Bearer <token>)');
    // A cookie that does not pass is cleared with the answer: one signed before a restart (with a
    // random secret) costs an open page one wrong try, not one per call.
    if (!(await this.#checkPresented(c, () => this.#verifySigned(cookie, 'session') !== undefined))) {
      this.logout(c);
      throw new Refusal(401, 'unauthorized', 'the session cookie is not one this dashboard signed: sign in again');
    }
    // A cookie this dashboard signed that has run out: no guess, answered at once.
    if (!(Number(this.#verifySigned(cookie, 'session')) > Date.now())) {
      this.logout(c);
      throw new Refusal(401, 'unauthorized', 'the session has ended: sign in again');
    }
    return { user: 'session', viaBearer: false };
  }

  /** Checks the request may do `action` (the route's `operation` code, for the hook); returns who it is (for the audit log). */
  async authorize(c: Context, action: Action, operation?: string): Promise<{ user: string; viaBearer: boolean }> {
    const who = this.#token === undefined ? { user: 'anonymous', viaBearer: false } : await this.#authenticate(c);
    const named = await this.#allowedByHook(c, action, operation);
    return { user: named ?? who.user, viaBearer: who.viaBearer };
  }

  /**
   * Whether the hook allows `action` (throws a Refusal when not); returns the user name it gave.
   * Fails closed: a hook that found nobody ('', undefined, null) or threw refuses.
   */
  async #allowedByHook(c: Context, action: Action, operation: string | undefined): Promise<string | undefined> {
    if (!this.#authorize) return undefined;
    const verdict = await this.#ask(c, action, operation);
    const allowed = verdict === true || (typeof verdict === 'string' && verdict.trim() !== '');
    if (!allowed) throw new Refusal(action === 'write' && !this.#token ? 403 : 401, 'forbidden', `not allowed to ${action}`);
    return typeof verdict === 'string' ? verdict : undefined;
  }

  /** Whether a request that may read may also write (for the page to show or hide actions); asks only the hook. */
  async canWrite(c: Context): Promise<boolean> {
    try {
      await this.#allowedByHook(c, 'write', undefined);
      return true;
    } catch {
      return false;
    }
  }

  /** The hook's answer; a throw is logged and counts as a refusal. */
  async #ask(c: Context, action: Action, operation: string | undefined): Promise<unknown> {
    try {
      const env = c.env as { incoming?: IncomingMessage } | undefined;
      return await this.#authorize!(c.req.raw, action, { req: hostRequest(env?.incoming), operation });
    } catch (err) {
      const msg = 'delayq dashboard: the authorize hook threw; the request is refused';
      if (this.#logger) logSafely(this.#logger, 'error', { err, action }, msg);
      // Without a logger it still shows, like the audit trail: one JSON line on stderr.
      else process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'error', msg, err: String(err) })}\n`);
      return false;
    }
  }

  /**
   * A write must come from the dashboard's own origin: a browser says where a request comes
   * from in Sec-Fetch-Site (or at least Origin), and a cross-site form or fetch is refused
   * whatever cookies it carries. Clients that send neither (curl, scripts) pass this check and
   * still need a CSRF token or a bearer token.
   */
  checkSameOrigin(c: Context): void {
    const site = c.req.header('sec-fetch-site');
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== 'null' && this.#allowedOrigins.has(origin)) return;
    if (site !== undefined && site !== 'same-origin') {
      throw new Refusal(403, 'cross_origin', `cross-site request refused (Sec-Fetch-Site: ${site})`);
    }
    if (origin !== undefined && origin !== new URL(c.req.url).origin) {
      throw new Refusal(403, 'cross_origin', `cross-origin request refused (Origin: ${origin})`);
    }
  }

  /**
   * The CSRF token: a signed random value kept in an HttpOnly, SameSite=Strict cookie and sent
   * back by the page in the X-CSRF-Token header. Another site can neither read the token nor
   * set the header without a preflight we never grant. A bearer token is not ambient (no
   * browser adds it by itself), so requests carrying one need no CSRF token.
   */
  checkCsrf(c: Context, viaBearer: boolean): void {
    if (viaBearer) return;
    const cookie = getCookie(c, CSRF_COOKIE);
    const header = c.req.header(CSRF_HEADER);
    if (!cookie || !header || !this.#verifySigned(cookie, 'csrf') || !sameSecret(cookie, header)) {
      throw new Refusal(403, 'csrf', 'missing or wrong CSRF token: read it from GET /api/session and send it as X-CSRF-Token');
    }
  }

  /**
   * Seals a value the API hands out and must get back as it was (a groups cursor): base64url of
   * it, a dot, and its signature for `purpose`. Only this dashboard (its secret) makes one that
   * unseal() takes, so an edited, forged or cut cursor never reaches the library.
   */
  seal(purpose: string, text: string): string {
    const body = Buffer.from(text).toString('base64url');
    return `${body}.${this.#sign(`${purpose}:${body}`)}`;
  }

  /** The text of a value seal() made for `purpose`; undefined for anything else. */
  unseal(purpose: string, value: string): string | undefined {
    const body = this.#verifySigned(value, purpose);
    return body === undefined ? undefined : Buffer.from(body, 'base64url').toString();
  }

  /** The request's CSRF token, minting one (and its cookie) when it has none. */
  csrfToken(c: Context): string {
    const current = getCookie(c, CSRF_COOKIE);
    if (current && this.#verifySigned(current, 'csrf')) return current;
    const body = randomBytes(18).toString('base64url');
    const token = `${body}.${this.#sign(`csrf:${body}`)}`;
    setCookie(c, CSRF_COOKIE, token, { httpOnly: true, sameSite: 'Strict', path: this.#cookiePath, secure: this.#secure(c) });
    return token;
  }

  /**
   * Checks a token typed into the login form (in the client's turn, like every presented token)
   * and starts a session: a signed expiry in a cookie. Throws a Refusal for a wrong one.
   */
  async login(c: Context, token: string): Promise<void> {
    const expected = this.#token!;
    if (!(await this.#checkPresented(c, () => sameSecret(token, expected)))) throw new Refusal(401, 'unauthorized', 'wrong token');
    const expiry = String(Date.now() + SESSION_TTL_MS);
    setCookie(c, SESSION_COOKIE, `${expiry}.${this.#sign(`session:${expiry}`)}`, {
      httpOnly: true,
      sameSite: 'Strict',
      path: this.#cookiePath,
      secure: this.#secure(c),
      maxAge: SESSION_TTL_MS / 1000,
    });
  }

  logout(c: Context): void {
    setCookie(c, SESSION_COOKIE, '', { httpOnly: true, sameSite: 'Strict', path: this.#cookiePath, maxAge: 0 });
  }
}

/**
 * Headers on every answer: a Content-Security-Policy that allows no inline script or style and
 * nothing from another origin, no framing, no sniffing, no referrer.
 */
export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
};
