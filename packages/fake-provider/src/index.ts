export { countTokensOf, MODELS } from "./catalogue.ts";
export {
  alongsideCallId,
  exampleOf,
  offeredTools,
  type Reply,
  resultText,
  type ScriptedToolCall,
  scriptedCallId,
  type ToolCall,
  toolResultIn,
  toolResultsIn,
} from "./reply.ts";
export { responsesJsonBody, responsesSseEvents } from "./responses-wire.ts";
export { type Endpoint, type Provider, type Route, routeOf } from "./routes.ts";
export {
  type Cut,
  FAULT_HEADER,
  type FakeBehaviour,
  type FakeProvider,
  type FakeStats,
  type NthBehaviour,
  type ReceivedRequest,
  startFakeProvider,
  type UnroutedRequest,
} from "./server.ts";
export { errorBody, jsonBody, sseEvents, type Usage } from "./wire.ts";
