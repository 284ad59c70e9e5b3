// ESLint (flat config) with typescript-eslint: `npm run lint`, run by `npm test` (docs/contributing.md).
// Unused code is an error: variables, imports, functions and parameters (a parameter a signature needs but the body
// does not read is named with a leading `_`). The rest is the recommended set of ESLint and typescript-eslint,
// without the rules below that fire on deliberate patterns of this codebase (each says why).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // Generated or built files, and the client's generated schema (npm run client:generate).
    ignores: ['node_modules/', 'dist/', 'src/generated/', 'clients/typescript/dist/', 'clients/typescript/src/schema.ts', 'clients/python/', 'test-output/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { args: 'all', argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Input checks reject control characters on purpose (names, keys, header values): the pattern is the point.
      'no-control-regex': 'off',
    },
  },
  {
    files: ['**/*.ts'],
    rules: {
      // TypeScript resolves every name (tsc --noEmit runs first in `npm test`); ESLint's scope check only knows
      // JavaScript globals and reports type names (typescript-eslint's advice).
      'no-undef': 'off',
    },
  },
  {
    files: ['test/**', 'bench/**'],
    rules: {
      // Tests and benchmarks read JSON answers and upstream payloads as `any` and assert on them; declaring a type
      // for each answer would repeat the shapes the tests check.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
  },
);
