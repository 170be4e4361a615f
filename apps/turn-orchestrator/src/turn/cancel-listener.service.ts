import type { TurnId } from '@portal/domain';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { cancelChannel } from '@portal/contracts';
import { RedisConnections, type RedisClient } from '@portal/redis';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';

/** Subscribes once per process and tells the runs of a turn when its cancel is published. */
@Injectable()
export class CancelListener implements OnModuleInit {
  private readonly subscriber: RedisClient;
  private readonly watchers = new Map<string, Set<() => void>>();

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(RedisConnections) redis: RedisConnections,
  ) {
    // Reconnects and subscribes again by itself; runs also check the column.
    this.subscriber = redis.dedicated('subscriber');
    this.subscriber.on('message', (_channel: string, turnId: TurnId) => {
      for (const onCancel of this.watchers.get(turnId) ?? []) onCancel();
    });
  }

  async onModuleInit(): Promise<void> {
    await this.subscriber.connect();
    await this.subscriber.subscribe(cancelChannel(this.config.prefix));
  }

  /** Calls `onCancel` when the turn's cancel arrives; returns the function that stops watching. */
  watch(turnId: TurnId, onCancel: () => void): () => void {
    const set = this.watchers.get(turnId) ?? new Set();
    set.add(onCancel);
    this.watchers.set(turnId, set);
    return () => {
      set.delete(onCancel);
      if (set.size === 0) this.watchers.delete(turnId);
    };
  }
}
