/**
 * The pages' files (HTML, CSS, JS, icons), shipped in the package beside the compiled code and
 * read once at start-up. No build step for the user and nothing from a CDN: the
 * Content-Security-Policy allows scripts and styles from the dashboard itself only.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { Context } from 'hono';
import { HttpError } from './route.js';

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
  json: 'application/json',
  webmanifest: 'application/manifest+json',
};

interface Asset {
  body: Uint8Array;
  type: string;
  etag: string;
}

export interface Assets {
  answer(c: Context, file: string): Response;
}

export function loadAssets(dir: URL = new URL('./public/', import.meta.url)): Assets {
  const files = new Map<string, Asset>();
  for (const name of readdirSync(dir)) {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    const type = TYPES[ext];
    if (!type) continue;
    const body = readFileSync(new URL(name, dir));
    files.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return {
    answer(c, file) {
      const a = files.get(file);
      if (!a) throw new HttpError(404, 'not_found', `no file ${file}`);
      // Revalidated on every load: a new version of the package shows at once, unchanged files cost a 304.
      const headers = { 'content-type': a.type, etag: a.etag, 'cache-control': 'no-cache' };
      if (c.req.header('if-none-match') === a.etag) return c.body(null, 304, headers);
      return c.body(a.body as Uint8Array<ArrayBuffer>, 200, headers);
    },
  };
}
