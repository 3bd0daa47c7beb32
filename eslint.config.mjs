import js from '@eslint/js';
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
