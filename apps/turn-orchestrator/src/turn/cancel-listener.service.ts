import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import IORedis, { type Redis } from 'ioredis';
import { cancelChannel } from '@portal/contracts';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';

/** Subscribes once per process and tells the runs of a turn when its cancel is published. */
@Injectable()
export class CancelListener implements OnModuleInit, OnModuleDestroy {
  private readonly subscriber: Redis;
  private readonly watchers = new Map<string, Set<() => void>>();

  constructor(@Inject(CONFIG) private readonly config: TurnOrchestratorConfig) {
    this.subscriber = new IORedis(config.redisUrl, { maxRetriesPerRequest: null, lazyConnect: true });
    this.subscriber.on('error', () => undefined); // reconnects by itself; runs also check the column
    this.subscriber.on('message', (_channel: string, turnId: string) => {
      for (const onCancel of this.watchers.get(turnId) ?? []) onCancel();
    });
  }

  async onModuleInit(): Promise<void> {
    await this.subscriber.connect();
    await this.subscriber.subscribe(cancelChannel(this.config.prefix));
  }

  /** Calls `onCancel` when the turn's cancel arrives; returns the function that stops watching. */
  watch(turnId: string, onCancel: () => void): () => void {
    const set = this.watchers.get(turnId) ?? new Set();
    set.add(onCancel);
    this.watchers.set(turnId, set);
    return () => {
      set.delete(onCancel);
      if (set.size === 0) this.watchers.delete(turnId);
    };
  }

  onModuleDestroy(): void {
    this.subscriber.disconnect();
  }
}
