import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/lib/**',
      '**/node_modules/**',
      '.venv/**',
      '.venv-ecosystem/**',
      'coverage/**',
      // scripts/package.sh's staging (the server bundle) and distributions.
      'build/**',
      'dist/**',
      // The prebuilt JupyterLab extension (a bundle) and the UI tests' output.
      'packages/server/labextensions/**',
      'ui-tests/test-results/**',
      'ui-tests/playwright-report/**'
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
      // Options interfaces live in a namespace merged with their class, as in JupyterLab.
      '@typescript-eslint/no-namespace': 'off'
    }
  },
  {
    // No import cycles in the sources: a cycle works only while every export is read lazily,
    // and it hides which module depends on which. Workspace packages resolve to their sources
    // (the `paths` of tsconfig.test.json), so cycles across packages are found too.
    files: ['packages/*/src/**/*.ts', 'packages/*/src/**/*.tsx'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.tsx', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/resolver-next': [
        createTypeScriptImportResolver({ project: 'tsconfig.test.json', alwaysTryTypes: true })
      ]
    },
    rules: { 'import-x/no-cycle': 'error' }
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        __dirname: 'readonly',
        process: 'readonly'
      }
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' }
  }
);
