import type { OrgId } from '@portal/domain';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { type TurnPromptInput } from '@portal/application';
import {
  TurnRepository,
  type Agent,
  type AgentMcpServer,
  type McpOfferedTool,
  type McpToolSnapshot,
} from '@portal/dal';
import { BUILTIN_TOOL_NAMES, mcpToolName } from '@portal/prompt';
import { PortalMetrics } from '@portal/observability';
import { CONFIG } from '../../config.token';
import type { TurnOrchestratorConfig } from '../../config';
import type { ResolvedTool } from '../tool-registry.service';
import type { ToolExecutor } from '../tool.types';
import { withMcpClient, type McpReach } from './mcp-client.util';
import { McpTool } from './mcp.tool';

/** A tool's description as offered, like an HTTP tool's at most this long. */
const DESCRIPTION_CHARS = 1024;
/** Pages of `tools/list` read from one server. */
const LIST_PAGES = 10;

type Listing = Pick<Tool, 'name' | 'description' | 'title' | 'inputSchema'>[];

/**
 * The agent's MCP servers: their tools listed when a turn starts (each server's list cached a short
 * while, per org and server) and kept with the turn; a call of one resolved to its server.
 */
@Injectable()
export class McpTools {
  private readonly logger = new Logger(McpTools.name);
  private readonly listings = new Map<string, { until: number; tools: Listing }>();

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  /**
   * The turn's input with its MCP tools: listed now and stored with the turn when it has none yet
   * and its agent names servers. A server that cannot be reached is named in `unavailable`.
   */
  async offer(orgId: OrgId, input: TurnPromptInput, signal: AbortSignal): Promise<TurnPromptInput> {
    const { agent } = input;
    if (input.mcpTools !== null || agent.mcpServers.length === 0) return input;
    const listed = await Promise.all(agent.mcpServers.map((server) => this.list(orgId, server, signal)));
    const taken = new Set<string>([...BUILTIN_TOOL_NAMES, ...agent.tools.map((t) => t.name)]);
    const snapshot: McpToolSnapshot = { tools: [], unavailable: [] };
    agent.mcpServers.forEach((server, i) => {
      const tools = listed[i];
      if (tools === null) return void snapshot.unavailable.push(server.name);
      for (const tool of tools) {
        if (server.tools && !server.tools.includes(tool.name)) continue;
        const name = mcpToolName(server.name, tool.name, taken);
        taken.add(name);
        snapshot.tools.push(offered(name, server, tool));
      }
    });
    const mcpTools = await this.turns.saveMcpTools(orgId, input.turn.id, snapshot);
    return {
      ...input,
      mcpTools,
      assemble: { ...input.assemble, agent: { ...input.assemble.agent, mcp: mcpTools } },
    };
  }

  /** The tool the turn offers under `name`, bound to its server's current configuration. */
  resolve(name: string, agent: Agent, mcpTools: McpToolSnapshot | null): ResolvedTool | null {
    const tool = mcpTools?.tools.find((t) => t.name === name);
    const server = tool && agent.mcpServers.find((s) => s.name === tool.server);
    if (!tool || !server) return null;
    const approval = server.requiresApproval;
    return {
      executor: this.counted(new McpTool(server, tool, this.reach(this.config.toolTimeoutMs)), server.name),
      needsApproval: approval === true || (Array.isArray(approval) && approval.includes(tool.tool)),
    };
  }

  /** The server's tools, or null when it cannot be reached. */
  private async list(orgId: OrgId, server: AgentMcpServer, signal: AbortSignal): Promise<Listing | null> {
    // Another org's agent naming the same URL never shares this org's listing.
    const key = JSON.stringify([orgId, server.url, server.headersFromEnv ?? {}]);
    const cached = this.listings.get(key);
    if (cached && cached.until > Date.now()) return cached.tools;
    try {
      const tools = await withMcpClient(
        server,
        this.reach(this.config.mcpListTimeoutMs),
        signal,
        async (client, opts) => {
          const all: Listing = [];
          let cursor: string | undefined;
          for (let page = 0; page < LIST_PAGES; page++) {
            const res = await client.listTools(cursor === undefined ? {} : { cursor }, opts);
            all.push(...res.tools);
            cursor = res.nextCursor;
            if (cursor === undefined) break;
          }
          return all;
        },
      );
      this.listings.set(key, { until: Date.now() + this.config.mcpListCacheMs, tools });
      return tools;
    } catch (err) {
      if (signal.aborted) throw err;
      this.logger.warn(`${(err as Error).message}; its tools are left out of the turn`);
      return null;
    }
  }

  private reach(timeoutMs: number): McpReach {
    return {
      allow: this.config.toolUrlAllow,
      timeoutMs,
      maxResponseBytes: this.config.toolMaxResponseBytes,
      env: process.env,
    };
  }

  /** Counts each call that ends with a result (`portal_tool_calls_total`), never its arguments. */
  private counted(executor: ToolExecutor, server: string): ToolExecutor {
    return {
      run: async (args, ctx, use) => {
        const run = await executor.run(args, ctx, use);
        if ('outcome' in run) this.metrics.toolCalls.inc({ source: 'mcp', server, outcome: run.outcome });
        return run;
      },
    };
  }
}

function offered(name: string, server: AgentMcpServer, tool: Listing[number]): McpOfferedTool {
  return {
    name,
    server: server.name,
    tool: tool.name,
    description: (tool.description ?? tool.title ?? '').slice(0, DESCRIPTION_CHARS),
    parameters: tool.inputSchema,
  };
}
