import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import fastUri from 'fast-uri';
import type { FastifySchemaCompiler } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

function makeAjv(options: Options): Ajv {
  // verbose: every error carries the schema it broke, so a failed union of literals can name the values it allows.
  const ajv = new Ajv({ useDefaults: true, allErrors: false, verbose: true, uriResolver: fastUri, addUsedSchema: false, ...options });
  addFormats(ajv);
  return ajv;
}

/**
 * Bodies are validated strictly: no type coercion (`"true"` is not a boolean) and unknown members
 * rejected where a schema closes the object. Query strings, path parameters and headers are text on
 * the wire, so they are coerced (`?limit=10` → 10). Neither drops what a closed schema does not
 * name: it is refused, so every query string is closed (src/http/query-parameters.ts) and an
 * unknown parameter is a 400 naming it, never silently ignored.
 */
const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false });
const textAjv = makeAjv({ coerceTypes: 'array', removeAdditional: false });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : textAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

/** One member at fault: its JSON pointer as keys (`['callback', 'url']`) and what is wrong, in words. */
export interface SchemaFault {
  pointer: string[];
  message: string;
}

type SchemaNode = { const?: unknown; enum?: unknown[]; anyOf?: SchemaNode[]; type?: unknown };

/** The values a schema allows when it is a list of literals (a union of literals, an `enum`, a `const`, `null`); else undefined. */
function literalValues(schema: unknown): unknown[] | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  const node = schema as SchemaNode;
  if ('const' in node) return [node.const];
  if (Array.isArray(node.enum)) return node.enum;
  if (Array.isArray(node.anyOf)) {
    const values: unknown[] = [];
    for (const branch of node.anyOf) {
      const more = literalValues(branch);
      if (!more) return undefined;
      values.push(...more);
    }
    return values;
  }
  if (node.type === 'null') return [null];
  return undefined;
}

const TYPE_TEXT: Record<string, string> = { object: 'an object', array: 'an array', integer: 'an integer (a whole number)', null: 'null' };
const typeText = (type: string) => TYPE_TEXT[type] ?? `a ${type}`;
const valueText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
const oneOf = (values: unknown[]) => (values.length === 1 ? `must be ${valueText(values[0])}` : `must be one of ${values.map(valueText).join(', ')}`);

function fault(error: ErrorObject): SchemaFault {
  const params = (error.params ?? {}) as Record<string, unknown>;
  const pointer = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  switch (error.keyword) {
    case 'required':
      return { pointer: [...pointer, String(params.missingProperty)], message: 'is required' };
    case 'additionalProperties':
      return { pointer: [...pointer, String(params.additionalProperty)], message: 'is not a known member' };
    case 'type':
      return { pointer, message: `must be ${String(params.type).split(',').map(typeText).join(' or ')}` };
    case 'enum':
      return { pointer, message: oneOf(params.allowedValues as unknown[]) };
    case 'const':
      return { pointer, message: oneOf([params.allowedValue]) };
    case 'anyOf': {
      const values = literalValues(error.parentSchema);
      return { pointer, message: values ? oneOf(values) : 'has an unexpected value' };
    }
    default:
      return { pointer, message: error.message ?? 'is invalid' };
  }
}

/**
 * Ajv's errors in the caller's words, one per member at fault. A union of literals (`status`:
 * pending, succeeded or failed) that no branch matched is one fault naming the values allowed,
 * in place of ajv's "must be equal to constant" per branch.
 */
export function explainSchemaErrors(errors: readonly ErrorObject[]): SchemaFault[] {
  // Outermost first: a union nested in another reports the outer one's values.
  const unions = errors.filter((error) => error.keyword === 'anyOf' && literalValues(error.parentSchema) !== undefined).sort((a, b) => a.schemaPath.length - b.schemaPath.length);
  const faults: SchemaFault[] = [];
  const told = new Set<ErrorObject>();
  for (const error of errors) {
    const union = unions.find((u) => u === error || (u.instancePath === error.instancePath && error.schemaPath.startsWith(`${u.schemaPath}/`))) ?? error;
    if (told.has(union)) continue;
    told.add(union);
    faults.push(fault(union));
  }
  return faults;
}
