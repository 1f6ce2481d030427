export { lineageMiddleware, type LineageMiddlewareOptions } from './middleware';
export { fromChatMessage, toChatMessage } from './messages';
