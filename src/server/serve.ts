/**
 * Runs the dashboard as its own HTTP server on @hono/node-server. It binds 127.0.0.1 unless
 * told otherwise, and refuses any other address without a token or an authorize hook: a job
 * queue's payloads and its drain button are not for the whole network.
 */
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createDashboard, type Dashboard, type DashboardOptions, type DashboardTuning } from './dashboard.js';
import { LIST_CURSOR_MAX } from './schemas.js';
import { isLoopbackHost } from './security.js';

export interface ServeOptions extends DashboardOptions {
  /** @default 8787; 0 picks a free port */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
}

export interface RunningDashboard {
  dashboard: Dashboard;
  /** The address it listens on, e.g. http://127.0.0.1:8787/ */
  url: string;
  port: number;
  close(): Promise<void>;
}

export async function serveDashboard(opts: ServeOptions = {}, tuning: DashboardTuning = {}): Promise<RunningDashboard> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 8787;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`port must be 0..65535 (got ${String(port)})`);
  if (!isLoopbackHost(host) && opts.token === undefined && opts.authorize === undefined) {
    throw new TypeError(
      `refusing to listen on ${host} without authentication: set a token (--token or DELAYQ_TOKEN) or an authorize hook, or listen on 127.0.0.1`,
    );
  }
  const dashboard = createDashboard(opts, tuning);
  // A listing cursor of a queue with many shards is long (up to LIST_CURSOR_MAX characters in
  // the query string); Node's default of 16 KiB for the request line and headers would refuse
  // it with 431 before the dashboard saw it.
  const server = createAdaptorServer({ fetch: dashboard.fetch, serverOptions: { maxHeaderSize: LIST_CURSOR_MAX + 16 * 1024 } });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    dashboard,
    url: `http://${shown}:${bound}${opts.basePath ?? ''}/`,
    port: bound,
    async close() {
      // Live pages hold their connections open: end them so close does not wait for them.
      (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await dashboard.close();
    },
  };
}
