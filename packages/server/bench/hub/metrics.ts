/**
 * S3 requests counted by MinIO itself: every node's Prometheus metrics (`/minio/v2/metrics/node`,
 * readable without a token when the cluster runs with `MINIO_PROMETHEUS_AUTH_TYPE=public`), so
 * that the gateways need no instrumentation. The benchmark's own S3 calls (its polling and its
 * reads of the archive) are counted on its client and taken off.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { IDistributedMinio } from '../../test/support/distributedMinio';

/** S3 requests by API (MinIO's names: `putobject`, `listobjectversions`…), and bytes received. */
export interface IS3Counts {
  readonly requests: ReadonlyMap<string, number>;
  readonly receivedBytes: number;
}

/** The sum over every node of its S3 request counters and received bytes. */
export async function scrapeS3Counts(cluster: IDistributedMinio): Promise<IS3Counts> {
  const requests = new Map<string, number>();
  let receivedBytes = 0;
  for (const endpoint of cluster.endpoints) {
    const response = await fetch(`${endpoint}/minio/v2/metrics/node`, {
      signal: AbortSignal.timeout(10_000)
    });
    const text = await response.text();
    if (response.status !== 200) {
      throw new Error(
        `${endpoint}/minio/v2/metrics/node: ${response.status} ${text.slice(0, 200)}`
      );
    }
    for (const line of text.split('\n')) {
      const request = /^minio_s3_requests_total\{api="([^"]+)"[^}]*\} (\S+)$/.exec(line);
      if (request) requests.set(request[1], (requests.get(request[1]) ?? 0) + Number(request[2]));
      const bytes = /^minio_s3_traffic_received_bytes\{[^}]*\} (\S+)$/.exec(line);
      if (bytes) receivedBytes += Number(bytes[1]);
    }
  }
  return { requests, receivedBytes };
}

/** `after − before − own`, by API, zero counts left out. */
export function requestsBetween(
  before: IS3Counts,
  after: IS3Counts,
  own: ReadonlyMap<string, number>
): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [api, count] of after.requests) {
    const value = count - (before.requests.get(api) ?? 0) - (own.get(api) ?? 0);
    if (value !== 0) delta.set(api, value);
  }
  return delta;
}

/**
 * Count the requests `client` sends, by MinIO's API name (`ListObjectVersionsCommand` is
 * `listobjectversions`), into the returned map.
 */
export function countClientRequests(client: S3Client): Map<string, number> {
  const counts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => args => {
      const api = String(context.commandName ?? '')
        .replace(/Command$/, '')
        .toLowerCase();
      counts.set(api, (counts.get(api) ?? 0) + 1);
      return next(args);
    },
    // Below the retries: every attempt is a request.
    { step: 'deserialize', name: 'benchRequestCounter' }
  );
  return counts;
}
