import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import fastUri from 'fast-uri';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

function makeAjv(options: Options): Ajv {
  const ajv = new Ajv({ useDefaults: true, allErrors: false, uriResolver: fastUri, addUsedSchema: false, ...options });
  addFormats(ajv);
  return ajv;
}

/**
 * Bodies are validated strictly: no type coercion (`"true"` is not a boolean) and unknown members
 * rejected where a schema closes the object. Query strings, path parameters and headers are text on
 * the wire, so they are coerced (`?limit=10` → 10).
 */
const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false });
const textAjv = makeAjv({ coerceTypes: 'array', removeAdditional: true });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};
