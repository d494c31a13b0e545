import { BadRequestError, ValidationError, multipart, uploadedFiles } from '@clinicalsuite/kit';
import type { AgentConfig } from '../config.js';
import type { Upload } from '../domain/subservices.js';

/**
 * What the sub-service endpoints (subservices.ts) and the pipelines (pipelines.ts) share at the
 * edge: the documented errors, and reading an upload.
 */

/** The errors every sub-service endpoint documents. */
export const SUBSERVICE_RESPONSES = {
  413: { description: 'The upload is over AGENT_UPLOAD_MAX_BYTES, or the sub-service found it too large' },
  415: {
    description: 'Not multipart, or the sub-service refused the file type (its message, prefixed by its id)',
  },
  422: {
    description: 'A field is invalid (the sub-service’s own 422 keeps its field list, messages prefixed)',
  },
  502: {
    description:
      'The sub-service is unreachable, failed or timed out (AGENT_SUBSERVICE_TIMEOUT_MS), or every LLM ' +
      'failed or timed out (the message names which)',
  },
  503: {
    description: 'The sub-service is not configured (names its `<NAME>_URL`) or not ready (its reason)',
  },
  504: { description: "The request passed the agent's own deadline (REQUEST_TIMEOUT_MS)" },
} as const;

/** The kit's multipart parser for `fields`, with the agent's upload limit (413 past it). */
export function uploadParser(config: AgentConfig, fields: readonly string[] = ['file']) {
  return multipart({
    files: fields.map((name) => ({ name, maxCount: 1 })),
    maxFileBytes: config.AGENT_UPLOAD_MAX_BYTES,
  });
}

/** The one file sent in any of `fields` (422 when none, 400 when several or empty). */
export function requireUpload(
  req: Parameters<typeof uploadedFiles>[0],
  fields: readonly string[],
  what: string,
): Upload {
  const files = fields.flatMap((field) => uploadedFiles(req, field).map((file) => ({ field, file })));
  const first = files[0];
  if (first?.file.buffer === undefined) {
    throw new ValidationError([
      {
        loc: ['body', fields[0] ?? 'file'],
        msg: `${what} is required as the multipart file part ${fields.map((f) => `\`${f}\``).join(' or ')}`,
        type: 'missing',
      },
    ]);
  }
  if (files.length > 1) {
    throw new BadRequestError(`Send one file, in ${fields.map((f) => `\`${f}\``).join(' or ')}`, {
      code: 'too_many_files',
      param: first.field,
    });
  }
  if (first.file.size === 0) {
    throw new BadRequestError(`The uploaded file is empty (${what} expected)`, {
      code: 'empty_file',
      param: first.field,
    });
  }
  return { buffer: first.file.buffer, filename: first.file.originalname, mimetype: first.file.mimetype };
}
