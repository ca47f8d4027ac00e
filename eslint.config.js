// ESLint for the whole tree (`npm run lint`): typescript-eslint's type-checked rules on the
// TypeScript, each file checked against the tsconfig that includes it (the root one; the console's
// own for console/src), React's hook rules on the console, and eslint-config-prettier last so that
// no rule argues with the formatter.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

/**
 * An exception to a rule names the rule, covers one line and says why
 * (`// eslint-disable-next-line some/rule -- why`): no file- or block-wide disables. A disable of
 * every rule would silence this rule's own report too, so that one stops the run instead.
 */
const scopedDisables = {
  meta: { type: 'problem', schema: [], messages: { scoped: 'Disable named rules for one line, with a reason: `eslint-disable-next-line rule -- why`.' } },
  create(context) {
    return {
      Program() {
        for (const comment of context.sourceCode.getAllComments()) {
          const text = comment.value.trim();
          if (!/^eslint-(disable|enable)\b/.test(text)) continue;
          if (/^eslint-disable\s*(--|$)/.test(text)) throw new Error(`${context.filename}:${comment.loc.start.line}: a disable of every rule; disable named rules for one line, with a reason`);
          if (!/^eslint-disable-(next-)?line\s+(?!--)\S.*\s--\s*\S/.test(text)) context.report({ loc: comment.loc, messageId: 'scoped' });
        }
      },
    };
  },
};

export default defineConfig(
  globalIgnores(['**/node_modules/', 'console/dist/', 'console/src/api/schema.d.ts', 'bench/results/', 'data/', '.cache/', '.scratch/', 'tmp/']),
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { local: { rules: { 'scoped-disables': scopedDisables } } },
    rules: { 'local/scoped-disables': 'error' },
  },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // console/vite.config.ts is in no tsconfig (the console's covers its sources only).
        projectService: { allowDefaultProject: ['console/vite.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // node:test's describe/it/test return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] }] },
      ],
      // A leading underscore marks a parameter or binding kept for its position or to leave it out of a rest.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
      // `async` without `await` is how a function here keeps a Promise-returning contract (fastify
      // handlers, repository and adapter methods, test doubles); floating and misused promises are
      // what the other rules catch.
      '@typescript-eslint/require-await': 'off',
      // A `let` that a closure reads before its one assignment stays a `let`: as a `const` the closure,
      // called early, would throw in the temporal dead zone instead of seeing undefined.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    // Plain JavaScript (launchers, build scripts, config files): no types to check against.
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } },
  },
  {
    // Tests read JSON responses and log lines as `any` on purpose: asserting on their shape is the test.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['console/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
    },
  },
  prettier,
);
