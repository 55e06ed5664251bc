// ESLint for the console (make lint; docs/console.md "Formatting and linting"):
// the recommended rules, the rules of hooks, and exhaustive hook dependencies
// (preact/hooks are named as React's, so eslint-plugin-react-hooks reads them).
// Formatting is Prettier's (.prettierrc.json), not ESLint's.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import globals from 'globals';

export default [
  { ignores: ['node_modules/'] },
  js.configs.recommended,
  {
    files: ['src/**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.browser } },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      // useData (ui.js) is left out: it calls the latest fn it was given, so
      // its deps say when to load again, not what the loader reads.
      'react-hooks/exhaustive-deps': 'error',
      'no-unused-vars': ['error', { args: 'after-used', caughtErrors: 'none', ignoreRestSiblings: true }],
      eqeqeq: ['error', 'smart'],
      'prefer-const': 'error',
      'no-var': 'error',
    },
  },
  {
    files: ['build.mjs', 'eslint.config.js', 'test/**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { ...globals.node } },
  },
];
