import { runAgainstFake, type FakeRoutes } from './fakes';

/** Run `jupyter store retention …` against a fake server. */
const retention = (argv: string[], routes: FakeRoutes = {}) =>
  runAgainstFake('retention', argv, routes);

const NONE = {
  prefix: 'workspace/',
  rule: null,
  rule_id: 'jupyter-store-retention:workspace',
  other_rules: 2
};
const SET = { ...NONE, rule: { keep_newest: 5, noncurrent_days: 30 } };

describe('jupyter store retention', () => {
  test('show (the default) prints the rule and the other rules', async () => {
    for (const argv of [[], ['show']]) {
      const result = await retention(argv, {
        'GET /api/store/retention': { status: 200, body: SET }
      });
      expect(result).toMatchObject({ status: 0, stderr: '' });
      expect(result.stdout).toBe(
        'Retention for workspace/: versions replaced 30 days ago or more expire; the newest 5 ' +
          'noncurrent versions are kept whatever their age.\n' +
          "Rule jupyter-store-retention:workspace of the bucket's lifecycle configuration.\n" +
          'The bucket has 2 other lifecycle rules.\n'
      );
      expect(result.sent.map(request => request.method)).toEqual(['GET']);
    }
  });

  test('show says when there is no rule, and --json prints the answer', async () => {
    const routes = {
      'GET /api/store/retention': { status: 200, body: { ...NONE, other_rules: 1 } }
    };
    const text = await retention(['show'], routes);
    expect(text.stdout).toBe(
      'No retention rule for workspace/: every archived version is kept.\n' +
        'The bucket has 1 other lifecycle rule.\n'
    );
    const json = await retention(['--json'], routes);
    expect(JSON.parse(json.stdout)).toEqual({ ...NONE, other_rules: 1 });
  });

  test('set sends the rule with PUT and prints what is in force', async () => {
    const result = await retention(['set', '--keep-newest', '0', '--noncurrent-days', '1'], {
      'PUT /api/store/retention': request => ({
        status: 200,
        body: { ...NONE, rule: request.body, other_rules: 0 }
      })
    });
    expect(result.status).toBe(0);
    expect(result.sent).toMatchObject([
      { method: 'PUT', body: { keep_newest: 0, noncurrent_days: 1 } }
    ]);
    expect(result.stdout).toBe(
      'Retention for workspace/: versions replaced 1 day ago or more expire; no noncurrent ' +
        'version is kept whatever its age.\n' +
        "Rule jupyter-store-retention:workspace of the bucket's lifecycle configuration.\n" +
        'The bucket has no other lifecycle rules.\n'
    );
  });

  test('clear removes the rule with DELETE', async () => {
    const result = await retention(['clear'], {
      'DELETE /api/store/retention': { status: 200, body: NONE }
    });
    expect(result.status).toBe(0);
    expect(result.sent.map(request => request.method)).toEqual(['DELETE']);
    expect(result.stdout).toMatch(/^No retention rule for workspace\/: every archived version/);
  });

  test("the server's refusal is one line and exit status 1", async () => {
    const result = await retention(['set', '--keep-newest', '1', '--noncurrent-days', '7'], {
      'PUT /api/store/retention': {
        status: 409,
        body: { message: 'workspace_prefix is empty', reason: 'no workspace prefix' }
      }
    });
    expect(result).toMatchObject({
      status: 1,
      stdout: '',
      stderr: 'jupyter-store retention: workspace_prefix is empty (HTTP 409, no workspace prefix)\n'
    });
  });

  describe('bad usage: one line on stderr, exit status 2, no request', () => {
    test.each([
      [['bogus']],
      [['set']],
      [['set', '--keep-newest', '1']],
      [['set', '--noncurrent-days', '1']],
      [['set', '--keep-newest', '101', '--noncurrent-days', '1']],
      [['set', '--keep-newest', '-1', '--noncurrent-days', '1']],
      [['set', '--keep-newest', '1', '--noncurrent-days', '0']],
      [['set', '--keep-newest', '1', '--noncurrent-days', '36501']],
      [['set', '--keep-newest', '01', '--noncurrent-days', '1']],
      [['set', '--keep-newest', '1.5', '--noncurrent-days', '1']],
      [['show', '--keep-newest', '1']],
      [['clear', '--noncurrent-days', '1']],
      [['show', 'extra']]
    ])('%j', async argv => {
      const result = await retention(argv);
      expect(result.status).toBe(2);
      expect(result.stderr).toMatch(/^jupyter-store retention: [^\n]+ \(see --help\)\n$/);
      expect(result.stdout).toBe('');
      expect(result.sent).toEqual([]);
    });
  });

  test('--help documents the actions and options', async () => {
    const result = await retention(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^Usage: jupyter store retention \[show \| set --keep-newest N/);
    for (const option of ['--keep-newest <N>', '--noncurrent-days <D>', '--url <URL>', '--json']) {
      expect(result.stdout).toContain(option);
    }
  });
});
