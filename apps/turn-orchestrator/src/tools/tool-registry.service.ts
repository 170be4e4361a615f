import { Inject, Injectable } from '@nestjs/common';
import type { Agent, McpToolSnapshot } from '@portal/dal';
import type { BuiltinToolName } from '@portal/prompt';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { AskClarificationTool } from './ask-clarification.tool';
import { AttachmentTools } from './attachment.tools';
import { HttpTool } from './http.tool';
import { LoadSkillTool } from './load-skill.tool';
import { McpTools } from './mcp/mcp-tools.service';
import { ReadToolResultTool } from './read-tool-result.tool';
import type { ToolExecutor } from './tool.types';

export interface ResolvedTool {
  executor: ToolExecutor;
  /** An HTTP or MCP tool declared with `requiresApproval`: the person approves each call first. */
  needsApproval: boolean;
}

/** The tools a call may use: the built-in ones, the agent's HTTP tools, then the turn's MCP tools. */
@Injectable()
export class ToolRegistry {
  private readonly builtins: Record<BuiltinToolName, ToolExecutor>;

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(LoadSkillTool) loadSkill: LoadSkillTool,
    @Inject(ReadToolResultTool) readToolResult: ReadToolResultTool,
    @Inject(AskClarificationTool) askClarification: AskClarificationTool,
    @Inject(AttachmentTools) attachments: AttachmentTools,
    @Inject(McpTools) private readonly mcp: McpTools,
  ) {
    this.builtins = {
      load_skill: loadSkill,
      read_document: attachments.readDocument,
      search_attachments: attachments.searchAttachments,
      read_tool_result: readToolResult,
      ask_clarification: askClarification,
    };
  }

  /** Null for a name the model made up. */
  resolve(name: string, agent: Agent, mcpTools: McpToolSnapshot | null): ResolvedTool | null {
    if (Object.prototype.hasOwnProperty.call(this.builtins, name)) {
      return { executor: this.builtins[name as BuiltinToolName], needsApproval: false };
    }
    const spec = agent.tools.find((t) => t.name === name);
    if (!spec) return this.mcp.resolve(name, agent, mcpTools);
    const executor = new HttpTool(spec, {
      allow: this.config.toolUrlAllow,
      timeoutMs: this.config.toolTimeoutMs,
      maxResponseBytes: this.config.toolMaxResponseBytes,
    });
    return { executor, needsApproval: spec.requiresApproval };
  }

  names(agent: Agent, mcpTools: McpToolSnapshot | null): string[] {
    const mcp = mcpTools?.tools.map((t) => t.name) ?? [];
    return [...Object.keys(this.builtins), ...agent.tools.map((t) => t.name), ...mcp];
  }
}

export const TOOL_PROVIDERS = [
  LoadSkillTool,
  ReadToolResultTool,
  AskClarificationTool,
  AttachmentTools,
  McpTools,
  ToolRegistry,
];
