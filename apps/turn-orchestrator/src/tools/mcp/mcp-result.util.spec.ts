import { mcpResultText } from './mcp-result.util';

describe('mcpResultText', () => {
  it('keeps text and describes the other content kinds in words', () => {
    expect(
      mcpResultText({
        content: [
          { type: 'text', text: 'Two tickets.' },
          { type: 'image', data: Buffer.from('12345678').toString('base64'), mimeType: 'image/png' },
          { type: 'audio', data: '', mimeType: 'audio/wav' },
          { type: 'resource_link', uri: 'https://x.example/a', name: 'a', mimeType: 'text/csv' },
          { type: 'resource', resource: { uri: 'file:///notes.txt', text: 'Inline notes.' } },
          {
            type: 'resource',
            resource: { uri: 'file:///blob.bin', blob: 'AAAA', mimeType: 'application/zip' },
          },
        ],
      }),
    ).toBe(
      [
        'Two tickets.',
        '[an image (image/png, 8 bytes), not shown]',
        '[an audio clip (audio/wav, 0 bytes), not played]',
        '[a resource link: a <https://x.example/a> (text/csv)]',
        'Inline notes.',
        '[a resource <file:///blob.bin> (application/zip), binary, not shown]',
      ].join('\n\n'),
    );
  });

  it('falls back to the structured content when there is no content', () => {
    expect(mcpResultText({ content: [], structuredContent: { open: 2 } })).toBe('{"open":2}');
  });
});
