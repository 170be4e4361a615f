import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { PortalMetrics } from '@portal/observability';
import { Public } from '../common/auth.decorator';
import { MetricsService } from './metrics.service';

@Controller('metrics')
export class MetricsController {
  constructor(
    @Inject(MetricsService) private readonly metrics: MetricsService,
    @Inject(PortalMetrics) private readonly portal: PortalMetrics,
  ) {}

  @Public()
  @Get()
  async scrape(@Res() reply: FastifyReply): Promise<void> {
    // The gateway's own metrics, then the portal's shared ones (queue depth among them).
    const body = (await this.metrics.registry.metrics()) + (await this.portal.registry.metrics());
    void reply.header('content-type', this.metrics.registry.contentType).send(body);
  }
}
