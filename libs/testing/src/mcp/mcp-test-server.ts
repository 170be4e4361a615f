import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** A call the test MCP server received. */
export interface McpReceivedCall {
  tool: string;
  args: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

export interface McpTestServer {
  /** The streamable HTTP endpoint (`…/mcp`). */
  url: string;
  calls: McpReceivedCall[];
  /** How many times `tools/list` was asked. */
  lists: number;
  close(): Promise<void>;
}

/** `report`'s text: longer than a replayed preview, shorter than any sensible size cap. */
export const MCP_REPORT_TEXT = `Ticket report. ${'Open tickets are listed by age. '.repeat(30)}End.`;

/**
 * A real MCP server on the official SDK (streamable HTTP, stateless), on a free local port. Tools:
 * `lookup` (echoes), `delete_ticket`, `admin_reset`, `broken` (an `isError` result), `hang` (never
 * answers), `report` (`MCP_REPORT_TEXT`), `big` (`bigChars` characters) and `picture` (an image and a
 * resource link). Every call is recorded with its headers before it runs.
 */
export async function startMcpTestServer(opts: { bigChars?: number } = {}): Promise<McpTestServer> {
  const state = { calls: [] as McpReceivedCall[], lists: 0 };
  const build = (headers: IncomingHttpHeaders) => {
    const server = new McpServer({ name: 'tickets', version: '1.0.0' });
    const record = (tool: string, args: Record<string, unknown>) => state.calls.push({ tool, args, headers });
    const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });
    server.registerTool(
      'lookup',
      {
        description: 'Look a ticket up by its words.',
        inputSchema: { q: z.string().describe('Words to find') },
      },
      (args) => (record('lookup', args), text(`Found ticket T-1 for "${args.q}".`)),
    );
    server.registerTool(
      'delete_ticket',
      { description: 'Delete a ticket.', inputSchema: { id: z.string() } },
      (args) => (record('delete_ticket', args), text(`Deleted ${args.id}.`)),
    );
    server.registerTool('admin_reset', { description: 'Reset everything.' }, () => {
      record('admin_reset', {});
      return text('Reset.');
    });
    server.registerTool('broken', { description: 'Always fails.' }, () => {
      record('broken', {});
      return { ...text('The ticket system is down.'), isError: true };
    });
    server.registerTool('hang', { description: 'Never answers.' }, async () => {
      record('hang', {});
      return new Promise<never>(() => undefined);
    });
    server.registerTool('report', { description: 'The ticket report.' }, () => {
      record('report', {});
      return text(MCP_REPORT_TEXT);
    });
    server.registerTool('big', { description: 'A very large export.' }, () => {
      record('big', {});
      return text('x'.repeat(opts.bigChars ?? 100_000));
    });
    server.registerTool('picture', { description: 'A chart of the tickets.' }, () => {
      record('picture', {});
      return {
        content: [
          {
            type: 'image' as const,
            data: Buffer.from('not really a png').toString('base64'),
            mimeType: 'image/png',
          },
          { type: 'resource_link' as const, uri: 'https://tickets.example.com/chart', name: 'chart' },
        ],
      };
    });
    return server;
  };

  const http = createServer((req, res) => {
    if (req.url !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const server = build(req.headers);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close().then(() => server.close()));
    void (async () => {
      let body = '';
      for await (const chunk of req) body += chunk;
      const message = body ? (JSON.parse(body) as { method?: string }) : undefined;
      if (message?.method === 'tools/list') state.lists += 1;
      await server.connect(transport);
      await transport.handleRequest(req, res, message);
    })().catch(() => res.headersSent || res.writeHead(500).end());
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls: state.calls,
    get lists() {
      return state.lists;
    },
    async close() {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
