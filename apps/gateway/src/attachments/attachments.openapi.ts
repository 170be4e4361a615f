import type { PathItem, Response, Schema } from '../docs/openapi.types';

/** The attachment endpoints for the gateway's OpenAPI document: spread into its `paths`. */

const str: Schema = { type: 'string' };
const int: Schema = { type: 'integer' };
const error = (description: string): Response => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});
const json = (description: string, schema: Schema): Response => ({
  description,
  content: { 'application/json': { schema } },
});

const upload: Schema = {
  type: 'object',
  properties: {
    id: str,
    kind: { type: 'string', enum: ['document', 'picture'] },
    filename: str,
    mimeType: str,
    status: { type: 'string', enum: ['pending', 'reading', 'finished', 'failed'] },
  },
  required: ['id', 'kind', 'filename', 'mimeType', 'status'],
};

const manifest: Schema = {
  type: 'object',
  properties: {
    ...upload.properties,
    pagesRead: int,
    pageCount: { type: ['integer', 'null'] },
    unreadablePages: { type: 'array', items: int, description: 'page numbers from 1' },
    headings: { type: 'array', items: str, description: 'the first 20: PDF outline first, else the text' },
    chars: { type: ['integer', 'null'] },
    picture: {
      oneOf: [
        {
          type: 'object',
          description: 'reduced size, and original size, both after EXIF orientation',
          properties: { width: int, height: int, originalWidth: int, originalHeight: int },
          required: ['width', 'height', 'originalWidth', 'originalHeight'],
        },
        { type: 'null' },
      ],
    },
    error: { type: ['string', 'null'], description: 'why it failed' },
  },
  required: [
    ...(upload.required ?? []),
    'pagesRead',
    'pageCount',
    'unreadablePages',
    'headings',
    'chars',
    'picture',
    'error',
  ],
};

export const ATTACHMENT_PATHS: Record<string, PathItem> = {
  '/v1/attachments': {
    post: {
      summary: 'Upload an attachment',
      description:
        'The kind is decided once from the bytes (never the name or the content type): PNG, JPEG, WebP, GIF ' +
        'pictures; PDF, plain text, markdown, CSV, JSON (UTF-8) documents. It is read in the background; ' +
        "with `conversationId`, progress reaches that conversation's events as " +
        "`attachment_progress { attachment: <manifest> }`, and a picture is reduced to the limits of its agent's model.",
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              properties: {
                file: { type: 'string', format: 'binary' },
                conversationId: { type: 'string', description: "one of the caller's conversations" },
              },
              required: ['file'],
            },
          },
        },
      },
      responses: {
        201: json('Stored, pending', upload),
        400: error('`validation_failed`: not multipart, or no `file`'),
        401: error('`unauthorized`: no valid API key'),
        404: error("`not_found`: the conversation is not the caller's"),
        413: error('`too_large`: over ATTACHMENT_MAX_BYTES'),
        415: error('`unsupported_type`: empty, binary of another type, or text with a NUL byte'),
      },
    },
  },
  '/v1/attachments/{id}': {
    get: {
      summary: "The manifest of one of the caller's attachments, with its current status",
      parameters: [{ name: 'id', in: 'path', required: true, description: 'Attachment id', schema: str }],
      responses: {
        200: json('The manifest', manifest),
        401: error('`unauthorized`: no valid API key'),
        404: error("`not_found`: missing, another org's or another user's"),
      },
    },
  },
  '/v1/attachments/{id}/content': {
    get: {
      summary: "One of the caller's pictures as its model reads it",
      description:
        'The copy ingest made (the size the manifest names), reduced to the limits of the model of the ' +
        "conversation's agent and re-encoded in the picture's format without EXIF or other metadata; never " +
        'the original. `Cache-Control: private`. A document has no content here (its bytes are not served ' +
        'from the portal: its manifest is its preview), nor has a picture not read yet.',
      parameters: [{ name: 'id', in: 'path', required: true, description: 'Attachment id', schema: str }],
      responses: {
        200: {
          description: 'The picture',
          content: { 'image/*': { schema: { type: 'string', format: 'binary' } } },
        },
        401: error('`unauthorized`: no valid API key'),
        404: error("`not_found`: missing, another org's or another user's, a document, or not read yet"),
      },
    },
  },
};
