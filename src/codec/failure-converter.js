'use strict';
/**
 * The failure converter used when payloads are encrypted: a failure's message and stack trace
 * (an LLM error body, a reason) move into its encoded attributes, a payload the codec
 * encrypts, so nothing readable is left in history. The SDK loads it by path
 * (`failureConverterPath`), with a plain `require`: hence plain JavaScript. Workflow-safe.
 */
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
