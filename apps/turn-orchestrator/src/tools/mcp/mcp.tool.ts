import type { AgentMcpServer, McpOfferedTool } from '@portal/dal';
import { error, ok, type ToolArgs, type ToolContext, type ToolExecutor, type ToolRun } from '../tool.types';
import { McpServerError, withMcpClient, type McpReach } from './mcp-client.util';
import { mcpResultText } from './mcp-result.util';

/**
 * One MCP tool the turn offers: the model's arguments go to the server's `tools/call`; its text is
 * the result, an `isError` result or a server that fails (timeout, size cap, refused) an error.
 */
export class McpTool implements ToolExecutor {
  constructor(
    private readonly server: AgentMcpServer,
    private readonly offered: McpOfferedTool,
    private readonly reach: McpReach,
  ) {}

  async run(args: ToolArgs, ctx: ToolContext): Promise<ToolRun> {
    try {
      const result = await withMcpClient(this.server, this.reach, ctx.signal, (client, options) =>
        client.callTool({ name: this.offered.tool, arguments: args }, undefined, options),
      );
      const text = mcpResultText(result as Parameters<typeof mcpResultText>[0]);
      return result.isError ? error(text || `${this.offered.name} failed.`) : ok(text);
    } catch (err) {
      if (err instanceof McpServerError) return error(`${this.offered.name}: ${err.message}.`);
      throw err;
    }
  }
}
