import type { ErrorObject } from 'ajv';
import { explainSchemaErrors, validatorCompiler } from '../../schema-validation.js';
import { ExperienceCreateSchema, type ExperienceCreateInput } from './experience-schema.js';
import { invalid, type FieldError } from '../errors.js';

/** A file holds one experience object or an array of them, imported in one transaction. */
const MAX_PER_FILE = 1000;

// Compiled with the same validator (and options: strict types, defaults) as the admin API's bodies.
const validate = validatorCompiler({ schema: ExperienceCreateSchema, httpPart: 'body', method: 'POST', url: 'import' }) as ((value: unknown) => boolean) & {
  errors?: ErrorObject[] | null;
};

/**
 * Parses and validates the text of an import file. Error paths are the API's field paths prefixed
 * with the entry's index (`0.prizes.1.value`; a single object is entry 0).
 */
export function parseImportFile(text: string): ExperienceCreateInput[] {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw invalid(`import file is not valid JSON: ${(error as Error).message}`);
  }
  const list = Array.isArray(document) ? document : [document];
  if (list.length > MAX_PER_FILE) throw invalid(`import file holds ${list.length} experiences; at most ${MAX_PER_FILE} per file`);
  const errors: FieldError[] = [];
  for (const [index, entry] of list.entries()) {
    if (validate(entry) || errors.length >= 20) continue;
    for (const { pointer, message } of explainSchemaErrors(validate.errors ?? [])) errors.push({ path: [index, ...pointer].join('.'), message });
  }
  if (errors.length > 0) throw invalid('import file', errors);
  return list as ExperienceCreateInput[];
}
