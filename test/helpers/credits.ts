/**
 * An account's credit counters as the tests check them, read in one statement (one snapshot): what GET /me shows
 * as used (credits_used plus what credit leases recorded and have not settled yet, src/accounts/credit-leases.ts),
 * and the charges behind it (ledger rows plus the rows the leases' recorded spending becomes when settled).
 * Throws when a bookkeeping rule is broken at the moment read: credits_used = charges - refunds in the ledger, and a
 * lease's `spent` = the credits of its unsettled rows.
 */
export interface CreditCounters {
  /** credits_total. */
  total: number;
  /** Credits used: settled + recorded on leases (what GET /me shows). */
  used: number;
  /** Credits of the charge rows: in the ledger + unsettled on leases. */
  charged: number;
  /** Requests those charge rows cover. */
  requests: number;
  /** Sum of the ledger's non-charge rows (grants, syncs, refunds). */
  granted: number;
  /** Of `used`, what is settled (credits_used). */
  settled: number;
}

const SQL = `
SELECT a.credits_total::text AS total, a.credits_used::text AS settled,
       COALESCE((SELECT sum(amount) FROM credit_ledger WHERE account_id = a.id AND kind = 'charge'), 0)::text AS charged,
       COALESCE((SELECT sum(amount) FROM credit_ledger WHERE account_id = a.id AND kind = 'refund'), 0)::text AS refunded,
       COALESCE((SELECT sum(amount) FROM credit_ledger WHERE account_id = a.id AND kind <> 'charge'), 0)::text AS granted,
       COALESCE((SELECT sum(requests) FROM credit_ledger WHERE account_id = a.id AND kind = 'charge'), 0)::text AS requests,
       COALESCE((SELECT sum(spent) FROM credit_lease WHERE account_id = a.id), 0)::text AS lease_spent,
       COALESCE((SELECT sum((e->>'cost')::bigint) FROM credit_lease l, jsonb_array_elements(l.unsettled::jsonb) e WHERE l.account_id = a.id), 0)::text AS lease_charged,
       COALESCE((SELECT sum((e->>'n')::int) FROM credit_lease l, jsonb_array_elements(l.unsettled::jsonb) e WHERE l.account_id = a.id), 0)::text AS lease_requests
  FROM account a WHERE a.id = $1`;

type Row = Record<'total' | 'settled' | 'charged' | 'refunded' | 'granted' | 'requests' | 'lease_spent' | 'lease_charged' | 'lease_requests', string>;

/** Reads `accountId`'s counters with `query` (a TestDatabase's, or a pg client's rows). Throws as the interface doc says. */
export async function creditCounters(query: (sql: string, params: unknown[]) => Promise<Row[]>, accountId: string): Promise<CreditCounters> {
  const [r] = await query(SQL, [accountId]);
  if (!r) throw new Error(`no account ${accountId}`);
  const n = (k: keyof Row) => Number(r[k]);
  if (n('settled') !== n('charged') - n('refunded')) throw new Error(`credits_used ${r.settled} != ledger charges ${r.charged} - refunds ${r.refunded}`);
  if (n('lease_spent') !== n('lease_charged')) throw new Error(`lease spent ${r.lease_spent} != its unsettled rows ${r.lease_charged}`);
  return {
    total: n('total'),
    used: n('settled') + n('lease_spent'),
    charged: n('charged') + n('lease_charged'),
    requests: n('requests') + n('lease_requests'),
    granted: n('granted'),
    settled: n('settled'),
  };
}
