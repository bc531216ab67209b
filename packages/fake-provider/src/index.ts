export {
  type Cut,
  FAULT_HEADER,
  type FakeBehaviour,
  type FakeProvider,
  type FakeStats,
  type ReceivedRequest,
  startFakeProvider,
} from "./server.ts";
export { errorBody, jsonBody, type Provider, sseEvents, type Usage } from "./wire.ts";
