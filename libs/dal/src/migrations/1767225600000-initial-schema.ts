import type { MigrationInterface, QueryRunner } from 'typeorm';

const TABLES_IN_ORDER = [
  'orgs',
  'users',
  'api_keys',
  'agents',
  'skills',
  'agent_skills',
  'conversations',
  'turns',
  'messages',
  'blocks',
  'tool_results',
  'attachments',
  'attachment_pages',
  'attachment_blobs',
  'trace_entries',
  'usage_rows',
];

const UP = `
CREATE TABLE orgs (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  id text NOT NULL,
  role text NOT NULL CHECK (role IN ('member', 'author', 'admin')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id)
);

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  user_id text NOT NULL,
  key_hash text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX api_keys_user_idx ON api_keys (org_id, user_id);

CREATE TABLE agents (
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  instructions text NOT NULL DEFAULT '',
  model text NOT NULL,
  effort text NOT NULL CHECK (effort IN ('low', 'medium', 'high')),
  tools jsonb NOT NULL DEFAULT '[]',
  reviewer text,
  compaction_guidance text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, id)
);

CREATE TABLE skills (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  slug text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
  name text NOT NULL,
  description text NOT NULL,
  instructions text NOT NULL,
  visibility text NOT NULL CHECK (visibility IN ('org', 'private')),
  owner_id text,
  status text NOT NULL CHECK (status IN ('active', 'inactive')),
  published boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, slug),
  FOREIGN KEY (org_id, owner_id) REFERENCES users (org_id, id)
);

CREATE TABLE agent_skills (
  org_id text NOT NULL,
  agent_id text NOT NULL,
  skill_id uuid NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
  position integer NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, agent_id, skill_id),
  FOREIGN KEY (org_id, agent_id) REFERENCES agents (org_id, id) ON DELETE CASCADE
);
CREATE INDEX agent_skills_skill_idx ON agent_skills (skill_id);

CREATE TABLE conversations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  user_id text NOT NULL,
  agent_id text NOT NULL,
  title text,
  last_turn_n integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE,
  FOREIGN KEY (org_id, agent_id) REFERENCES agents (org_id, id)
);
CREATE INDEX conversations_user_updated_idx ON conversations (org_id, user_id, updated_at DESC);
CREATE INDEX conversations_agent_idx ON conversations (org_id, agent_id);

CREATE TABLE turns (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  n integer NOT NULL CHECK (n >= 1),
  kind text NOT NULL CHECK (kind IN ('turn', 'compaction')),
  status text NOT NULL CHECK (status IN ('queued', 'running', 'paused', 'completed', 'failed', 'cut_off')),
  effort text NOT NULL CHECK (effort IN ('low', 'medium', 'high')),
  model text NOT NULL,
  context_tokens integer,
  selected_skill_ids uuid[] NOT NULL DEFAULT '{}',
  catalogue_skill_ids uuid[] NOT NULL DEFAULT '{}',
  error text,
  attempt integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_expires_at timestamptz,
  cancel_requested_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (conversation_id, n)
);
-- SPEC 2: at most one queued, running or paused turn per conversation.
CREATE UNIQUE INDEX turns_one_active_idx ON turns (conversation_id)
  WHERE status IN ('queued', 'running', 'paused');
-- The memory window walks this backwards from the current turn: LIMIT k reads k entries.
CREATE INDEX turns_replayable_idx ON turns (conversation_id, n DESC)
  WHERE kind = 'turn' AND status IN ('completed', 'failed', 'cut_off');

CREATE TABLE messages (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  conversation_id uuid NOT NULL,
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  seq integer NOT NULL CHECK (seq >= 0),
  role text NOT NULL CHECK (role IN ('user', 'assistant')),
  attachment_ids uuid[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (turn_id, seq)
);

CREATE TABLE blocks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  conversation_id uuid NOT NULL,
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  turn_n integer NOT NULL,
  message_id uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  seq integer NOT NULL CHECK (seq >= 0),
  kind text NOT NULL CHECK (kind IN ('thinking', 'text', 'tool_use', 'tool_result',
    'clarification_request', 'approval_request', 'compaction')),
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (turn_id, seq)
);
CREATE INDEX blocks_message_idx ON blocks (message_id);
-- The newest compaction of a conversation is the first entry of this index.
CREATE INDEX blocks_compaction_idx ON blocks (conversation_id, turn_n DESC, seq DESC)
  WHERE kind = 'compaction';

CREATE TABLE tool_results (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  ref text NOT NULL UNIQUE,
  org_id text NOT NULL,
  conversation_id uuid NOT NULL,
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  call_id text NOT NULL,
  content text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (turn_id, call_id)
);

CREATE TABLE attachments (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  user_id text NOT NULL,
  conversation_id uuid REFERENCES conversations (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('document', 'picture')),
  filename text NOT NULL,
  mime_type text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'reading', 'finished', 'failed')),
  pages_read integer NOT NULL DEFAULT 0,
  page_count integer,
  unreadable_pages integer[] NOT NULL DEFAULT '{}',
  headings text[] NOT NULL DEFAULT '{}',
  chars integer,
  picture jsonb,
  error text,
  byte_size integer NOT NULL,
  sha256 text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
CREATE INDEX attachments_user_idx ON attachments (org_id, user_id);
CREATE INDEX attachments_conversation_idx ON attachments (conversation_id);

CREATE TABLE attachment_pages (
  attachment_id uuid NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
  page integer NOT NULL CHECK (page >= 1),
  org_id text NOT NULL,
  text text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED,
  PRIMARY KEY (attachment_id, page)
);
CREATE INDEX attachment_pages_tsv_idx ON attachment_pages USING gin (tsv);

CREATE TABLE attachment_blobs (
  attachment_id uuid NOT NULL REFERENCES attachments (id) ON DELETE CASCADE,
  variant text NOT NULL CHECK (variant IN ('original', 'reduced')),
  org_id text NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (attachment_id, variant)
);
-- Uploads are mostly compressed already (JPEG, PNG, PDF): stored out of line without a compression
-- attempt, which for a 4 MB JPEG cost about 50 ms per write and saved nothing.
ALTER TABLE attachment_blobs ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE trace_entries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('SKILL_SELECT')),
  skill_ids uuid[] NOT NULL DEFAULT '{}',
  at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX trace_entries_turn_idx ON trace_entries (turn_id, at);
CREATE UNIQUE INDEX trace_entries_one_skill_select_idx ON trace_entries (turn_id)
  WHERE kind = 'SKILL_SELECT';

CREATE TABLE usage_rows (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id text NOT NULL,
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('turn', 'compaction', 'summary', 'review')),
  model text NOT NULL,
  input_tokens integer NOT NULL,
  output_tokens integer NOT NULL,
  cached_tokens integer NOT NULL DEFAULT 0,
  cost numeric NOT NULL DEFAULT 0,
  call_key text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (turn_id, call_key)
);
CREATE INDEX usage_rows_turn_idx ON usage_rows (turn_id, created_at);
`;

export class InitialSchema1767225600000 implements MigrationInterface {
  name = 'InitialSchema1767225600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(UP);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of [...TABLES_IN_ORDER].reverse()) {
      await queryRunner.query(`DROP TABLE ${table}`);
    }
  }
}
