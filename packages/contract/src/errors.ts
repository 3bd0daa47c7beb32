import { z } from 'zod';

/** Every error the gateway answers with: Jupyter's `{"message", "reason"}`. */
export const ErrorBodySchema = z.object({
  message: z.string(),
  reason: z.string().nullable()
});
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
