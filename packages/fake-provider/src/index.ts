export { type FakeBehaviour, type FakeProvider, type ReceivedRequest, startFakeProvider } from "./server.ts";
export { errorBody, jsonBody, type Provider, sseEvents, type Usage } from "./wire.ts";
