/** GET /me (spec): the caller's account. */
import { defineOperation } from './operation.js';
import * as ex from './examples.js';
import { free } from './docs.js';
import { SyncUserView } from '../shapes/account.js';

export default defineOperation({
  id: 'getMe',
  kind: 'query',
  path: ['me'],
  selection: `user { id name email email_verified: emailVerified image steam_id: steamId created_at: createdAt base_currency: baseCurrency }
    subscription { category plan_id: planId expires_at: expiresAt }
    credit { total used remaining }`,
  params: [],
  rest: { envelope: true },
  openapi: {
    payload: SyncUserView,
    statuses: [404],
    docs: {
      tag: 'Account',
      summary: 'Your account',
      description:
        'The account of the API key: profile, the subscription active now (null when none) and the credit counters billing is applied against. Changes made in the dashboard show within about a minute. 404: the account has not reached the API yet; retry shortly. Free.',
      response: free(ex.ME),
    },
  },
});
