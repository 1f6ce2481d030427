/** Anthropic Messages (`anthropic`). Placeholder until implemented: every operation throws. */
import type { Dialect } from './types';

const todo = (): never => {
  throw new Error('the anthropic dialect is not implemented yet');
};

export const anthropic: Dialect = {
  name: 'anthropic',
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
