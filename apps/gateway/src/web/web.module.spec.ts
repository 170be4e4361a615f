import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { WebModule } from './web.module';

@Controller('v1')
class PingController {
  @Get('ping')
  ping() {
    return { pong: true };
  }
}

describe('WebModule', () => {
  let root: string;
  let app: NestFastifyApplication;
  let base: string;

  beforeAll(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'portal-web-'));
    writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>Portal</title>');
    writeFileSync(path.join(root, 'app.js'), 'console.log(1)');
    writeFileSync(path.join(root, 'styles.css'), 'body{}');

    @Module({ imports: [WebModule.forRoot(root)], controllers: [PingController] })
    class TestModule {}

    app = await NestFactory.create<NestFastifyApplication>(TestModule, new FastifyAdapter(), {
      logger: false,
    });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });

  afterAll(async () => {
    await app.close();
    rmSync(root, { recursive: true, force: true });
  });

  const get = async (url: string) => {
    const res = await fetch(base + url);
    return { statusCode: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  };

  it('serves the client at / and index.html for a conversation URL', async () => {
    for (const url of ['/', '/c/0b6f2a0e-1d3c-4c1e-9a57-1f4f3f7f0b11']) {
      const res = await get(url);
      expect(res.statusCode).toBe(200);
      expect(res.type).toMatch(/text\/html/);
      expect(res.body).toContain('<title>Portal</title>');
    }
  });

  it('serves the built files', async () => {
    const js = await get('/app.js');
    expect(js.statusCode).toBe(200);
    expect(js.type).toMatch(/javascript/);
    expect((await get('/styles.css')).type).toMatch(/text\/css/);
  });

  it('shadows nothing: the API answers, and an unknown path is a 404, not the client', async () => {
    expect(JSON.parse((await get('/v1/ping')).body)).toEqual({ pong: true });
    for (const url of ['/v1/nothing', '/health/nothing', '/metrics/x', '/docs/x', '/c/1/2', '/nope']) {
      const res = await get(url);
      expect(res.statusCode).toBe(404);
      expect(res.body).not.toContain('<title>Portal</title>');
    }
  });

  it('leaves / alone when the client is not built', async () => {
    @Module({ imports: [WebModule.forRoot(null)], controllers: [PingController] })
    class BareModule {}
    const bare = await NestFactory.create<NestFastifyApplication>(BareModule, new FastifyAdapter(), {
      logger: false,
    });
    await bare.listen(0, '127.0.0.1');
    const res = await fetch(`${await bare.getUrl()}/`);
    expect(res.status).toBe(404);
    await bare.close();
  });
});
