import type { ServerResponse } from 'node:http';
import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { linksTo, SPAN, startSpan } from '@portal/observability';
import { type ConversationId, DomainError } from '@portal/domain';
import { ConversationEventReader, type EventSubscription, type StoredEvent } from '@portal/redis';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { eventView } from '../conversations/transcript.util';
import { MetricsService } from '../metrics/metrics.service';
import type { SseConfig } from './sse.config';

const MAX_U64 = 2n ** 64n - 1n;

/**
 * Whether Redis takes `id` as a stream id: `<ms>-<seq>`, each at most 2^64 - 1. A longer one
 * would pass a plain pattern, and Redis's error would end the stream right after its 200.
 */
export function isStreamId(id: string): boolean {
  const parts = /^(\d{1,20})-(\d{1,20})$/.exec(id);
  return parts !== null && BigInt(parts[1]) <= MAX_U64 && BigInt(parts[2]) <= MAX_U64;
}

/** One open stream: its response and its place in the reader. */
interface OpenStream {
  res: ServerResponse;
  owner: string;
  subscription?: EventSubscription;
}

/**
 * Streams a conversation's events as Server-Sent Events: headers at once, then every event after
 * `afterId` (the retained backlog first, then live ones), each with its stream id as `id:`. The
 * events come from the gateway's one ConversationEventReader, whatever the number of streams.
 * A client that leaves more than `maxBufferBytes` unread is dropped (it reconnects with
 * `Last-Event-ID` and misses nothing), so a stalled socket costs bounded memory. Closing the app
 * ends every stream before the HTTP server closes.
 */
@Injectable()
export class SseService implements OnModuleDestroy {
  private readonly logger = new Logger('Sse');
  private readonly config: SseConfig;
  private readonly open = new Set<OpenStream>();
  private readonly perUser = new Map<string, number>();
  /** One timer for every stream's heartbeat. */
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    @Inject(ConversationEventReader) private readonly reader: ConversationEventReader,
    @Inject(MetricsService) private readonly metrics: MetricsService,
    @Inject(GATEWAY_CONFIG) gatewayConfig: GatewayConfig,
  ) {
    this.config = gatewayConfig.sse;
    this.heartbeat = setInterval(() => {
      // A stream with bytes still on their way needs no heartbeat (and must not grow).
      for (const { res } of this.open)
        if (writable(res) && res.writableLength === 0) res.write(': heartbeat\n\n');
    }, this.config.heartbeatMs);
  }

  /**
   * Answers 429 `too_many_streams` (before any byte of the stream) when `caller` already holds
   * `maxPerUser` streams on this gateway; else takes the reply over and streams.
   */
  stream(reply: FastifyReply, caller: Principal, conversationId: ConversationId, afterId: string): void {
    const owner = `${caller.orgId}\n${caller.userId}`;
    const held = this.perUser.get(owner) ?? 0;
    if (this.config.maxPerUser > 0 && held >= this.config.maxPerUser) {
      throw new DomainError(
        'too_many_streams',
        `Too many open event streams: at most ${this.config.maxPerUser} per user; close one first`,
      );
    }
    this.perUser.set(owner, held + 1);

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

    const stream: OpenStream = { res, owner };
    this.open.add(stream);
    this.metrics.sseOpened();
    res.once('close', () => this.closed(stream));
    stream.subscription = this.reader.subscribe(conversationId, afterId, {
      // One write per batch the reader hands over, however many events it holds.
      deliver: (events) => this.deliver(stream, conversationId, events),
      ready: () => drained(res),
      end: () => res.end(),
    });
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.heartbeat);
    for (const { res } of this.open) res.end();
    await this.reader.close();
  }

  /**
   * Writes the events unless the client has left more than the limit unread: then drops it. The
   * write's span links to the publications of the events it carries.
   */
  private deliver(stream: OpenStream, conversationId: ConversationId, events: StoredEvent[]): void {
    const { res } = stream;
    if (!writable(res)) return;
    if (res.writableLength > this.config.maxBufferBytes) {
      this.logger.warn(`dropped a stream whose client left ${res.writableLength} bytes unread`);
      this.metrics.sseDropped();
      res.destroy();
      return;
    }
    const span = startSpan(
      SPAN.sseSend,
      { 'portal.conversation_id': conversationId, 'portal.events.count': events.length },
      linksTo(events.map((stored) => stored.trace)),
    );
    try {
      res.write(frames(events));
    } finally {
      span.end();
    }
  }

  private closed(stream: OpenStream): void {
    if (!this.open.delete(stream)) return;
    stream.subscription?.close();
    const held = (this.perUser.get(stream.owner) ?? 1) - 1;
    if (held > 0) this.perUser.set(stream.owner, held);
    else this.perUser.delete(stream.owner);
    this.metrics.sseClosed();
  }
}

/** Whether `res` still takes writes (a response's own `writable` stays true once ended or destroyed). */
function writable(res: ServerResponse): boolean {
  return !res.destroyed && !res.writableEnded;
}

/** Resolves once `res` has flushed its buffer, or has closed. */
function drained(res: ServerResponse): Promise<void> {
  if (!res.writableNeedDrain || res.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function frames(events: StoredEvent[]): string {
  return events.map(({ id, event }) => `id: ${id}\ndata: ${JSON.stringify(eventView(event))}\n\n`).join('');
}
