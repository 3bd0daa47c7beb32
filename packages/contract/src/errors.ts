import { z } from 'zod';

/** Every error the gateway answers with: Jupyter's `{"message", "reason"}`. */
export const ErrorBodySchema = z
  .object({
    message: z
      .string()
      .meta({ description: 'What went wrong and, where it helps, what to do; for people.' }),
    reason: z
      .string()
      .nullable()
      .meta({
        description:
          'A short, stable word for programs (`bad request`, `not a notebook`, `store ' +
          "unavailable`, …), or the object store's own error code (`NoSuchKey`, `AccessDenied`, …)."
      })
  })
  .meta({ description: 'Every error of the JSON API, as Jupyter Server writes errors.' });
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
