import { findModel, type ModelEntry } from '@portal/model';
import type { AgentSpec } from '@portal/contracts';

export interface FieldProblem {
  field: string;
  message: string;
}

/**
 * Whether an HTTP tool's URL starts with one of the allowed prefixes. A prefix must end where the
 * URL's path, query or fragment begins, so `https://api.example.com` does not allow
 * `https://api.example.com.evil.net/`.
 */
export function isToolUrlAllowed(url: string, allow: readonly string[]): boolean {
  return allow.some((prefix) => {
    if (!url.startsWith(prefix)) return false;
    const next = url.charAt(prefix.length);
    return /[/?#]$/.test(prefix) || next === '' || '/?#'.includes(next);
  });
}

/** What the catalogue and the tool allow-list say about an agent, field by field. */
export function agentProblems(
  agent: Pick<AgentSpec, 'model' | 'reviewer' | 'tools' | 'mcpServers'>,
  rules: { catalogue: readonly ModelEntry[]; toolUrlAllow: readonly string[] },
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (!findModel(rules.catalogue, agent.model)) {
    problems.push({ field: 'model', message: `"${agent.model}" is not in the model catalogue` });
  }
  if (agent.reviewer !== null && !findModel(rules.catalogue, agent.reviewer)) {
    problems.push({ field: 'reviewer', message: `"${agent.reviewer}" is not in the model catalogue` });
  }
  agent.tools.forEach((tool, i) => {
    if (!isToolUrlAllowed(tool.url, rules.toolUrlAllow)) {
      problems.push({
        field: `tools[${i}].url`,
        message: `tool "${tool.name}": ${tool.url} matches no PORTAL_TOOL_URL_ALLOW prefix`,
      });
    }
  });
  agent.mcpServers.forEach((server, i) => {
    if (!isToolUrlAllowed(server.url, rules.toolUrlAllow)) {
      problems.push({
        field: `mcpServers[${i}].url`,
        message: `MCP server "${server.name}": ${server.url} matches no PORTAL_TOOL_URL_ALLOW prefix`,
      });
    }
  });
  return problems;
}
