import { OrgId, TurnId } from '@portal/domain';
import { BlockRepository } from '@portal/dal';
import {
  newConversation,
  openTurn,
  setStatus,
  startGateway,
  type Harness,
} from '../../test/gateway-harness.util';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const layerNames = (body: { layers: { layer: string }[] }) => body.layers.map((l) => l.layer);

describe('GET /v1/conversations/:id/prompt-preview', () => {
  it('shows what the next call reads, layer by layer, empty layers left out', async () => {
    const conversationId = await newConversation(gw);
    const empty = await gw.call('GET', `/v1/conversations/${conversationId}/prompt-preview`);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ model: 'seeing', contextWindow: 100000, compactAt: 0.85 });
    expect(layerNames(empty.body)).toEqual(['portal_floor', 'author', 'catalogue']);

    const turnId = await openTurn(gw, conversationId, 'What is the capital of France?');
    const blocks = new BlockRepository(gw.db.dataSource);
    await blocks.append(OrgId('acme'), TurnId(turnId), [
      { kind: 'text', text: 'Paris.', narration: false, steering: false },
    ]);
    await setStatus(gw, turnId, 'completed');

    const res = await gw.call('GET', `/v1/conversations/${conversationId}/prompt-preview`, { as: 'alice' });
    expect(layerNames(res.body)).toEqual(['portal_floor', 'author', 'catalogue', 'memory']);
    const memory = res.body.layers.find((l: { layer: string }) => l.layer === 'memory');
    expect(memory.messages).toEqual([
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'Paris.' },
    ]);
    for (const layer of res.body.layers) expect(layer.tokens).toBeGreaterThan(0);
    expect(res.body.totalTokens).toBe(
      res.body.layers.reduce((sum: number, l: { tokens: number }) => sum + l.tokens, 0),
    );
  });

  it('shows memory ending on a message whose turn failed before any output, as typed', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId, 'Is anyone there?');
    await setStatus(gw, turnId, 'running');
    await setStatus(gw, turnId, 'failed');
    const res = await gw.call('GET', `/v1/conversations/${conversationId}/prompt-preview`);
    expect(layerNames(res.body).at(-1)).toBe('memory');
    // The next call joins its new message to this one; before it arrives, nothing is added.
    expect(res.body.layers.at(-1).messages).toEqual([{ role: 'user', content: 'Is anyone there?' }]);
  });

  it("uses the model's own compactAt and leaves out an agent's empty layers", async () => {
    const conversationId = await newConversation(gw, 'carol', 'blind');
    const res = await gw.call('GET', `/v1/conversations/${conversationId}/prompt-preview`, { as: 'carol' });
    expect(res.body).toMatchObject({ model: 'blind', contextWindow: 50000, compactAt: 0.5 });
    expect(layerNames(res.body)).toEqual(['portal_floor']);
  });

  it('is for authors and admins only, on their own conversations', async () => {
    const own = await newConversation(gw, 'bob');
    const member = await gw.call('GET', `/v1/conversations/${own}/prompt-preview`, { as: 'bob' });
    expect(member.status).toBe(403);
    expect(member.body.error.code).toBe('forbidden');
    const alices = await newConversation(gw, 'alice');
    expect((await gw.call('GET', `/v1/conversations/${alices}/prompt-preview`, { as: 'dave' })).status).toBe(
      404,
    );
  });
});
