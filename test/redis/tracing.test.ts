import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Queue, Worker } from '../../src/index.js';
import { queueKeys } from '../../src/store/redis/keys.js';
import { useErrorLog } from '../helpers/errors.js';
import { uniqueName } from '../helpers/names.js';
import { useRedis } from '../helpers/redis-fixture.js';
import { until } from '../helpers/wait.js';

const fx = useRedis();
const errorLog = useErrorLog();

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('test');
const open: { close(): Promise<void> }[] = [];
before(async () => {
  // What an application's SDK set-up does: W3C propagation and async context.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
});
fx.after(async () => {
  await Promise.all(open.map((o) => o.close()));
});
after(() => {
  propagation.disable();
  context.disable();
});

describe('tracing', () => {
  test('a producer span per add and a consumer span per attempt, linked through the job, with messaging attributes', async () => {
    exporter.reset();
    const name = uniqueName('t');
    const queue = new Queue<string>(name, { connection: fx.redis.url, tracing: tracer });
    open.push(queue);
    let activeInHandler: string | undefined;
    const worker = new Worker<string>(
      name,
      (job) => {
        activeInHandler = trace.getActiveSpan()?.spanContext().spanId;
        if (job.data === 'bad' && job.attempt === 1) throw new Error('first try fails');
      },
      { connection: fx.redis.url, tracing: tracer, backoff: { type: 'fixed', delay: 10 } },
    );
    errorLog.watch(worker);
    open.push(worker);
    const completed: string[] = [];
    worker.on('completed', (job) => completed.push(job.id));
    await queue.add('ok', { id: 'ok' });
    await queue.add('bad', { id: 'bad' });
    await queue.addBulk([
      { data: 'b1', opts: { id: 'b1' } },
      { data: 'b2', opts: { id: 'b2' } },
    ]);
    await until(() => completed.length === 4, 'all jobs to complete');
    await until(() => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER).length === 5, 'five consumer spans');

    const spans = exporter.getFinishedSpans();
    const producers = spans.filter((s) => s.kind === SpanKind.PRODUCER);
    const consumers = spans.filter((s) => s.kind === SpanKind.CONSUMER);
    assert.equal(producers.length, 3, 'add, add, addBulk');
    const single = producers.find((s) => s.attributes['messaging.message.id'] === 'ok')!;
    assert.equal(single.name, `send ${name}`);
    assert.equal(single.attributes['messaging.system'], 'delayq');
    assert.equal(single.attributes['messaging.destination.name'], name);
    assert.equal(single.attributes['messaging.operation.type'], 'send');
    const bulk = producers.find((s) => s.attributes['messaging.batch.message_count'] === 2)!;
    assert.ok(bulk);

    const ok = consumers.find((s) => s.attributes['messaging.message.id'] === 'ok')!;
    assert.equal(ok.name, `process ${name}`);
    assert.equal(ok.attributes['messaging.operation.type'], 'process');
    assert.equal(ok.links.length, 1);
    assert.equal(ok.links[0]!.context.spanId, single.spanContext().spanId);
    assert.equal(ok.links[0]!.context.traceId, single.spanContext().traceId);
    for (const id of ['b1', 'b2']) {
      const c = consumers.find((s) => s.attributes['messaging.message.id'] === id)!;
      assert.equal(c.links[0]!.context.spanId, bulk.spanContext().spanId);
    }
    const bad = consumers.filter((s) => s.attributes['messaging.message.id'] === 'bad');
    assert.deepEqual(bad.map((s) => s.attributes['messaging.delayq.attempt']).sort(), [1, 2]);
    const failed = bad.find((s) => s.attributes['messaging.delayq.attempt'] === 1)!;
    assert.equal(failed.status.code, SpanStatusCode.ERROR);
    assert.equal(failed.status.message, 'first try fails');
    assert.ok(
      consumers.some((s) => s.spanContext().spanId === activeInHandler),
      'the consumer span is active inside the handler',
    );
  });

  test('without the option nothing is traced and no trace context is stored', async () => {
    exporter.reset();
    const name = uniqueName('t');
    const queue = new Queue<string>(name, { connection: fx.redis.url });
    open.push(queue);
    await queue.add('x', { id: 'x', delay: 60_000 });
    assert.equal(exporter.getFinishedSpans().length, 0);
    // The body's trace length (wire.ts JOB_BODY, sixth header field) is 0: no trace context stored.
    assert.equal((await fx.client.hget(queueKeys('dq', name).jobs, 'x'))!.split(':')[5], '0');
  });
});
