// needs: nothing
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { openApiDocument, schemaDeclarations, SCHEMA_FILE } from '../../scripts/console-api-schema.js';

// The console's typed API client (console/src/api/schema.d.ts) is generated from the service's own
// OpenAPI document. A route or schema changed without regenerating it (`npm run build:console`)
// fails here, so the console cannot drift from the API unnoticed.
describe('console API schema', () => {
  it('console/src/api/schema.d.ts equals the one generated from the current OpenAPI document', async () => {
    const fresh = await schemaDeclarations(await openApiDocument());
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    assert.ok(
      committed === fresh,
      'console/src/api/schema.d.ts is stale: the API changed. Run `npm run build:console` (it regenerates the file and typechecks the console against it) and commit the result.',
    );
  });
});
