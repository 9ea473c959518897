// Three projects: unit (pure), integration (real HTTPS server), e2e (real kube-apiserver).
const common = {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  // Built binaries, control planes (etcd's *.snap files look like jest snapshots) and the build output.
  modulePathIgnorePatterns: ['<rootDir>/.cache/', '<rootDir>/dist/'],
  watchPathIgnorePatterns: ['<rootDir>/.cache/'],
};

export default {
  reporters: ['default', '<rootDir>/test/totals-reporter.cjs'],
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/e2e/global-setup.mjs',
      globalTeardown: '<rootDir>/test/e2e/global-teardown.mjs',
    },
  ],
};
