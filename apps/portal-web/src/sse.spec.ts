import { createSseParser } from './sse';

describe('createSseParser', () => {
  it('reads ids and data across chunks, skipping comments', () => {
    const parser = createSseParser();
    const frames = ': connected\n\nid: 1-0\ndata: {"a":1}\n\n: heartbeat\n\nid: 2-0\ndata: {"b":"ệ👩🏽‍💻"}\n\n';
    const out = [];
    for (let i = 0; i < frames.length; i += 7) out.push(...parser.feed(frames.slice(i, i + 7)));
    expect(out).toEqual([
      { id: '1-0', event: 'message', data: '{"a":1}' },
      { id: '2-0', event: 'message', data: '{"b":"ệ👩🏽‍💻"}' },
    ]);
  });

  it('accepts CRLF and CR line ends and multi-line data', () => {
    const parser = createSseParser();
    // The last \r ends the blank line; the \n that opens the next chunk completes its pair.
    expect(parser.feed('id: 7\r\ndata: one\r\ndata: two\r\n\r')).toEqual([
      { id: '7', event: 'message', data: 'one\ntwo' },
    ]);
    expect(parser.feed('\nid: 8\rdata:three\r\r')).toEqual([{ id: '8', event: 'message', data: 'three' }]);
  });
});
