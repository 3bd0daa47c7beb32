/**
 * The gateway's activity reports to JupyterHub: the Hub's format and token, at most one post per
 * interval carrying the latest activity, a failed post tried again, and what is left posted on
 * close.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/gateway/logger';
import { HubActivityReporter } from '../../src/hub/activity';

interface IPost {
  at: number;
  authorization: string | undefined;
  body: { servers: Record<string, { last_activity: string }>; last_activity: string };
}

let hub: http.Server;
let url: string;
let posts: IPost[];
/** The statuses the fake Hub answers with, in turn; 200 once they run out. */
let statuses: number[];

beforeEach(async () => {
  posts = [];
  statuses = [];
  hub = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    request.on('end', () => {
      posts.push({
        at: Date.now(),
        authorization: request.headers.authorization,
        body: JSON.parse(text) as IPost['body']
      });
      response.statusCode = statuses.shift() ?? 200;
      response.end();
    });
  });
  await new Promise<void>(resolve => hub.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(hub.address() as AddressInfo).port}/hub/api/users/alice/activity`;
});

afterEach(async () => {
  await new Promise(resolve => hub.close(resolve));
});

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms));

function reporter(intervalMs: number, now?: () => Date): HubActivityReporter {
  return new HubActivityReporter({
    activityUrl: url,
    apiToken: 'server-token',
    serverName: '',
    intervalMs,
    log: createLogger({ level: 'silent' }),
    now
  });
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(10);
  }
}

test('the first activity is posted at once, in the Hub’s format, with the server’s token', async () => {
  const at = new Date('2026-11-24T10:00:00.123Z');
  const activity = reporter(60_000, () => at);
  activity.touch();
  await until(() => posts.length === 1);
  expect(posts[0].authorization).toBe('token server-token');
  expect(posts[0].body).toEqual({
    servers: { '': { last_activity: '2026-11-24T10:00:00.123Z' } },
    last_activity: '2026-11-24T10:00:00.123Z'
  });
  await activity.close();
  expect(posts).toHaveLength(1);
});

test('activity within an interval is posted once, at its end, with the latest time', async () => {
  let clock = 0;
  const activity = reporter(800, () => new Date(Date.UTC(2026, 10, 24) + clock));
  activity.touch();
  await until(() => posts.length === 1);
  const first = posts[0].at;
  for (clock = 1; clock <= 5; clock++) {
    activity.touch();
    await sleep(20);
  }
  await sleep(100);
  expect(posts).toHaveLength(1);
  await until(() => posts.length === 2);
  expect(posts[1].at - first).toBeGreaterThanOrEqual(790);
  expect(posts[1].body.last_activity).toBe('2026-11-24T00:00:00.005Z');
  await sleep(500);
  expect(posts).toHaveLength(2);
  await activity.close();
});

test('a post the Hub refuses is tried again at the next interval', async () => {
  statuses = [503];
  const at = new Date('2026-11-24T11:00:00.000Z');
  const activity = reporter(200, () => at);
  activity.touch();
  await until(() => posts.length === 2);
  expect(posts[1].at - posts[0].at).toBeGreaterThanOrEqual(190);
  expect(posts[1].body.last_activity).toBe('2026-11-24T11:00:00.000Z');
  await sleep(300);
  expect(posts).toHaveLength(2);
  await activity.close();
});

test('close posts the activity not reported yet, and nothing after', async () => {
  let clock = 0;
  const activity = reporter(60_000, () => new Date(Date.UTC(2026, 10, 24) + clock));
  activity.touch();
  await until(() => posts.length === 1);
  clock = 7;
  activity.touch();
  await activity.close();
  expect(posts).toHaveLength(2);
  expect(posts[1].body.last_activity).toBe('2026-11-24T00:00:00.007Z');
  activity.touch();
  await sleep(50);
  expect(posts).toHaveLength(2);
});
