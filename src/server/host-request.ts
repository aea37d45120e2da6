/**
 * The host framework's own request object, for the authorize hook: under Express the Node
 * request is Express's `req` (with `req.user` set by the app's login), but Fastify keeps its
 * user on its own request object, which the Fastify adapter records here for the Node request
 * it hands on. Weak: nothing is kept once the request is gone.
 */
import type { IncomingMessage } from 'node:http';

const framework = new WeakMap<IncomingMessage, unknown>();

export function rememberHostRequest(incoming: IncomingMessage, request: unknown): void {
  framework.set(incoming, request);
}

/** The framework's request for a Node request: what the Fastify adapter recorded, else the Node request itself (Express's `req`). */
export function hostRequest(incoming: IncomingMessage | undefined): unknown {
  if (incoming === undefined) return undefined;
  return framework.get(incoming) ?? incoming;
}
