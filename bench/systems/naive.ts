/**
 * The seeds' naive design: one ZSET per queue (score = due time, member = the job as JSON) and a
 * poller that runs ZRANGEBYSCORE … LIMIT + ZREM in one Lua script every `pollMs`. No leases, no
 * acks: a crash between the pop and the handler loses the job.
 */
import { Redis } from 'ioredis';
import { payload, type System } from './system.js';

const POP = `
local jobs = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #jobs > 0 then redis.call('ZREM', KEYS[1], unpack(jobs)) end
return jobs`;

export function naive(pollMs: number): System {
  return {
    name: `naive${pollMs}`,
    producer(url, queue) {
      const r = new Redis(url);
      return {
        async enqueue(jobs) {
          for (let i = 0; i < jobs.length; i += 1000) {
            const args: (string | number)[] = [];
            for (const j of jobs.slice(i, i + 1000)) args.push(j.due, JSON.stringify({ id: j.id, ...payload(j) }));
            await r.zadd(`naive:{${queue}}`, ...args);
          }
        },
        async addOne(j) {
          await r.zadd(`naive:{${queue}}`, j.due, JSON.stringify({ id: j.id, ...payload(j) }));
        },
        close: async () => void r.disconnect(),
      };
    },
    async consumer(url, queue, onJob) {
      const r = new Redis(url);
      let stopped = false;
      const key = `naive:{${queue}}`;
      const loop = async () => {
        while (!stopped) {
          const jobs = (await r.eval(POP, 1, key, Date.now(), 100)) as string[];
          for (const j of jobs) onJob((JSON.parse(j) as { due: number }).due);
          // A full batch means more may be due: poll again at once.
          if (jobs.length < 100) await new Promise((res) => setTimeout(res, pollMs));
        }
      };
      const running = loop();
      return {
        close: async () => {
          stopped = true;
          await running.catch(() => {});
          r.disconnect();
        },
      };
    },
  };
}
