/** The account's own answer (spec: GET /me), as /openapi.json states it. */
import { z } from 'zod';
import { timestamp } from './quote.js';

/** GET /me (spec: SyncUserView). */
export const SyncUserView = z
  .strictObject({
    user: z.strictObject({
      id: z.string(),
      name: z.string().nullable(),
      email: z.string().nullable(),
      email_verified: z.boolean().nullable(),
      image: z.string().nullable(),
      steam_id: z.string().nullable(),
      created_at: timestamp.nullable(),
      base_currency: z.string().nullable(),
    }),
    subscription: z.strictObject({ category: z.string(), plan_id: z.string(), expires_at: timestamp }).nullable(),
    credit: z.strictObject({ total: z.int(), used: z.int(), remaining: z.int().min(0).meta({ description: '`total` minus `used`, never below 0.' }) }),
  })
  .meta({ id: 'SyncUserView' });
