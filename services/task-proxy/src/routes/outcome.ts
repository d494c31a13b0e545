import { toHttpError } from '@clinicalsuite/kit';
import type { ActionOutcome } from '../metrics.js';

/** The `outcome` label of `actions_total` for an action that failed with `error`. */
export function outcomeOf(error: unknown): ActionOutcome {
  const status = toHttpError(error).status;
  switch (status) {
    case 400:
    case 413:
    case 415:
    case 422:
      return 'bad_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 503:
      return 'unavailable';
    case 502:
    case 504:
      return 'upstream_error';
    default:
      return 'error';
  }
}
