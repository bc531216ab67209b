export {
  ApiError,
  envelopeFor,
  ERROR_CATALOGUE,
  type ErrorCode,
  type ErrorEnvelope,
  type ErrorType,
} from "./catalogue.ts";
export { answerClientError } from "./client-error.ts";
