export * from './compaction.types';
export { personRequest, personRequests } from './summary-history';
export { leftOutRequests, quoteRequests, requestsShare, summaryRequests } from './summary-requests';
export { languageSample } from './language-sample';
export { turnLineTokens } from './history-render';
export {
  buildCompactionPrompt,
  coveredTurns,
  summaryHeading,
  summaryPromptBudget,
} from './compaction-prompt';
export { finishSummary, summaryForPeople } from './summary-answer';
