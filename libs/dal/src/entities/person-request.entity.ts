import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A message of the person in a regular turn as the request a summary keeps (SPEC 5.2), stored
 * with the message: a compaction reads a long conversation's requests with one index range scan
 * and without counting their tokens again.
 */
@Entity('person_requests')
export class PersonRequestEntity {
  @PrimaryColumn({ name: 'message_id', type: 'uuid' })
  messageId!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId!: string;

  @Column({ name: 'turn_n', type: 'integer' })
  turnN!: number;

  /** The position of the message's text within its turn (a block's seq). */
  @Column({ type: 'integer' })
  seq!: number;

  /** The text as the model read it (`personRequest`); '' when the message asks nothing. */
  @Column({ type: 'text' })
  text!: string;

  /** Tokens of the text as the summary prompt quotes it (`personRequest`). */
  @Column({ type: 'integer' })
  tokens!: number;
}
