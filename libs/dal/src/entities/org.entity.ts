import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity('orgs')
export class OrgEntity {
  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
