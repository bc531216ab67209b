import { ApiError } from "@terse/errors";
import { nameFault } from "@terse/identifiers";

/** The usage record's limit; real model names are a few dozen characters. */
const MAX_MODEL_LENGTH = 256;

/**
 * The model a generation or count names, refused (400, nothing forwarded) when missing or
 * not storable: it is stored with the call's usage, and a NUL there once failed a whole
 * batch of other accounts' events. A lone surrogate also cannot be URL-encoded for
 * Gemini's path.
 */
export function requireModel(model: string | undefined): string {
  if (model === undefined || model.trim() === "") {
    throw new ApiError("invalid_request", { message: "model is required (a non-empty string)", param: "model" });
  }
  const fault = nameFault(model);
  if (fault) throw new ApiError("invalid_request", { message: `model ${fault}`, param: "model" });
  if (model.length > MAX_MODEL_LENGTH) {
    throw new ApiError("invalid_request", {
      message: `model must be at most ${MAX_MODEL_LENGTH} characters`,
      param: "model",
    });
  }
  return model;
}
