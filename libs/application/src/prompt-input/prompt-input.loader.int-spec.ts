import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AgentId,
  AttachmentId,
  ConversationId,
  DomainError,
  OrgId,
  type TextBlock,
  TurnId,
  UserId,
} from '@portal/domain';
import type { ModelEntry } from '@portal/model';
import { assemblePrompt, resolveLimits } from '@portal/prompt';
import sharp from 'sharp';
import type { DataSource } from 'typeorm';
import {
  AgentRepository,
  AttachmentRepository,
  BlockRepository,
  createDataSource,
  createScratchDatabase,
  SkillRepository,
  TurnRepository,
  type ScratchDatabase,
  type SkillInput,
} from '@portal/dal';
import { answer, newConversation, QueryLog, seedOrg, settledTurn } from '@portal/dal/testing';
import { FileBlobStore } from '../attachments/blob-store';
import { reducedVariant } from '../attachments/picture-copies';
import { DEFAULT_PORTAL_FLOOR, readPortalFloor } from './portal-floor.util';
import { PromptInputLoader, type PromptInputOptions } from './prompt-input.loader';

const ORG = OrgId('acme');
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

const model = (over: Partial<ModelEntry> = {}): ModelEntry => ({
  id: 'gpt-test',
  model: 'gpt-test',
  baseURL: 'http://127.0.0.1:1/v1',
  contextWindow: 128_000,
  vision: { maxLongSide: 2048, maxShortSide: 768 },
  reasoning: false,
  price: { inputPerMTok: 1, outputPerMTok: 1, cachedInputPerMTok: 1 },
  ...over,
});

const limits = resolveLimits();
const options = (over: Partial<PromptInputOptions> = {}): PromptInputOptions => ({
  portalFloor: 'You are the Acme assistant.',
  catalogue: [model()],
  limits,
  ...over,
});

const skill = (slug: string, over: Partial<SkillInput> = {}): SkillInput => ({
  slug,
  name: slug.toUpperCase(),
  description: `The ${slug} skill.`,
  instructions: `Do ${slug}.`,
  visibility: 'org',
  ownerId: 'alice',
  status: 'active',
  published: true,
  ...over,
});

let db: ScratchDatabase;
let ds: DataSource;
let loader: PromptInputLoader;
/** Not the default store: the loader reads pictures from the store it is given. */
const blobDir = mkdtempSync(join(tmpdir(), 'portal-blobs-'));
const blobs = new FileBlobStore(blobDir);
const ids: Record<string, string> = {};

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'application_test', serverUrl: process.env['DATABASE_URL'] });
  ds = db.dataSource;
  loader = new PromptInputLoader(ds, blobs);
  await seedOrg(ds, ORG);
  const skills = new SkillRepository(ds);
  for (const s of [
    skill('fact-check'),
    skill('summarise'),
    skill('unpublished', { published: false }),
    skill('bobs', { visibility: 'private', ownerId: 'bob' }),
  ]) {
    ids[s.slug] = (await skills.upsert(ORG, s)).id;
  }
  const agents = new AgentRepository(ds);
  await agents.upsert(ORG, {
    id: AgentId('researcher'),
    name: 'Researcher',
    instructions: 'Research carefully.',
    model: 'gpt-test',
    effort: 'medium',
    tools: [
      {
        name: 'crm_lookup',
        description: 'Look up a customer.',
        parameters: { type: 'object', properties: {} },
        url: 'http://127.0.0.1:1/crm',
        requiresApproval: false,
      },
    ],
    reviewer: null,
    compactionGuidance: null,
  });
  await agents.setSkills(ORG, AgentId('researcher'), [ids['summarise'], ids['fact-check'], ids['bobs']]);
});
afterAll(async () => {
  await db.drop();
  rmSync(blobDir, { recursive: true, force: true });
});

async function attachment(
  conversationId: string,
  kind: 'document' | 'picture',
  over: Record<string, unknown>,
) {
  const repo = new AttachmentRepository(ds);
  const created = await repo.create(ORG, {
    id: randomUUID(),
    userId: UserId('alice'),
    conversationId: ConversationId(conversationId),
    kind,
    filename: kind === 'document' ? 'notes.md' : 'photo.png',
    mimeType: kind === 'document' ? 'text/markdown' : 'image/png',
    byteSize: 10,
    sha256: 'x',
  });
  await repo.update(ORG, AttachmentId(created!.id), { status: 'finished', ...over });
  return created!.id;
}

/** A conversation: turn 1 settled with a short document and a picture, turn 2 queued with a long document. */
/** The turn as a run reads it before loading its prompt. */
async function turnOf(turnId: string) {
  return (await new TurnRepository(ds).get(ORG, TurnId(turnId)))!;
}

async function conversationWithAttachments() {
  const conversationId = await newConversation(ds, ORG);
  const attachments = new AttachmentRepository(ds);
  const shortDoc = await attachment(conversationId, 'document', { pageCount: 2, pagesRead: 2, chars: 20 });
  await attachments.savePage(ORG, AttachmentId(shortDoc), 1, 'Page one.');
  await attachments.savePage(ORG, AttachmentId(shortDoc), 2, 'Page two.');
  const longDoc = await attachment(conversationId, 'document', { pageCount: 1, pagesRead: 1, chars: 9000 });
  await attachments.savePage(ORG, AttachmentId(longDoc), 1, 'x'.repeat(9000));
  const picture = await attachment(conversationId, 'picture', {
    picture: { width: 10, height: 10, originalWidth: 10, originalHeight: 10 },
  });
  // Stored as the copy for the model's limits: the loader sends it as it is.
  await blobs.put(
    { orgId: ORG, attachmentId: AttachmentId(picture), variant: reducedVariant(model().vision!) },
    PNG,
  );

  const turns = new TurnRepository(ds);
  const first = await turns.createWithUserMessage(ORG, {
    conversationId: conversationId,
    effort: 'low',
    model: 'gpt-test',
    text: 'Read these.',
    attachmentIds: [shortDoc, picture],
  });
  const blocks = new BlockRepository(ds);
  await blocks.append(ORG, first!.turn.id, [answer('Read.')]);
  await turns.updateStatus(ORG, first!.turn.id, 'completed');
  const second = await turns.createWithUserMessage(ORG, {
    conversationId: conversationId,
    effort: 'high',
    model: 'gpt-test',
    text: '/fact-check Compare with this.',
    attachmentIds: [longDoc],
    selectedSkillIds: [ids['fact-check']],
    catalogueSkillIds: [ids['summarise']],
  });
  return { conversationId, turnId: second!.turn.id, shortDoc, longDoc, picture };
}

describe('PromptInputLoader.load', () => {
  it('reads everything assemblePrompt needs for the next call of a turn', async () => {
    const c = await conversationWithAttachments();
    const input = await loader.load(ORG, await turnOf(c.turnId), options());

    expect(input.turn.id).toBe(c.turnId);
    expect(input.model.id).toBe('gpt-test');
    expect(input.messages).toHaveLength(1);
    expect(Object.keys(input.assemble.attachments).sort()).toEqual([c.shortDoc, c.picture, c.longDoc].sort());
    const a = input.assemble;
    expect(a.portalFloor).toBe('You are the Acme assistant.');
    expect(a.agent.instructions).toBe('Research carefully.');
    expect(a.agent.httpTools.map((t) => t.name)).toEqual(['crm_lookup']);
    expect(a.selectedSkills.map((s) => s.slug)).toEqual(['fact-check']);
    expect(a.catalogue.map((s) => s.slug)).toEqual(['summarise']);
    expect(a.window.turns.map((t) => t.turn.n)).toEqual([1]);
    expect(a.newMessage).toEqual({ text: '/fact-check Compare with this.', attachmentIds: [c.longDoc] });
    expect(a.currentTurn).toEqual([]);
    expect(a.attachments[c.shortDoc].text).toBe('Page one.\n\nPage two.');
    expect(a.attachments[c.longDoc].text).toBeUndefined();
    expect(a.attachments[c.picture].imageUrl).toBe(`data:image/png;base64,${PNG.toString('base64')}`);

    const prompt = assemblePrompt(a);
    const user = JSON.stringify(prompt.messages.filter((m) => m.role === 'user'));
    expect(user).toContain('Page one.');
    expect(user).toContain('image_url');
    expect(user).toContain('Compare with this.');
  });

  it('loads only the pictures of messages memory shows: none hidden behind a compaction', async () => {
    const conversationId = await newConversation(ds, ORG);
    const picture = async () => {
      const id = await attachment(conversationId, 'picture', {
        picture: { width: 10, height: 10, originalWidth: 10, originalHeight: 10 },
      });
      await blobs.put(
        { orgId: ORG, attachmentId: AttachmentId(id), variant: reducedVariant(model().vision!) },
        PNG,
      );
      return id;
    };
    const [hidden, shown] = [await picture(), await picture()];
    const turns = new TurnRepository(ds);
    const blocks = new BlockRepository(ds);
    // Turn 1 was compacted while it ran: its opening message (and picture) is behind the summary.
    const first = await turns.createWithUserMessage(ORG, {
      conversationId: conversationId,
      effort: 'low',
      model: 'gpt-test',
      text: 'Look at this.',
      attachmentIds: [hidden],
    });
    await blocks.append(ORG, first!.turn.id, [
      {
        kind: 'compaction',
        summary: 'Summary of turns 1–1',
        trigger: 'AUTO',
        coversTurns: { from: 1, to: 1 },
      },
      answer('Seen.'),
    ]);
    await turns.updateStatus(ORG, first!.turn.id, 'completed');
    const second = await turns.createWithUserMessage(ORG, {
      conversationId: conversationId,
      effort: 'low',
      model: 'gpt-test',
      text: 'And this one.',
      attachmentIds: [shown],
    });

    const input = await loader.load(ORG, await turnOf(second!.turn.id), options());
    expect(input.assemble.window.turns[0].messages[0].attachmentIds).toEqual([hidden]);
    expect(Object.keys(input.assemble.attachments)).toEqual([shown]);
    expect(input.assemble.attachments[shown].imageUrl).toBeDefined();
    const user = JSON.stringify(assemblePrompt(input.assemble).messages.filter((m) => m.role === 'user'));
    expect(user).not.toContain(hidden);
    expect(user).toContain(`[Attachment ${shown}: photo.png (image/png, picture)] — picture attached`);
  });

  it('reduces a picture for the model that reads it, from the original, once per size limit', async () => {
    const conversationId = await newConversation(ds, ORG);
    const original = await sharp({
      create: { width: 3000, height: 1500, channels: 3, background: '#c04020' },
    })
      .jpeg()
      .withExif({ IFD0: { Artist: 'Somebody' } })
      .toBuffer();
    const id = await attachment(conversationId, 'picture', {
      picture: { width: 1536, height: 768, originalWidth: 3000, originalHeight: 1500 },
    });
    await blobs.put({ orgId: ORG, attachmentId: AttachmentId(id), variant: 'original' }, original);
    const catalogue = [model(), model({ id: 'small', vision: { maxLongSide: 512, maxShortSide: 512 } })];
    const turn = (await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId: conversationId,
      effort: 'low',
      model: 'gpt-test',
      text: 'What is this?',
      attachmentIds: [id],
    }))!.turn;
    const sent = async (modelId: string) => {
      const input = await loader.load(ORG, { ...turn, model: modelId }, options({ catalogue }));
      const url = input.assemble.attachments[id].imageUrl!;
      const meta = await sharp(Buffer.from(url.split(',')[1], 'base64')).metadata();
      const text = JSON.stringify(assemblePrompt(input.assemble).messages.at(-1));
      return { url, meta, text };
    };

    const small = await sent('small');
    expect(small.url.startsWith('data:image/jpeg;base64,')).toBe(true);
    expect(small.meta).toMatchObject({ format: 'jpeg', width: 512, height: 256 });
    expect(small.meta.exif).toBeUndefined();
    expect(small.text).toContain('picture attached, reduced to 512×256 (original 3000×1500)');
    const big = await sent('gpt-test');
    expect(big.meta).toMatchObject({ width: 1536, height: 768 });
    expect(big.text).toContain('reduced to 1536×768 (original 3000×1500)');

    // Each copy is kept under its limit: with the original gone, both are still sent.
    rmSync(join(blobDir, Buffer.from(ORG).toString('hex'), id, 'original'));
    expect((await sent('small')).url).toBe(small.url);
    expect((await sent('gpt-test')).url).toBe(big.url);
  });

  it('sends no picture to a model that cannot see', async () => {
    const c = await conversationWithAttachments();
    const input = await loader.load(
      ORG,
      await turnOf(c.turnId),
      options({ catalogue: [model({ vision: null })] }),
    );
    expect(input.assemble.attachments[c.picture].imageUrl).toBeUndefined();
  });

  it('hands the turn so far to the prompt after the opening message', async () => {
    const c = await conversationWithAttachments();
    const blocks = new BlockRepository(ds);
    await blocks.append(ORG, c.turnId, [
      { kind: 'text', text: 'Looking.', narration: true, steering: false },
    ]);
    const input = await loader.load(ORG, await turnOf(c.turnId), options());
    expect(input.messages).toHaveLength(2);
    expect(input.assemble.currentTurn.map((m) => m.role)).toEqual(['assistant']);
  });

  it('reads the MCP tools stored with the turn along with its messages, and none before they are', async () => {
    const c = await conversationWithAttachments();
    const turn = await turnOf(c.turnId);
    expect((await loader.load(ORG, turn, options())).mcpTools).toBeNull();
    const snapshot = {
      tools: [
        {
          name: 'tickets__lookup',
          server: 'tickets',
          tool: 'lookup',
          description: 'Finds a ticket.',
          parameters: { type: 'object' },
        },
      ],
      unavailable: ['down'],
    };
    await new TurnRepository(ds).saveMcpTools(ORG, c.turnId, snapshot);
    const input = await loader.load(ORG, turn, options());
    expect(input.mcpTools).toEqual(snapshot);
    expect(input.assemble.agent.mcp).toEqual(snapshot);
    expect(input.messages).toHaveLength(1);
  });

  it('rejects a selected skill that is no longer active, naming its slug', async () => {
    const c = await conversationWithAttachments();
    const skills = new SkillRepository(ds);
    await skills.update(ORG, ids['fact-check'], { status: 'inactive' });
    try {
      await expect(loader.load(ORG, await turnOf(c.turnId), options())).rejects.toMatchObject({
        code: 'skill_rejected',
        message: 'fact-check',
        details: { slug: 'fact-check' },
      });
    } finally {
      await skills.update(ORG, ids['fact-check'], { status: 'active' });
    }
  });

  it("rejects another user's private skill", async () => {
    const conversationId = await newConversation(ds, ORG);
    const created = await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId: conversationId,
      effort: 'low',
      model: 'gpt-test',
      text: '/bobs hi',
      selectedSkillIds: [ids['bobs']],
    });
    await expect(loader.load(ORG, created!.turn, options())).rejects.toMatchObject({
      code: 'skill_rejected',
      details: { slug: 'bobs' },
    });
  });

  it('fails with not_found for a model missing from the catalogue, or a turn of another org', async () => {
    const c = await conversationWithAttachments();
    await expect(
      loader.load(ORG, await turnOf(c.turnId), options({ catalogue: [model({ id: 'other' })] })),
    ).rejects.toThrow(/model "gpt-test"/);
    await expect(loader.load(OrgId('globex'), await turnOf(c.turnId), options())).rejects.toBeInstanceOf(
      DomainError,
    );
  });

  it('reads a call in one statement, the same whatever the length of the conversation', async () => {
    const log = new QueryLog();
    const logged = await createDataSource(db.url, { logger: log }).initialize();
    try {
      const statements: string[][] = [];
      for (const past of [2, 30]) {
        const conversationId = await newConversation(ds, ORG);
        for (let n = 1; n <= past; n++)
          await settledTurn(ds, ORG, conversationId, { text: `t${n}`, blocks: [answer(`a${n}`)] });
        const open = await new TurnRepository(ds).createWithUserMessage(ORG, {
          conversationId: conversationId,
          effort: 'low',
          model: 'gpt-test',
          text: 'now',
        });
        log.queries = [];
        const input = await new PromptInputLoader(logged, blobs).load(ORG, open!.turn, options());
        expect(input.assemble.window.turns).toHaveLength(Math.min(past, limits.TURNS_REPLAYED));
        // Sorted: the loader sends some in parallel.
        statements.push(log.queries.map((q) => q.sql).sort());
      }
      expect(statements[1]).toEqual(statements[0]);
      // No skills or attachments: the conversation, its agent, the window and the turn together.
      expect(statements[0]).toHaveLength(1);
    } finally {
      await logged.destroy();
    }
  });
});

describe('PromptInputLoader.forPreview', () => {
  it('reads what the next call would before a new message: the agent catalogue and every settled turn', async () => {
    const c = await conversationWithAttachments();
    const preview = await loader.forPreview(ORG, c.conversationId, options());
    expect(preview.model.id).toBe('gpt-test');
    expect(preview.assemble.selectedSkills).toEqual([]);
    // Bound, visible to alice, active and published, in bind order as a turn's snapshot.
    expect(preview.assemble.catalogue.map((s) => s.slug)).toEqual(['summarise', 'fact-check']);
    expect(preview.assemble.window.turns.map((t) => t.turn.n)).toEqual([1]);
    expect(preview.assemble.newMessage).toBeNull();
    expect(Object.keys(preview.assemble.attachments).sort()).toEqual([c.shortDoc, c.picture].sort());
    const first = preview.assemble.window.turns[0].messages[0].blocks[0] as TextBlock;
    expect(first.text).toBe('Read these.');
  });
});

describe('readPortalFloor', () => {
  const written: string[] = [];
  const file = (name: string, content: string) => {
    const path = join(tmpdir(), `portal-floor-${process.pid}-${name}`);
    writeFileSync(path, content);
    written.push(path);
    return path;
  };
  afterAll(() => written.forEach((path) => rmSync(path, { force: true })));

  it('reads portalFloor from a YAML or JSON bootstrap file, else the default', () => {
    expect(readPortalFloor(null)).toBe(DEFAULT_PORTAL_FLOOR);
    expect(readPortalFloor(file('a.yaml', 'portalFloor: "You are Acme."\norgs: []\n'))).toBe('You are Acme.');
    expect(readPortalFloor(file('b.json', '{"orgs": []}'))).toBe(DEFAULT_PORTAL_FLOOR);
  });

  it('names the variable when the file is bad', () => {
    expect(() => readPortalFloor(file('c.yaml', 'portalFloor: [1'))).toThrow(/PORTAL_BOOTSTRAP_FILE/);
    expect(() => readPortalFloor('/nope/missing.yaml')).toThrow(/PORTAL_BOOTSTRAP_FILE/);
  });
});
