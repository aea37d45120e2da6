/**
 * One place of an isolated-handler pool: a worker thread or a child process running
 * slot-runtime.ts, seen the same way whichever it is (send, a message callback, one "gone"
 * callback with the reason, terminate).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker as Thread } from 'node:worker_threads';
import { IsolatedHandlerError } from '../../errors.js';
import { type FromSlot, fromWire, type ToSlot } from './messages.js';

export type IsolationKind = 'thread' | 'process';

export interface SlotOptions {
  kind: IsolationKind;
  /** The handler module, as a file URL. */
  moduleUrl: string;
  /** Heap cap of each thread or process, MB (a thread's resourceLimits, a process's --max-old-space-size). */
  memoryMb: number | undefined;
  onMessage: (slot: Slot, msg: FromSlot) => void;
  /** Called once, when the thread or process has ended, with why (for a slot terminated on purpose too). */
  onGone: (slot: Slot, why: IsolatedHandlerError) => void;
}

/** Node's flags that must not reach a child process (a debugger port taken twice, the test runner). */
const NOT_INHERITED = /^--(inspect|debug|test|watch)/;

export class Slot {
  readonly kind: IsolationKind;
  /** The run the pool gave this slot, if any. */
  run: number | undefined;
  /** Set once the pool stopped counting this slot (terminating, or gone). */
  retired = false;
  #thread: Thread | undefined;
  #child: ChildProcess | undefined;
  #ready = false;
  readonly #held: ToSlot[] = [];
  #crash: unknown;
  #gone = false;
  readonly #exited: Promise<void>;

  constructor(opts: SlotOptions) {
    this.kind = opts.kind;
    const onMessage = (msg: FromSlot) => {
      if (msg.type === 'ready') {
        this.#ready = true;
        for (const m of this.#held.splice(0)) this.#post(m);
      } else if (msg.type === 'crashed') this.#crash = fromWire(msg.error);
      else opts.onMessage(this, msg);
    };
    let exited!: () => void;
    this.#exited = new Promise<void>((r) => (exited = r));
    const gone = (what: string) => {
      if (this.#gone) return;
      this.#gone = true;
      const crash = this.#crash;
      const detail = crash instanceof Error ? `${what}: ${crash.name === 'Error' ? '' : `${crash.name}: `}${crash.message}` : what;
      const err = new IsolatedHandlerError(`the handler's ${this.kind} ${detail}`, crash instanceof Error ? { cause: crash } : undefined);
      exited();
      opts.onGone(this, err);
    };
    if (opts.kind === 'thread') {
      const t = new Thread(new URL('./thread-entry.js', import.meta.url), {
        workerData: { moduleUrl: opts.moduleUrl },
        ...(opts.memoryMb !== undefined ? { resourceLimits: { maxOldGenerationSizeMb: opts.memoryMb } } : {}),
      });
      this.#thread = t;
      t.on('message', onMessage);
      t.on('error', (err) => {
        this.#crash =
          (err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new Error(`ran out of memory (its heap is capped at ${opts.memoryMb ?? 'the default'} MB): ${err.message}`)
            : err;
      });
      t.on('exit', (code) => gone(this.#crash ? 'crashed' : `exited with code ${code}`));
    } else {
      const execArgv = process.execArgv.filter((a) => !NOT_INHERITED.test(a));
      if (opts.memoryMb !== undefined) execArgv.push(`--max-old-space-size=${opts.memoryMb}`);
      const c = fork(fileURLToPath(new URL('./process-entry.js', import.meta.url)), [opts.moduleUrl], { serialization: 'advanced', execArgv });
      this.#child = c;
      c.on('message', (m) => onMessage(m as FromSlot));
      c.on('error', (err) => {
        this.#crash ??= err;
      });
      c.on('exit', (code, signal) => {
        const oom = signal === 'SIGABRT' || code === 134 ? ` (out of memory? its heap is capped at ${opts.memoryMb ?? 'the default'} MB)` : '';
        gone(this.#crash ? 'crashed' : signal ? `was ended by ${signal}${oom}` : `exited with code ${code}`);
      });
    }
  }

  /** The child's pid or the thread's id, for logs and tests. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get threadId(): number | undefined {
    return this.#thread?.threadId;
  }

  get gone(): boolean {
    return this.#gone;
  }

  /** Sends a message, held until the slot listens; throws DataCloneError for a value that cannot cross. */
  send(msg: ToSlot): void {
    if (this.#gone) return;
    if (this.#ready) this.#post(msg);
    else {
      structuredClone(msg);
      this.#held.push(msg);
    }
  }

  #post(msg: ToSlot): void {
    if (this.#thread) this.#thread.postMessage(msg);
    else if (this.#child?.connected) this.#child.send(msg);
  }

  /** Ends the thread or process now (it gets no say), resolving once it has gone. */
  terminate(): Promise<void> {
    if (!this.#gone) {
      if (this.#thread) void this.#thread.terminate();
      else this.#child?.kill('SIGKILL');
    }
    return this.#exited;
  }
}
