/**
 * The demo's shop: orders with a state machine that refuses illegal moves, so the timeout
 * handler's idempotence is real — a paid order cannot be cancelled, a cancelled one cannot be
 * paid (the customer would be refunded), and repeating a move changes nothing.
 */
export type OrderStatus = 'unpaid' | 'pending' | 'paid' | 'cancelled';

export interface Order {
  id: string;
  status: OrderStatus;
  /** Set once payment was pending at some point. */
  wasPending: boolean;
  placedAt: number;
}

export class OrderBook {
  readonly #orders = new Map<string, Order>();
  /** Moves refused because the order had already ended the other way. */
  refused = { cancelPaid: 0, payCancelled: 0 };

  place(id: string, now: number): Order {
    const order: Order = { id, status: 'unpaid', wasPending: false, placedAt: now };
    this.#orders.set(id, order);
    return order;
  }

  get(id: string): Order | undefined {
    return this.#orders.get(id);
  }

  markPending(id: string): boolean {
    const o = this.#orders.get(id);
    if (!o || o.status !== 'unpaid') return false;
    o.status = 'pending';
    o.wasPending = true;
    return true;
  }

  /** Returns true when this call (or an earlier one) paid the order. */
  pay(id: string): boolean {
    const o = this.#orders.get(id);
    if (!o) return false;
    if (o.status === 'cancelled') {
      this.refused.payCancelled++;
      return false;
    }
    o.status = 'paid';
    return true;
  }

  /** Returns true when this call (or an earlier one) cancelled the order. */
  cancel(id: string): boolean {
    const o = this.#orders.get(id);
    if (!o) return false;
    if (o.status === 'paid') {
      this.refused.cancelPaid++;
      return false;
    }
    o.status = 'cancelled';
    return true;
  }

  all(): Order[] {
    return [...this.#orders.values()];
  }
}
