import { once } from 'node:events';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { linksTo, SPAN, startSpan } from '@portal/observability';
import { ConversationEvents } from '@portal/queue';
import { eventView } from '../conversations/transcript.util';
import { MetricsService } from '../metrics/metrics.service';

export const HEARTBEAT_MS = 15_000;

/** A Redis stream id, which is also the SSE event id. */
export const STREAM_ID = /^\d+-\d+$/;

const MAX_U64 = 2n ** 64n - 1n;

/**
 * Whether Redis takes `id` as a stream id: `<ms>-<seq>`, each at most 2^64 - 1. A longer one
 * passed STREAM_ID, and XREAD's error ended the stream right after its 200.
 */
export function isStreamId(id: string): boolean {
  const parts = /^(\d{1,20})-(\d{1,20})$/.exec(id);
  return parts !== null && BigInt(parts[1]) <= MAX_U64 && BigInt(parts[2]) <= MAX_U64;
}

/**
 * Streams a conversation's events as Server-Sent Events: headers at once, then every event after
 * `afterId` (the retained backlog first, then live ones), each with its stream id as `id:`.
 * Closing the app ends every stream before the HTTP server closes.
 */
@Injectable()
export class SseService implements OnModuleDestroy {
  private readonly logger = new Logger('Sse');
  private readonly streams = new Map<AbortController, Promise<void>>();

  constructor(
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
    @Inject(MetricsService) private readonly metrics: MetricsService,
  ) {}

  stream(reply: FastifyReply, conversationId: string, afterId: string): void {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      // The socket ends with the stream: it is never reused for another request.
      connection: 'close',
    });
    // Headers at once (SPEC 9), also for HEAD, whose body writes are dropped and so never flush them.
    res.flushHeaders();
    res.write(': connected\n\n');

    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const heartbeat = setInterval(() => res.writable && res.write(': heartbeat\n\n'), HEARTBEAT_MS);
    this.metrics.sseOpened();
    const done = (async () => {
      try {
        // One write per read of the stream, however many events it returned.
        for await (const batch of this.events.follow(conversationId, afterId, abort.signal)) {
          const text = batch
            .map(({ id, event }) => `id: ${id}\ndata: ${JSON.stringify(eventView(event))}\n\n`)
            .join('');
          const span = startSpan(
            SPAN.sseSend,
            { 'portal.conversation_id': conversationId, 'portal.events.count': batch.length },
            linksTo(batch.map((stored) => stored.trace)),
          );
          try {
            if (!res.write(text)) await once(res, 'drain', { signal: abort.signal });
          } finally {
            span.end();
          }
        }
      } catch (err) {
        if (!abort.signal.aborted)
          this.logger.error(`stream of ${conversationId}: ${(err as Error).message}`);
      } finally {
        clearInterval(heartbeat);
        this.metrics.sseClosed();
        this.streams.delete(abort);
        res.end();
      }
    })();
    this.streams.set(abort, done);
  }

  async onModuleDestroy(): Promise<void> {
    const open = [...this.streams];
    for (const [abort] of open) abort.abort();
    await Promise.all(open.map(([, done]) => done));
  }
}
