import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import { Inject, Logger, Module, type DynamicModule, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';

/** The web client's own routes: each answers index.html, and the client reads the URL. */
export const WEB_CLIENT_ROUTES = ['/', '/c/:conversationId'] as const;

const WEB_ROOT = Symbol('WEB_ROOT');

/**
 * Where `tools/build-web.js` puts the client: dist/apps/portal-web/public, found from this file in
 * dist (dist/apps/gateway/src/web) or, when the gateway runs from source, from the working
 * directory.
 */
export function defaultWebRoot(): string | null {
  const candidates = [
    path.resolve(__dirname, '..', '..', '..', 'portal-web', 'public'),
    path.resolve(process.cwd(), 'dist', 'apps', 'portal-web', 'public'),
  ];
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html'))) ?? null;
}

/**
 * Serves the portal web client (apps/portal-web, built) at `/` with @fastify/static: one route per
 * built file (no wildcard, so nothing under /v1, /health, /metrics or /docs is shadowed and an
 * unknown path still gets the API's 404), and index.html for the client's routes.
 */
@Module({ providers: [{ provide: WEB_ROOT, useFactory: defaultWebRoot }] })
export class WebModule implements OnModuleInit {
  private readonly logger = new Logger('Web');

  constructor(
    @Inject(HttpAdapterHost) private readonly host: HttpAdapterHost,
    @Inject(WEB_ROOT) private readonly root: string | null,
  ) {}

  /**
   * Imported as it is, the module serves the built client; `forRoot` names another folder (null:
   * none). A gateway without a built client serves the API alone.
   */
  static forRoot(root: string | null): DynamicModule {
    return { module: WebModule, providers: [{ provide: WEB_ROOT, useValue: root }] };
  }

  onModuleInit(): void {
    const root = this.root;
    if (!root || !existsSync(path.join(root, 'index.html'))) {
      this.logger.warn('the web client is not built (npm run build): / is not served');
      return;
    }
    const fastify = this.host.httpAdapter.getInstance<FastifyInstance>();
    // An encapsulated plugin: the reply decorator and the routes stay in their own context. Loaded
    // when the server gets ready, before it listens.
    void fastify.register(async (web) => {
      await web.register(fastifyStatic, {
        root,
        prefix: '/',
        wildcard: false,
        index: false,
        // A reload always gets the newest build (the names carry no hash); ETags keep it cheap.
        cacheControl: true,
        maxAge: 0,
      });
      for (const url of WEB_CLIENT_ROUTES) {
        web.get(url, (_request, reply) => reply.header('cache-control', 'no-cache').sendFile('index.html'));
      }
    });
  }
}
