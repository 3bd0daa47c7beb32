import { RetentionRuleSchema, type Retention } from '@jupyter-store/contract';
import type { Route } from '../gateway/assemble';
import type { Logger } from '../gateway/logger';
import { httpErrors } from '../http/errorCatalogue';
import {
  findRetention,
  retentionFilterPrefix,
  retentionRuleId,
  withRetention,
  type ILifecycleRule,
  type IRetention
} from '../storage/lifecycle';
import type { StoreAccess } from './objects';
import { readJsonObject, validate } from './requests';

/** Largest body of `PUT api/store/retention`, in bytes: two small numbers. */
export const MAX_RETENTION_BODY_BYTES = 64 * 1024;

/** What the retention routes need. */
export interface IRetentionOptions {
  readonly archiving: StoreAccess;
  /** Where changes of the rule are logged (info): they decide what is deleted for good. */
  readonly log?: Logger;
}

/**
 * `GET`, `PUT` and `DELETE api/store/retention`: the bucket lifecycle rule that bounds the
 * archive's growth under the workspace prefix (see `storage/lifecycle.ts` for its shape).
 *
 * #### Notes
 * Statuses (every error is Jupyter's `{"message", "reason"}`):
 *
 * | status | when |
 * |---|---|
 * | 200 | the rule in force after the call (`rule` null when there is none) |
 * | 400 | (PUT) body not a JSON object; `keep_newest` not a whole number from 0 to 100, `noncurrent_days` not one from 1 to 36500, or another field |
 * | 403 | Jupyter's `Authorizer` refuses `contents: read` (GET) or `contents: write`; object storage denies access to the lifecycle configuration (the store's code) |
 * | 404 | the bucket does not exist |
 * | 409 | (PUT) `workspace_prefix` is empty, so the rule would cover the whole bucket (reason `no workspace prefix`) |
 * | 501 | the object store does not implement lifecycle configuration (versitygw; `NotImplemented`) |
 * | 502 | object storage unreachable or failing |
 * | 503 | object storage not usable (reason `store unavailable`) |
 *
 * A change is a read-modify-write of the bucket's whole configuration, replacing only this
 * rule: S3 has no call that changes one rule. Two changes at the same moment (two gateways on
 * the same bucket) can lose one of them; the answer shows what was written.
 */
export function retentionRoutes(options: IRetentionOptions): {
  readonly read: Route.Handler;
  readonly set: Route.Handler;
  readonly clear: Route.Handler;
} {
  const { archiving, log } = options;
  const { store, bucket } = archiving;
  const prefix = () => archiving.settings.workspace_prefix;
  return {
    read: async (_request, response) => {
      const rules = await store.getLifecycleRules(bucket);
      response.json(Private.answer(rules, prefix()));
    },
    set: async (request, response) => {
      const body = validate(RetentionRuleSchema, readJsonObject(request));
      const workspacePrefix = prefix();
      if (retentionFilterPrefix(workspacePrefix) === '') {
        throw httpErrors.noWorkspacePrefix(
          'workspace_prefix is empty: a retention rule would cover every key of the bucket, ' +
            'published and named copies too; set a workspace_prefix first'
        );
      }
      const retention: IRetention = {
        keepNewest: body.keep_newest,
        noncurrentDays: body.noncurrent_days
      };
      const rules = withRetention(
        await store.getLifecycleRules(bucket),
        workspacePrefix,
        retention
      );
      await store.putLifecycleRules(bucket, rules);
      log?.info(
        { bucket, rule: retentionRuleId(workspacePrefix), retention },
        'retention rule set'
      );
      response.json(Private.answer(rules, workspacePrefix));
    },
    clear: async (_request, response) => {
      const workspacePrefix = prefix();
      const before = await store.getLifecycleRules(bucket);
      const rules = withRetention(before, workspacePrefix, null);
      if (rules.length !== before.length) {
        await store.putLifecycleRules(bucket, rules);
        log?.info({ bucket, rule: retentionRuleId(workspacePrefix) }, 'retention rule removed');
      }
      response.json(Private.answer(rules, workspacePrefix));
    }
  };
}

namespace Private {
  /**
   * The answer of every retention call: the rule of `workspacePrefix` in `rules`. Not parsed
   * with the schema: a rule edited by hand outside the API may hold values the API would refuse,
   * and is still reported as it is.
   */
  export function answer(rules: readonly ILifecycleRule[], workspacePrefix: string): Retention {
    const { retention, otherRules } = findRetention(rules, workspacePrefix);
    return {
      prefix: retentionFilterPrefix(workspacePrefix),
      rule: retention
        ? { keep_newest: retention.keepNewest, noncurrent_days: retention.noncurrentDays }
        : null,
      rule_id: retentionRuleId(workspacePrefix),
      other_rules: otherRules
    };
  }
}
