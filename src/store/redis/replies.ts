/**
 * Script replies read back by name: the Node side of wire.ts's ReplyShape, as the generated
 * prologue's `R` / `RE` are the Lua side. The one place that knows where a reply keeps what;
 * the store asks for `reply.fields.now_ms`, never `reply[0]`. A reply whose length does not fit
 * its shape is a StoreError (a script and this build disagree), never a silent misread.
 */
import { StoreError } from '../../errors.js';
import { SCRIPT_NAMES, WIRE, type ReplyShape, type ScriptName } from './wire.js';

type Shape<N extends ScriptName> = (typeof WIRE)[N]['reply'];
export type ReplyFields<N extends ScriptName> = Shape<N> extends { fields: readonly (infer F)[] } ? F & string : never;
export type ReplyItemFields<N extends ScriptName> = Shape<N> extends { each: readonly (infer F)[] } ? F & string : never;

export interface Reply<N extends ScriptName> {
  readonly fields: Record<ReplyFields<N>, unknown>;
  readonly items: Record<ReplyItemFields<N>, unknown>[];
}

/**
 * Where a script's reply keeps each name (0-based, as a JS array reads it): the fixed fields,
 * then items of `size` elements from `first`. For the hot paths (claim) that read items in
 * place instead of building an object per item.
 */
export interface ReplyLayout {
  readonly fields: Readonly<Record<string, number>>;
  readonly first: number;
  readonly size: number;
  readonly each: Readonly<Record<string, number>>;
}

function layoutOf(shape: ReplyShape): ReplyLayout {
  const fields = shape.fields ?? [];
  return {
    fields: Object.fromEntries(fields.map((f, i) => [f, i])),
    first: fields.length,
    size: shape.each?.length ?? 0,
    each: Object.fromEntries((shape.each ?? []).map((f, i) => [f, i])),
  };
}

export const REPLY_AT = Object.fromEntries(SCRIPT_NAMES.map((n) => [n, layoutOf(WIRE[n].reply)])) as Record<ScriptName, ReplyLayout>;

/** Checks an array reply's length against its shape; returns it as an array. */
export function replyArray(name: ScriptName, raw: unknown): unknown[] {
  const at = REPLY_AT[name];
  if (!Array.isArray(raw)) throw new StoreError(`${name}: expected an array reply from Redis, got ${String(raw)}`);
  const items = raw.length - at.first;
  const fits = at.size === 0 ? items === 0 : items >= 0 && items % at.size === 0;
  if (!fits) throw new StoreError(`${name}: a reply of ${raw.length} elements does not fit its shape (${at.first} fields, items of ${at.size})`);
  return raw;
}

/** An array reply by name: its fields, and its items as objects. */
export function decodeReply<N extends ScriptName>(name: N, raw: unknown): Reply<N> {
  const reply = replyArray(name, raw);
  const at = REPLY_AT[name];
  const fields: Record<string, unknown> = {};
  for (const [f, i] of Object.entries(at.fields)) fields[f] = reply[i];
  const items: Record<string, unknown>[] = [];
  const names = Object.entries(at.each);
  for (let i = at.first; i < reply.length; i += at.size) {
    const item: Record<string, unknown> = {};
    for (const [f, o] of names) item[f] = reply[i + o];
    items.push(item);
  }
  return { fields, items } as Reply<N>;
}

/** A reply of one value (ReplyShape.value). */
export function replyValue(name: ScriptName, raw: unknown): unknown {
  if ((WIRE[name].reply as ReplyShape).value === undefined) throw new StoreError(`${name}: its reply is not one value`);
  if (Array.isArray(raw)) throw new StoreError(`${name}: expected one value from Redis, got an array`);
  return raw;
}
