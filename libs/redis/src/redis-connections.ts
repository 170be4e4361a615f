import { Logger } from '@nestjs/common';
import IORedis, { Cluster, type ClusterOptions, type Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from '@portal/contracts';

/** A connection to the one Redis server or to the cluster: the commands the portal sends are the same. */
export type RedisClient = Redis | Cluster;

type ConnectionOptions = Pick<
  RedisOptions,
  | 'lazyConnect'
  | 'maxRetriesPerRequest'
  | 'commandTimeout'
  | 'enableAutoPipelining'
  | 'enableReadyCheck'
  | 'connectionName'
>;

/**
 * What each use of Redis needs from its connection, in one place. On a cluster the same options
 * apply to the connection to every node.
 */
const ROLES = {
  /** BullMQ: its blocking reads require no per-command retry limit. */
  queue: { maxRetriesPerRequest: null, lazyConnect: true },
  /**
   * Event stream appends and reads. An append waits out a short Redis restart (ioredis's default
   * 20 reconnections, about 10 s) rather than failing at once: the write it follows has committed,
   * and an event never appended is one no client will see. Appends made in the same tick (many
   * turns under load) share one write.
   */
  events: { maxRetriesPerRequest: 20, enableAutoPipelining: true },
  /** The gateway's event reader: its replays and shared reads wait out a Redis restart. */
  'events-reader': { maxRetriesPerRequest: null },
  /**
   * The event reader's pub/sub listener. It skips the ready check: its INFO is refused once a
   * SUBSCRIBE sent while connecting has put the connection in subscriber mode.
   */
  'events-listener': { maxRetriesPerRequest: null, enableReadyCheck: false },
  /**
   * The upload hand-off, best effort both ways: a failure or a silent Redis answers soon (then the
   * blob store is used) rather than waiting for a reconnection. Its own connection, so a large SET
   * never holds up the queue or the events.
   */
  handoff: { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 5_000 },
  /** The rate limiter lets a request through when Redis does not answer soon. */
  'rate-limit': { lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 2_000 },
  /** Short reads and writes of the gateway: sessions, sign-in state, the cancel signal. */
  state: { lazyConnect: true, maxRetriesPerRequest: 3 },
  /** A pub/sub subscriber: subscribed, a connection takes no other command. */
  subscriber: { lazyConnect: true, maxRetriesPerRequest: null },
} satisfies Record<string, ConnectionOptions>;

export type RedisRole = keyof typeof ROLES;

/**
 * Disconnects `client`, resolving once it has ended. A client that never connected, or has ended
 * already, is left as it is: disconnecting it again would start ioredis's timer to destroy a
 * socket that is gone, which keeps the process alive for two seconds.
 */
export function disconnectClient(client: RedisClient): Promise<void> {
  if (client.status === 'wait' || client.status === 'end') return Promise.resolve();
  // Between two reconnection attempts there is no socket: disconnecting only stops the retries.
  const ended =
    client.status === 'reconnecting' || client.status === 'close'
      ? Promise.resolve()
      : new Promise<void>((resolve) => client.once('end', () => resolve()));
  client.disconnect();
  return ended;
}

/**
 * Every Redis connection of a process, by role: one place that opens them from the config (one
 * server, or a Redis Cluster through ioredis's `Cluster`) and closes them all on shutdown.
 */
export class RedisConnections {
  private readonly sharedByRole = new Map<RedisRole, RedisClient>();
  private readonly open = new Set<RedisClient>();
  private readonly logger = new Logger('Redis');
  private closed = false;

  constructor(readonly target: RedisTarget) {}

  /** The process's connection for `role`, opened on first use and shared by every caller. */
  shared(role: RedisRole): RedisClient {
    let client = this.sharedByRole.get(role);
    if (!client) {
      client = this.dedicated(role);
      this.sharedByRole.set(role, client);
    }
    return client;
  }

  /**
   * A connection of `role` for the caller alone (a blocking read, a subscriber). The caller may
   * disconnect it when done; whatever is still open is closed with the others.
   */
  dedicated(role: RedisRole, connectionName?: string): RedisClient {
    if (this.closed) throw new Error(`Redis connections are closed; cannot open one for ${role}`);
    const client = this.connect({ ...ROLES[role], connectionName });
    this.open.add(client);
    client.once('end', () => this.open.delete(client));
    let failing = false;
    client.on('error', (err: Error) => {
      // Commands that fail report their own error; this says once that the connection is down.
      if (!failing) this.logger.warn(`${role} connection: ${err.message}`);
      failing = true;
    });
    client.on('ready', () => (failing = false));
    return client;
  }

  /** Closes every connection still open, resolving once each has ended; later calls to `shared` or `dedicated` throw. */
  async close(): Promise<void> {
    this.closed = true;
    const closing = [...this.open];
    this.open.clear();
    this.sharedByRole.clear();
    await Promise.all(closing.map(disconnectClient));
  }

  private connect(options: ConnectionOptions): RedisClient {
    if ('url' in this.target) return new IORedis(this.target.url, options);
    const { lazyConnect, enableAutoPipelining, ...perNode } = options;
    const clusterOptions: ClusterOptions = {
      lazyConnect,
      enableAutoPipelining,
      // ioredis routes an autopipelined EVAL by its script text instead of its key and fails it
      // ("All keys in the pipeline should belong to the same slots allocation group", ioredis#2109).
      autoPipeliningIgnoredCommands: ['eval', 'evalsha'],
      redisOptions: perNode,
    };
    return new Cluster(this.target.clusterNodes, clusterOptions);
  }
}
