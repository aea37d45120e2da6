/**
 * The order-timeout demo, end to end: place orders, each with a "cancel if unpaid" job; pay
 * some (their timeout is cancelled), leave some "payment pending" (the handler snoozes and
 * looks again, giving up at a deadline), and let a worker cancel the rest when due. It ends
 * with a check of every order's fate and the lateness of the timeout jobs, beside how late this
 * host's own timers fired: the customers are host timers, so on a busy machine a payment may run
 * after its order's deadline, and the order is rightly cancelled. Such a payment is counted as
 * the host's, not as the queue's, and the report says which it was (`host`). Its queue, named
 * afresh for each run, is obliterated at the end, also when the run is stopped (`signal`), so
 * no run leaves a queue behind in Redis's registry.
 */
import { randomBytes } from 'node:crypto';
import { Queue } from '../queue.js';
import type { ConnectionOptions } from '../options.js';
import { Worker } from '../worker.js';
import { OrderBook } from './order-book.js';
import { seededRandom } from './random.js';
import { timerDelay } from '../timers.js';

export interface DemoOptions extends ConnectionOptions {
  /** Orders to place. @default 300 */
  orders?: number;
  /** Spread the orders over this long. @default 3000 */
  placeMs?: number;
  /** The unpaid-order timeout (30 minutes in the shop, scaled down). @default 2000 */
  timeoutMs?: number;
  /** How long a pending payment is waited for after the timeout. @default 1500 */
  graceMs?: number;
  /** How often a pending payment is looked at again. @default 200 */
  pollMs?: number;
  seed?: number;
  /** Called with a one-line progress summary, about ten times a second. */
  onProgress?: (line: string) => void;
  /** Stops the run early (Ctrl-C): no more orders are placed, and the queue is removed all the same. */
  signal?: AbortSignal;
}

type Plan = 'pays' | 'pending-pays' | 'pending-never' | 'never';

export interface DemoReport {
  store: string;
  /** The queue the run used (removed at its end). */
  queue: string;
  /** Stopped by `signal` before every order was settled; the checks then say how far it got. */
  interrupted: boolean;
  placed: number;
  paid: number;
  cancelled: number;
  pendingThenPaid: number;
  pendingThenCancelled: number;
  /** Payments refused because the order had already been cancelled (none are expected). */
  latePaymentsRefused: number;
  lateness: { p50: number; p99: number; max: number; samples: number };
  /**
   * How late this host's own timers fired (the customers' steps), and the payments that ran
   * after their order's deadline because of it: those orders are cancelled, as they must be, and
   * no check counts them against the queue. `slow` when a timer fired more than
   * SLOW_HOST_MS late: the lateness above then says as much about the host as about the queue.
   */
  host: { timerLateP99: number; timerLateMax: number; latePayments: number; slow: boolean };
  checks: { name: string; ok: boolean; detail: string }[];
  ok: boolean;
  elapsedMs: number;
}

/** A host whose timers fire more than this late is busy or slow (a quiet one: a few ms). */
export const SLOW_HOST_MS = 50;

/**
 * The orders a customer paid in time, by when the customer's steps actually ran (not when they
 * were planned): a payment before the order's deadline (and, for a pending payment, "pending"
 * said before the timeout) the queue must have let through; one after it (a host timer that fired
 * late) rightly finds the order cancelled, and that is the host's doing.
 */
export function paymentsByTime(
  orders: { status: string; payRanAtMs: number | undefined; payDeadlineMs: number; pendingRanAtMs?: number | undefined; pendingDeadlineMs?: number }[],
): {
  inTime: number;
  paidInTime: number;
  late: number;
} {
  const paying = orders.filter((o) => o.payRanAtMs !== undefined);
  const pendingInTime = (o: (typeof orders)[number]) => o.pendingDeadlineMs === undefined || (o.pendingRanAtMs ?? Infinity) < o.pendingDeadlineMs;
  const inTime = paying.filter((o) => o.payRanAtMs! < o.payDeadlineMs && pendingInTime(o));
  return { inTime: inTime.length, paidInTime: inTime.filter((o) => o.status === 'paid').length, late: paying.length - inTime.length };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export async function runDemo(opts: DemoOptions = {}): Promise<DemoReport> {
  const n = opts.orders ?? 300;
  const placeMs = opts.placeMs ?? 3000;
  const timeoutMs = opts.timeoutMs ?? 2000;
  const graceMs = opts.graceMs ?? 1500;
  const pollMs = opts.pollMs ?? 200;
  const random = seededRandom(opts.seed ?? Date.now());
  const started = Date.now();
  const book = new OrderBook();
  const plans = new Map<string, Plan>();
  const lateness: number[] = [];
  // When each customer's payment step ran, and by when it had to (the order's deadline).
  const payRanAt = new Map<string, number>();
  const payDeadline = new Map<string, number>();
  // And when a pending payment said "pending" (it must before the timeout, or the order is unpaid then).
  const pendingRanAt = new Map<string, number>();
  const pendingDeadline = new Map<string, number>();
  // How late each host timer (a customer's step) fired.
  const hostLate: number[] = [];
  const name = `demo-orders-${randomBytes(3).toString('hex')}`;
  const connection: ConnectionOptions = { connection: opts.connection, prefix: opts.prefix, store: opts.store };
  const queue = new Queue<{ orderId: string }>(name, connection);
  const timers = new Set<NodeJS.Timeout>();
  // Steps that started (an add, a cancel) and may not have finished: waited for before the
  // queue is removed, so none of them makes it again afterwards.
  const running = new Set<Promise<unknown>>();
  const stepErrors: unknown[] = [];
  let closing = false;
  const later = (ms: number, fn: () => unknown) => {
    if (closing) return;
    const due = Date.now() + ms;
    const t = setTimeout(() => {
      timers.delete(t);
      hostLate.push(Math.max(0, Date.now() - due));
      const step = Promise.resolve()
        .then(fn)
        .catch((err: unknown) => stepErrors.push(err))
        .finally(() => running.delete(step));
      running.add(step);
    }, timerDelay(ms));
    timers.add(t);
  };
  const stopped = () => opts.signal?.aborted === true;

  const worker = new Worker<{ orderId: string }>(
    name,
    (job) => {
      lateness.push(Date.now() - job.dueAtMs);
      const order = book.get(job.data.orderId);
      if (!order || order.status === 'paid' || order.status === 'cancelled') return; // already settled: nothing to do
      if (order.status === 'pending') {
        const giveUpAt = order.placedAt + timeoutMs + graceMs;
        // Look again soon, unless the next look would be past the deadline: then give up now.
        if (Date.now() + pollMs <= giveUpAt) job.snooze(pollMs);
      }
      book.cancel(order.id);
    },
    { ...connection, concurrency: 50 },
  );
  worker.on('error', () => {});

  let placed = 0;
  const progress = setInterval(async () => {
    if (!opts.onProgress) return;
    const s = await queue.stats().catch(() => undefined);
    const all = book.all();
    const count = (st: string) => all.filter((o) => o.status === st).length;
    opts.onProgress(
      `placed ${placed}/${n}  paid ${count('paid')}  cancelled ${count('cancelled')}  pending ${count('pending')}  unpaid ${count('unpaid')}` +
        (s ? `  |  jobs scheduled ${s.scheduled} active ${s.active}` : ''),
    );
  }, 100);

  try {
    // Place the orders, each with its timeout job, and decide what its customer will do.
    for (let i = 0; i < n; i++) {
      const at = Math.floor((i / n) * placeMs);
      const r = random();
      const plan: Plan = r < 0.5 ? 'pays' : r < 0.6 ? 'pending-pays' : r < 0.7 ? 'pending-never' : 'never';
      const payAt = random();
      const pendAt = random();
      later(at, async () => {
        const id = `o${String(i).padStart(5, '0')}`;
        plans.set(id, plan);
        book.place(id, Date.now());
        await queue.add({ orderId: id }, { id: `order:${id}:timeout`, delay: timeoutMs });
        placed++;
        const placedAt = book.get(id)!.placedAt;
        if (plan === 'pays') {
          // Due no earlier than placedAt + timeoutMs (the add came after): paid before that, it must stay paid.
          payDeadline.set(id, placedAt + timeoutMs);
          later(Math.floor(timeoutMs * (0.1 + 0.8 * payAt)), async () => {
            payRanAt.set(id, Date.now());
            book.pay(id);
            await queue.cancel(`order:${id}:timeout`);
          });
        } else if (plan !== 'never') {
          pendingDeadline.set(id, placedAt + timeoutMs);
          later(Math.floor(timeoutMs * (0.2 + 0.6 * pendAt)), () => {
            pendingRanAt.set(id, Date.now());
            book.markPending(id);
          });
          if (plan === 'pending-pays') {
            // The handler's last look is at least pollMs before it gives up (placedAt + timeout + grace).
            payDeadline.set(id, placedAt + timeoutMs + graceMs - pollMs);
            later(timeoutMs + Math.floor(graceMs * (0.2 + 0.6 * payAt)), () => {
              payRanAt.set(id, Date.now());
              book.pay(id);
            });
          }
        }
      });
    }
    // Wait until every order is settled and the queue is empty.
    const deadline = Date.now() + placeMs + timeoutMs + graceMs + 15_000;
    for (;;) {
      const settled = placed === n && book.all().every((o) => o.status === 'paid' || o.status === 'cancelled');
      const s = await queue.stats();
      if (settled && s.scheduled === 0 && s.active === 0) break;
      if (Date.now() > deadline || stopped()) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    closing = true;
    clearInterval(progress);
    for (const t of timers) clearTimeout(t);
    await Promise.allSettled([...running]);
  }

  let stats: Awaited<ReturnType<typeof queue.stats>>;
  let report: Awaited<ReturnType<typeof queue.verify>>;
  try {
    stats = await queue.stats();
    report = await queue.verify();
  } finally {
    // The run's queue goes with it: its jobs, and its name in the registry (`delayq queues`).
    await worker.close();
    try {
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
  }

  const orders = book.all();
  const fate = (plan: Plan, status: string) => orders.filter((o) => plans.get(o.id) === plan && o.status === status).length;
  const planned = (plan: Plan) => orders.filter((o) => plans.get(o.id) === plan).length;
  lateness.sort((a, b) => a - b);
  hostLate.sort((a, b) => a - b);
  const payments = paymentsByTime(
    orders
      .filter((o) => payDeadline.has(o.id))
      .map((o) => ({
        status: o.status,
        payRanAtMs: payRanAt.get(o.id),
        payDeadlineMs: payDeadline.get(o.id)!,
        pendingRanAtMs: pendingRanAt.get(o.id),
        pendingDeadlineMs: pendingDeadline.get(o.id),
      })),
  );
  const host = {
    timerLateP99: percentile(hostLate, 0.99),
    timerLateMax: hostLate.at(-1) ?? 0,
    latePayments: payments.late,
    slow: (hostLate.at(-1) ?? 0) > SLOW_HOST_MS,
  };
  const checks = [
    { name: 'every order placed', ok: orders.length === n, detail: `${orders.length} of ${n}` },
    { name: 'no paid order was cancelled', ok: book.refused.cancelPaid === 0, detail: `${book.refused.cancelPaid} refused cancels of paid orders` },
    {
      // By when the payment ran: one this host ran after the deadline is rightly cancelled.
      name: 'every order paid in time is paid',
      ok: payments.paidInTime === payments.inTime,
      detail:
        `${payments.paidInTime} of ${payments.inTime}` +
        (payments.late > 0 ? `; ${payments.late} paid after the deadline (this host's timers fired late), cancelled as they must be` : ''),
    },
    {
      name: 'every unpaid order was cancelled',
      ok: fate('never', 'cancelled') + fate('pending-never', 'cancelled') === planned('never') + planned('pending-never'),
      detail: `${fate('never', 'cancelled') + fate('pending-never', 'cancelled')} of ${planned('never') + planned('pending-never')}`,
    },
    {
      name: 'no job left behind',
      ok: stats.scheduled === 0 && stats.active === 0 && stats.dead === 0,
      detail: `scheduled ${stats.scheduled}, active ${stats.active}, dead ${stats.dead}`,
    },
    {
      name: 'every add and cancel went through',
      ok: stepErrors.length === 0,
      detail: stepErrors.length === 0 ? 'no errors' : `${stepErrors.length} failed, the first: ${String(stepErrors[0])}`,
    },
    { name: 'queue consistent (verify)', ok: report.ok, detail: report.problems.slice(0, 3).join('; ') || 'clean' },
  ];
  return {
    store:
      typeof opts.connection === 'string' ? opts.connection.replace(/\/\/[^@/]*@/, '//***@') : opts.store ? 'custom store' : (process.env.REDIS_URL ?? 'redis'),
    queue: name,
    interrupted: stopped(),
    placed: orders.length,
    paid: orders.filter((o) => o.status === 'paid').length,
    cancelled: orders.filter((o) => o.status === 'cancelled').length,
    pendingThenPaid: orders.filter((o) => o.wasPending && o.status === 'paid').length,
    pendingThenCancelled: orders.filter((o) => o.wasPending && o.status === 'cancelled').length,
    latePaymentsRefused: book.refused.payCancelled,
    lateness: { p50: percentile(lateness, 0.5), p99: percentile(lateness, 0.99), max: lateness.at(-1) ?? 0, samples: lateness.length },
    host,
    checks,
    ok: !stopped() && checks.every((c) => c.ok),
    elapsedMs: Date.now() - started,
  };
}
