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

/** Node's flags that must not reach a thread or child process (a debugger port taken twice, the test runner, a REPL). */
const NOT_INHERITED = /^(--(inspect|debug|test|watch|input-type|interactive)|-i$)/;
/** Flags whose value is the next argument and that must not be inherited: the parent's own script. */
const NOT_INHERITED_WITH_VALUE = new Set(['-e', '--eval', '-p', '--print']);

/**
 * This process's Node flags that a slot keeps (a loader such as `--import tsx` for a TypeScript
 * handler, `--enable-source-maps`…): not `-e <script>`, whose script would run in the slot
 * instead of the slot's own entry, nor a debugger's or the test runner's.
 */
export function inheritedExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i]!;
    if (NOT_INHERITED_WITH_VALUE.has(a)) i++;
    else if (/^(-e|--eval|-p|--print)=/.test(a) || NOT_INHERITED.test(a)) continue;
    else kept.push(a);
  }
  return kept;
}

/**
 * A thread for the slot. Node refuses a thread any per-process flag in its execArgv
 * (ERR_WORKER_INVALID_EXEC_ARGV names them), and some parents carry many: Node 24's test runner
 * passes its children --secure-heap, --use-largepages, --tls-cipher-list… So a refused start is
 * tried again without the flags named, and then without any.
 */
function newThread(opts: SlotOptions, execArgv: string[]): Thread {
  const start = (argv: string[]) =>
    new Thread(new URL('./thread-entry.js', import.meta.url), {
      workerData: { moduleUrl: opts.moduleUrl },
      execArgv: argv,
      ...(opts.memoryMb !== undefined ? { resourceLimits: { maxOldGenerationSizeMb: opts.memoryMb } } : {}),
    });
  try {
    return start(execArgv);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err;
    const message = (err as Error).message;
    const named = new Set(
      message
        .slice(message.indexOf(': ') + 2)
        .split(', ')
        .map((f) => f.trim()),
    );
    try {
      return start(execArgv.filter((a) => !named.has(a)));
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw again;
      return start([]);
    }
  }
}

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
      const t = newThread(
        opts,
        // Flags a thread cannot take (V8's own, such as --max-old-space-size) are left out: a
        // thread's heap is set by resourceLimits.
        inheritedExecArgv().filter((a) => !/^--(max-old-space-size|max-semi-space-size|stack-size)/.test(a)),
      );
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
      const execArgv = inheritedExecArgv();
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
