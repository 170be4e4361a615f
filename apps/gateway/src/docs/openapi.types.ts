/**
 * The part of OpenAPI 3.1 the gateway's document uses. (`openapi-types` types 3.1 responses with
 * 3.0 schemas, which refuse `type: ['string', 'null']`.)
 */
type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'object' | 'array' | 'null';

export interface Schema {
  $ref?: string;
  type?: JsonType | JsonType[];
  description?: string;
  format?: string;
  enum?: readonly unknown[];
  const?: unknown;
  default?: unknown;
  minLength?: number;
  maxLength?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean | Schema;
  items?: Schema;
  oneOf?: Schema[];
}

export interface MediaType {
  schema: Schema;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  description?: string;
  schema: Schema;
}

export interface Response {
  description: string;
  content?: Record<string, MediaType>;
}

export interface Operation {
  summary: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { required: boolean; content: Record<string, MediaType> };
  responses: Record<string, Response>;
  /** `[]`: no API key needed. */
  security?: Record<string, string[]>[];
}

export type PathItem = Partial<Record<'get' | 'post' | 'patch' | 'put' | 'delete', Operation>>;

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description?: string };
  components: {
    securitySchemes: Record<
      string,
      | { type: 'http'; scheme: 'bearer'; description?: string }
      | { type: 'apiKey'; in: 'cookie'; name: string; description?: string }
    >;
    schemas: Record<string, Schema>;
  };
  security: Record<string, string[]>[];
  paths: Record<string, PathItem>;
}
