import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';

/**
 * A `tools/call` result as the tool result's text: text content as it is, other kinds described in
 * words (the model reads text only here), parts separated by a blank line. Structured content
 * stands in when there is no content at all.
 */
export function mcpResultText(result: Pick<CallToolResult, 'content' | 'structuredContent'>): string {
  const parts = (result.content ?? []).map(describe);
  if (parts.length === 0 && result.structuredContent) return JSON.stringify(result.structuredContent);
  return parts.join('\n\n');
}

function describe(c: ContentBlock): string {
  switch (c.type) {
    case 'text':
      return c.text;
    case 'image':
      return `[an image (${c.mimeType}, ${base64Bytes(c.data)} bytes), not shown]`;
    case 'audio':
      return `[an audio clip (${c.mimeType}, ${base64Bytes(c.data)} bytes), not played]`;
    case 'resource_link':
      return `[a resource link: ${c.title ?? c.name} <${c.uri}>${c.mimeType ? ` (${c.mimeType})` : ''}]`;
    case 'resource':
      return 'text' in c.resource && typeof c.resource.text === 'string'
        ? c.resource.text
        : `[a resource <${c.resource.uri}>${c.resource.mimeType ? ` (${c.resource.mimeType})` : ''}, binary, not shown]`;
    default:
      return `[content of kind ${(c as { type: string }).type}, not shown]`;
  }
}

function base64Bytes(data: string): number {
  return Math.floor((data.replace(/=+$/, '').length * 3) / 4);
}
