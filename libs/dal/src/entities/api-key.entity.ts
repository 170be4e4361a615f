import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** Only the sha256 of a key is stored, never the key. */
@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'user_id', type: 'text' })
  userId!: string;

  @Column({ name: 'key_hash', type: 'text' })
  keyHash!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
