import {
  type AttachmentManifest,
  type ConversationId,
  DomainError,
  type Message,
  type OrgId,
  type Turn,
} from '@portal/domain';
import type { ModelEntry } from '@portal/model';
import {
  conversationEntries,
  fitsInline,
  isSelectable,
  planAttachments,
  userSegments,
  type AssembleInput,
  type AttachmentForPrompt,
  type Limits,
  type UserSegment,
} from '@portal/prompt';
import {
  AttachmentRepository,
  CallInputRepository,
  type CallInput,
  ConversationRepository,
  SkillRepository,
  WindowRepository,
  type Agent,
  type Conversation,
  type Db,
  type McpToolSnapshot,
  type Skill,
} from '@portal/dal';
import type { BlobStore } from '../attachments/blob-store';
import { PictureCopies } from '../attachments/picture-copies';

export interface PromptInputOptions {
  /** Layer 1's first part (portal configuration). */
  portalFloor: string;
  /** The model catalogue; the turn's (or the agent's) model must be in it. */
  catalogue: readonly ModelEntry[];
  limits: Limits;
}

export interface PreviewPromptInput {
  conversation: Conversation;
  agent: Agent;
  model: ModelEntry;
  /** Ready for `assemblePrompt`. */
  assemble: AssembleInput;
}

export interface TurnPromptInput extends PreviewPromptInput {
  turn: Turn;
  /** The turn's messages as stored; the first is the person's message. */
  messages: Message[];
  /** The MCP tools the turn offers (listed when it started); null when none were listed. */
  mcpTools: McpToolSnapshot | null;
  /** The turn's steering count, read with `messages` (see `TurnRepository.recordCallIfUnchanged`). */
  steeringCount: number;
}

/**
 * Reads everything `assemblePrompt` needs for the next model call of a turn, in a bounded number of
 * indexed queries whatever the conversation's length: one statement (`CallInputRepository`), the
 * turn's skills beside it, then the attachments the prompt shows.
 * Throws DomainError `not_found` for a missing conversation (or one of another org) or model, and
 * `skill_rejected` (details.slug) when a selected skill is no longer visible or active (SPEC 6).
 */
export class PromptInputLoader {
  private readonly conversations: ConversationRepository;
  private readonly skills: SkillRepository;
  private readonly callInputs: CallInputRepository;
  private readonly windows: WindowRepository;
  private readonly attachments: AttachmentRepository;
  private readonly pictures: PictureCopies;

  /** `blobs` holds the originals and the copies reduced for each size limit a model reads. */
  constructor(db: Db, blobs: BlobStore) {
    this.pictures = new PictureCopies(blobs);
    this.conversations = new ConversationRepository(db);
    this.skills = new SkillRepository(db);
    this.callInputs = new CallInputRepository(db);
    this.windows = new WindowRepository(db);
    this.attachments = new AttachmentRepository(db);
  }

  /**
   * `turn` as the caller read it: what a call uses of it (number, model, effort, skills) is fixed
   * when the turn opens, so the reads here run side by side (the skills only when the turn has any).
   */
  async load(orgId: OrgId, turn: Turn, opts: PromptInputOptions): Promise<TurnPromptInput> {
    const [input, skills] = await Promise.all([
      this.callInputs.read(orgId, turn, { turnsReplayed: opts.limits.TURNS_REPLAYED }),
      this.turnSkills(orgId, turn),
    ]);
    return this.complete(orgId, turn, found(input, `turn ${turn.id}`), skills, opts);
  }

  /** As `load`, from the call input the turn's claim read (`TurnLeaseRepository.claim`'s `read`). */
  async loadFrom(
    orgId: OrgId,
    turn: Turn,
    input: CallInput,
    opts: PromptInputOptions,
  ): Promise<TurnPromptInput> {
    return this.complete(orgId, turn, input, await this.turnSkills(orgId, turn), opts);
  }

  /** `skills`: the turn's selected skills and its catalogue snapshot, as they are now (`turnSkills`). */
  private async complete(
    orgId: OrgId,
    turn: Turn,
    { conversation, agent, window, turn: read }: CallInput,
    skills: Skill[],
    opts: PromptInputOptions,
  ): Promise<TurnPromptInput> {
    const turnId = turn.id;
    const model = modelOf(opts.catalogue, turn.model);
    const selectedSkills = turn.selectedSkillIds.map((id) => {
      const skill = skills.find((s) => s.id === id);
      // A deleted skill has no slug left to name: its id stands in.
      const slug = skill?.slug ?? id;
      if (!skill || !isSelectable({ ...skill, ownerId: skill.ownerId ?? '' }, conversation.userId)) {
        throw new DomainError('skill_rejected', slug, { slug });
      }
      return skill;
    });
    const catalogue = turn.catalogueSkillIds.flatMap((id) =>
      turn.selectedSkillIds.includes(id) ? [] : skills.filter((s) => s.id === id),
    );
    const { messages, mcpTools, steeringCount } = read;
    const [opening, ...currentTurn] = messages;
    if (opening?.role !== 'user') throw new DomainError('not_found', `turn ${turnId} has no user message`);
    const newMessage = { text: messageText(opening), attachmentIds: opening.attachmentIds };
    const shown = userSegments(conversationEntries(window, newMessage, currentTurn, opts.limits));
    const attachments = await this.loadAttachments(orgId, shown, model, opts.limits);
    return {
      turn,
      conversation,
      agent,
      model,
      messages,
      mcpTools,
      steeringCount,
      assemble: assembleInput(agent, model, opts, {
        selectedSkills,
        catalogue,
        window,
        newMessage,
        currentTurn,
        attachments,
        mcpTools,
      }),
    };
  }

  /**
   * What the next call of the conversation would read before a new message arrives: the agent's
   * current catalogue for the conversation's user and the window of every settled turn. There is
   * no new message: a preview reports the layers up to memory.
   */
  async forPreview(
    orgId: OrgId,
    conversationId: ConversationId,
    opts: PromptInputOptions,
  ): Promise<PreviewPromptInput> {
    const { conversation, agent } = await this.conversationAndAgent(orgId, conversationId);
    const model = modelOf(opts.catalogue, agent.model);
    // The catalogue a turn opened now would snapshot, in the same (bind) order.
    const [catalogue, window] = await Promise.all([
      this.skills.listCatalogue(orgId, conversation.userId, agent.id),
      this.windows.readWindow(orgId, conversation.id, { turnsReplayed: opts.limits.TURNS_REPLAYED }),
    ]);
    const shown = userSegments(conversationEntries(window, null, [], opts.limits));
    return {
      conversation,
      agent,
      model,
      assemble: assembleInput(agent, model, opts, {
        selectedSkills: [],
        catalogue,
        window,
        newMessage: null,
        currentTurn: [],
        attachments: await this.loadAttachments(orgId, shown, model, opts.limits),
      }),
    };
  }

  /** The turn's selected skills and catalogue snapshot in one read; none when it has neither. */
  private async turnSkills(orgId: OrgId, turn: Turn): Promise<Skill[]> {
    const ids = unique([...turn.selectedSkillIds, ...turn.catalogueSkillIds]);
    return ids.length ? this.skills.getMany(orgId, ids) : [];
  }

  private async conversationAndAgent(orgId: OrgId, conversationId: ConversationId) {
    return found(
      await this.conversations.getWithAgent(orgId, conversationId),
      `conversation ${conversationId}`,
    );
  }

  /**
   * Manifests of every attachment the messages shown carry (`shown`: the user messages of the
   * assembled memory and turn, as the prompt plans them); the whole text of finished documents
   * short enough to go inline; data URLs of the pictures the prompt's own plan sends (the
   * PICTURE_MESSAGES newest picture-bearing messages shown, for a model that sees).
   */
  private async loadAttachments(
    orgId: OrgId,
    shown: readonly UserSegment[],
    model: ModelEntry,
    limits: Limits,
  ): Promise<Record<string, AttachmentForPrompt>> {
    const ids = unique(shown.flatMap((s) => s.attachmentIds));
    if (!ids.length) return {};
    // Keyed by the plain ids the messages carry.
    const manifests = new Map<string, AttachmentManifest>(
      (await this.attachments.getManifests(orgId, ids)).map((a) => [a.id, a]),
    );
    const inlinable = [...manifests.values()].filter(
      (a) => a.kind === 'document' && a.status === 'finished' && fitsInline(a.chars ?? 0, limits),
    );
    const plans = planAttachments(shown, Object.fromEntries(manifests), limits, model.vision !== null);
    const pictureIds = unique(
      shown.flatMap((s) =>
        plans.get(s)?.pictures === 'send'
          ? s.attachmentIds.filter((id) => manifests.get(id)?.kind === 'picture')
          : [],
      ),
    );
    const vision = model.vision;
    const [texts, pictures] = await Promise.all([
      this.attachments.getTexts(
        orgId,
        inlinable.map((a) => a.id),
      ),
      Promise.all(
        pictureIds.map((id) => {
          const manifest = manifests.get(id);
          return manifest?.picture && vision
            ? this.pictures.get({ orgId, attachmentId: manifest.id }, manifest.picture, vision)
            : null;
        }),
      ),
    ]);
    const out: Record<string, AttachmentForPrompt> = {};
    for (const [id, manifest] of manifests) {
      const entry: AttachmentForPrompt = { ...manifest };
      const text = texts.get(id);
      if (text !== undefined) entry.text = text;
      const copy = pictures[pictureIds.indexOf(id)];
      if (copy && manifest.picture) {
        // The prompt names, and the token estimate counts, the size this model is sent.
        entry.picture = { ...manifest.picture, width: copy.width, height: copy.height };
        entry.imageUrl = dataUrl(copy.data, manifest.mimeType);
      }
      out[id] = entry;
    }
    return out;
  }
}

/** The one place a turn's call and the preview fill `assemblePrompt`'s input, so they cannot drift. */
function assembleInput(
  agent: Agent,
  model: ModelEntry,
  opts: PromptInputOptions,
  {
    mcpTools,
    ...read
  }: Omit<AssembleInput, 'portalFloor' | 'agent' | 'model' | 'limits'> & {
    mcpTools?: AssembleInput['agent']['mcp'] | null;
  },
): AssembleInput {
  return {
    portalFloor: opts.portalFloor,
    agent: { instructions: agent.instructions, httpTools: agent.tools, ...(mcpTools && { mcp: mcpTools }) },
    model,
    limits: opts.limits,
    ...read,
  };
}

function found<T>(value: T | null, what: string): T {
  if (value === null) throw new DomainError('not_found', `${what} not found`);
  return value;
}

function modelOf(catalogue: readonly ModelEntry[], id: string): ModelEntry {
  const model = catalogue.find((m) => m.id === id);
  if (!model) throw new DomainError('not_found', `model "${id}" is not in the model catalogue`);
  return model;
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

function messageText(message: Message): string {
  return message.blocks.flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join('\n\n');
}

const IMAGE_SIGNATURES: ReadonlyArray<[mime: string, matches: (b: Buffer) => boolean]> = [
  ['image/png', (b) => b.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))],
  ['image/jpeg', (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ['image/webp', (b) => b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP'],
  ['image/gif', (b) => b.toString('latin1', 0, 4) === 'GIF8'],
];

/** The reduced variant's format comes from its bytes: ingest may have re-encoded the upload. */
function dataUrl(bytes: Buffer, fallbackMime: string): string {
  const mime = IMAGE_SIGNATURES.find(([, matches]) => matches(bytes))?.[0] ?? fallbackMime;
  return `data:${mime};base64,${bytes.toString('base64')}`;
}
