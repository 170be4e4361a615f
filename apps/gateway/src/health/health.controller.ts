import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { DataSource } from 'typeorm';
import { isDatabaseReady } from '@portal/dal';
import { BullMqClient } from '@portal/queue';
import { Public } from '../common/auth.decorator';

@Public()
@Controller('health')
export class HealthController {
  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(BullMqClient) private readonly queues: BullMqClient,
  ) {}

  @Get('live')
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(@Res() reply: FastifyReply) {
    const checks = {
      database: await isDatabaseReady(this.dataSource),
      redis: await this.queues.ping(),
    };
    const ok = Object.values(checks).every(Boolean);
    reply.status(ok ? 200 : 503).send({ status: 'checked', checks });
  }
}
