/**
 * A script's reply(named) (wire.ts luaReply, written out per script): the fixed fields in their
 * positions, and a field not given fails the script naming it, so no reply goes out short of one.
 * Run as Lua on a real Redis, for every script whose reply has fixed fields.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { luaWireParts, SCRIPT_NAMES, WIRE, type ReplyShape } from '../../src/store/redis/wire.js';
import { useRedis } from '../helpers/redis-fixture.js';

const fx = useRedis();

describe("a script's reply(named)", () => {
  for (const name of SCRIPT_NAMES) {
    const fields = (WIRE[name].reply as ReplyShape).fields ?? [];
    const reply = luaWireParts(name).tables.find(([n]) => n === 'reply')![1];
    test(`${name}: its ${fields.length} fields in order; each one missing fails naming it`, async () => {
      const all = `{ ${fields.map((f, i) => `${f} = '${i + 1}'`).join(', ')} }`;
      assert.deepEqual(
        await fx.client.eval(`local reply = ${reply}\nreturn reply(${all})`, 0),
        fields.map((_, i) => String(i + 1)),
      );
      for (const missing of fields) {
        const some = `{ ${fields.map((f, i) => (f === missing ? '' : `${f} = '${i + 1}', `)).join('')} }`;
        await assert.rejects(fx.client.eval(`local reply = ${reply}\nreturn reply(${some})`, 0), new RegExp(`delayq: reply field ${missing} is not set`));
      }
    });
  }
});
