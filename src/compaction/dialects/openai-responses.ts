/** OpenAI Responses input items (`openai-responses`). Placeholder until implemented: every operation throws. */
import type { Dialect } from './types';

const todo = (): never => {
  throw new Error('the openai-responses dialect is not implemented yet');
};

export const openaiResponses: Dialect = {
  name: 'openai-responses',
  keepsOpeningGroups: false,
  check: todo,
  roleOf: todo,
  texts: todo,
  textOf: todo,
  isInstruction: todo,
  groups: todo,
  isRealUserRequest: todo,
  isSummary: todo,
  posesAsSummary: todo,
  summaryMessages: todo,
  render: todo,
  providerCheck: todo,
  openCalls: todo,
  resultsOf: todo,
  holdReason: todo,
  forProvider: todo,
};
