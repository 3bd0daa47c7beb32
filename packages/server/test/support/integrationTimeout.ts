/**
 * Run before every integration spec: real servers on a small, shared machine need more than
 * jest's default 5 s per test. A spec that needs longer sets its own `jest.setTimeout`.
 */
jest.setTimeout(120_000);
