/**
 * The pages' files (HTML, CSS, JS, icons), shipped in the package beside the compiled code and
 * read once at start-up. No build step for the user and nothing from a CDN: the
 * Content-Security-Policy allows scripts and styles from the dashboard itself only.
 *
 * Caching: every file is served under `assets/<version>/`, where the version is a hash of the
 * content of all of them, with `Cache-Control: immutable` for a year. index.html is the one
 * file revalidated on every load (`no-cache`): it names the version, so a new package shows at
 * once and an unchanged one costs one 304 and no other request. The files import each other by
 * relative paths, so they stay within their version. `assets/<file>` without a version still
 * answers, revalidated (`no-cache`), for links from elsewhere.
 *
 * Compression: text files go out as brotli or gzip when the client accepts it, compressed on
 * first use and kept. Brotli's best (quality 11, 10% smaller than quality 5 here) takes 150 ms
 * for the set, so the first answer is quality 5 (7 ms) and quality 11 is made off the event loop
 * for the answers after it; both carry the same weak ETag, since they decode to the same bytes.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { brotliCompress, brotliCompressSync, constants, gzipSync } from 'node:zlib';
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

/** Types worth compressing (a PNG is compressed already). */
const TEXT = /^(text\/|image\/svg|application\/(json|manifest))/;
const YEAR_S = 365 * 24 * 3600;

type Encoding = 'br' | 'gzip';

interface Asset {
  body: Uint8Array;
  type: string;
  hash: string;
  /** Compressed bodies, made on first use; null when compressing does not pay. */
  encoded: Map<Encoding, Uint8Array | null>;
}

export interface Assets {
  /** The version the pages are served under (`assets/<version>/…`). */
  readonly version: string;
  /** index.html, naming the versioned assets. */
  page(c: Context): Response;
  /** A file: `version` as in the path, or undefined for the unversioned path. */
  answer(c: Context, file: string, version?: string): Response;
}

function digest(body: Uint8Array | string): string {
  return createHash('sha256').update(body).digest('base64url');
}

/** The encoding to send: brotli, else gzip, when the client accepts it (`q=0` refuses). */
function pickEncoding(accept: string | undefined): Encoding | undefined {
  if (!accept) return undefined;
  const accepted = new Set<string>();
  for (const part of accept.toLowerCase().split(',')) {
    const [name = '', ...params] = part.trim().split(';');
    if (params.some((p) => /^\s*q=0(\.0*)?\s*$/.test(p))) continue;
    accepted.add(name.trim());
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  return undefined;
}

const brotli = (quality: number, size: number) => ({ params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_SIZE_HINT]: size } });

function compress(a: Asset, enc: Encoding): Uint8Array | null {
  if (!a.encoded.has(enc)) {
    const out = enc === 'br' ? brotliCompressSync(a.body, brotli(5, a.body.length)) : gzipSync(a.body, { level: 9 });
    a.encoded.set(enc, out.length < a.body.length ? out : null);
    if (enc === 'br') {
      brotliCompress(a.body, brotli(11, a.body.length), (err, best) => {
        if (!err && best.length < (a.encoded.get('br')?.length ?? a.body.length)) a.encoded.set('br', best);
      });
    }
  }
  return a.encoded.get(enc) ?? null;
}

function send(c: Context, a: Asset, cacheControl: string): Response {
  const enc = TEXT.test(a.type) ? pickEncoding(c.req.header('accept-encoding')) : undefined;
  const body = enc ? compress(a, enc) : null;
  // Weak: brotli's quick first answer and its best one decode to the same bytes.
  const etag = `W/"${a.hash.slice(0, 22)}${body ? `-${enc}` : ''}"`;
  const headers: Record<string, string> = { 'content-type': a.type, etag, 'cache-control': cacheControl, vary: 'accept-encoding' };
  if (body) headers['content-encoding'] = enc!;
  const tags = (c.req.header('if-none-match') ?? '').split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (tags.includes(etag.slice(2)) || tags.includes('*')) return c.body(null, 304, headers);
  return c.body((body ?? a.body) as Uint8Array<ArrayBuffer>, 200, headers);
}

function asset(body: Uint8Array, type: string): Asset {
  return { body, type, hash: digest(body), encoded: new Map() };
}

export function loadAssets(dir: URL = new URL('./public/', import.meta.url)): Assets {
  const files = new Map<string, Asset>();
  for (const name of readdirSync(dir).sort()) {
    const ext = name.slice(name.lastIndexOf('.') + 1);
    const type = TYPES[ext];
    if (!type) continue;
    files.set(name, asset(readFileSync(new URL(name, dir)), type));
  }
  // One version for the set: any file changed, every URL changes.
  const version = digest([...files].map(([name, a]) => `${name}:${a.hash}`).join('\n')).slice(0, 12);
  const html = files.get('index.html');
  const index = html && asset(Buffer.from(Buffer.from(html.body).toString('utf8').replaceAll('"assets/', `"assets/${version}/`), 'utf8'), html.type);
  return {
    version,
    page(c) {
      if (!index) throw new HttpError(404, 'not_found', 'no file index.html');
      return send(c, index, 'no-cache');
    },
    answer(c, file, v) {
      const a = files.get(file);
      if (!a || file === 'index.html' || (v !== undefined && v !== version)) throw new HttpError(404, 'not_found', `no file ${file}`);
      return send(c, a, v === undefined ? 'no-cache' : `public, max-age=${YEAR_S}, immutable`);
    },
  };
}
