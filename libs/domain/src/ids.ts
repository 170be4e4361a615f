declare const brand: unique symbol;

/**
 * A string that the type checker tells apart from other strings: a repository call such as
 * `claim(orgId, turnId, owner, leaseMs)` cannot take its ids in the wrong order. At run time it
 * is the plain string.
 */
export type Id<Kind extends string> = string & { readonly [brand]: Kind };

/** The tenant: every query is scoped by it. */
export type OrgId = Id<'OrgId'>;
export type UserId = Id<'UserId'>;
export type AgentId = Id<'AgentId'>;
export type ConversationId = Id<'ConversationId'>;
export type TurnId = Id<'TurnId'>;
export type AttachmentId = Id<'AttachmentId'>;

/**
 * Names a string as an id where it enters the system (a URL, a job, a bootstrap file, a
 * principal); past that point ids travel typed. It checks nothing: repositories treat a malformed
 * id as one that is not found.
 */
export const OrgId = (value: string) => value as OrgId;
export const UserId = (value: string) => value as UserId;
export const AgentId = (value: string) => value as AgentId;
export const ConversationId = (value: string) => value as ConversationId;
export const TurnId = (value: string) => value as TurnId;
export const AttachmentId = (value: string) => value as AttachmentId;
