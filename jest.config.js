/** Jest runs the unit specs and the integration specs (real Jupyter Server) as two projects. */
require('./scripts/require-node.cjs');

const tsJest = ['ts-jest', { tsconfig: 'tsconfig.test.json', diagnostics: { warnOnly: false } }];
const shared = {
  testEnvironment: 'node',
  modulePathIgnorePatterns: ['<rootDir>/.venv'],
  transform: {
    '^.+\\.ts$': tsJest,
    // commander is an ES module, which jest only requires with experimental flags: compile it.
    '/node_modules/commander/.+\\.js$': [
      'ts-jest',
      { tsconfig: { allowJs: true, module: 'commonjs', isolatedModules: true } }
    ]
  },
  transformIgnorePatterns: ['/node_modules/(?!commander/)'],
  moduleNameMapper: {
    '^@jupyter-store/contract$': '<rootDir>/packages/contract/src/index.ts',
    '^@jupyter-store/nbformat$': '<rootDir>/packages/nbformat/src/index.ts',
    '^@jupyter-store/diff$': '<rootDir>/packages/diff/src/index.ts',
    '^@jupyter-store/client$': '<rootDir>/packages/client/src/index.ts'
  }
};
module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/packages/*/test/**/*.spec.ts'] },
    {
      ...shared,
      displayName: 'integration',
      testMatch: ['<rootDir>/packages/*/test/**/*.itest.ts'],
      // `testTimeout` is a global option that jest ignores inside a project: set it per file.
      setupFilesAfterEnv: ['<rootDir>/packages/server/test/support/integrationTimeout.ts']
    }
  ]
};
