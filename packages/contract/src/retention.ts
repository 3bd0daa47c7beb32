import { z } from 'zod';
import { count } from './fields';

/** The most noncurrent versions of each notebook a retention rule may keep (S3's limit). */
export const MAX_RETENTION_KEEP_NEWEST = 100;

/** The longest a retention rule may let versions stay noncurrent, in days (100 years). */
export const MAX_RETENTION_NONCURRENT_DAYS = 36500;

/** What a retention rule keeps, as it is set and read. */
export const RetentionRuleSchema = z
  .object({
    keep_newest: z
      .number()
      .int()
      .min(0)
      .max(MAX_RETENTION_KEEP_NEWEST)
      .meta({
        description:
          `Noncurrent versions of each notebook kept whatever their age, the newest ones (0 to ` +
          `${MAX_RETENTION_KEEP_NEWEST}): S3's \`NewerNoncurrentVersions\`.`
      }),
    noncurrent_days: z
      .number()
      .int()
      .min(1)
      .max(MAX_RETENTION_NONCURRENT_DAYS)
      .meta({
        description:
          `Days a version stays after a newer one replaced it before it may expire (1 to ` +
          `${MAX_RETENTION_NONCURRENT_DAYS}): S3's \`NoncurrentDays\`.`
      })
  })
  .strict()
  .meta({
    description:
      'Keep the newest `keep_newest` noncurrent versions of each notebook, and expire older ' +
      'noncurrent ones `noncurrent_days` after they stopped being current. The current version ' +
      'and delete markers are never expired, nor named versions (kept outside the workspace ' +
      'prefix).'
  });

/** `GET`, `PUT` and `DELETE {base}api/store/retention` → 200: the retention rule in force. */
export const RetentionSchema = z
  .object({
    prefix: z.string().meta({
      description:
        'The key prefix the rule covers: the workspace prefix and a slash (`workspace/`); ' +
        'empty when the workspace prefix is empty, where no rule can be set.'
    }),
    rule: RetentionRuleSchema.nullable().meta({
      description: 'The rule in force, or null when there is none.'
    }),
    rule_id: z.string().meta({
      description:
        'The ID of the bucket lifecycle rule that holds it (`jupyter-store-retention:<prefix>`).'
    }),
    other_rules: count(
      "Rules of the bucket's lifecycle configuration that are not this one (other prefixes, " +
        'other tools); they are kept as they are when this one changes.'
    )
  })
  .meta({ description: "The workspace's retention rule and the bucket's other lifecycle rules." });

export type RetentionRule = z.infer<typeof RetentionRuleSchema>;
export type Retention = z.infer<typeof RetentionSchema>;
